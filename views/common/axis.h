// Axis steps and byte labels shared by the charts (timeline, memory heatmap, comparison). Qt-free.
#pragma once

#include <string>
#include <vector>

namespace ms::views {

// A "nice" step (1, 2 or 5 x 10^k) near range / n; 1 for an empty range.
double nice_step(double range, int n);
// Tick values 0, s, 2s, ... up to max (within a rounding error), s = nice_step(max, n): at most
// n + 1 ticks, each a round number; {0} for an empty range.
std::vector<double> axis_ticks(double max, int n);
// A byte axis step: 1, 2 or 5 (x 10^k) of the unit (B, KiB, MiB, GiB) the range is best read in.
double byte_step(double range, int n);
// "812 B", "3.25 KiB", "40.4 MiB".
std::string format_bytes(double bytes);

}  // namespace ms::views
