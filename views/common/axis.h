// Axis steps and byte labels shared by the charts (timeline, memory heatmap, comparison). Qt-free.
#pragma once

#include <string>

namespace ms::views {

// A "nice" step (1, 2 or 5 x 10^k) near range / n; 1 for an empty range.
double nice_step(double range, int n);
// A byte axis step: 1, 2 or 5 (x 10^k) of the unit (B, KiB, MiB, GiB) the range is best read in.
double byte_step(double range, int n);
// "812 B", "3.25 KiB", "40.4 MiB".
std::string format_bytes(double bytes);

}  // namespace ms::views
