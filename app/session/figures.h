// Figures the CLI and the app print the same way: latency summaries, byte sizes, tensor mismatches.
#pragma once

#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace ms::session {

struct LatencySummary {
  double min = 0, median = 0, p90 = 0, mean = 0;
};
LatencySummary summarize(std::vector<double> ms);

// Max |a-b| check with rtol/atol; returns a message naming the first mismatch, or "" when equal.
std::string compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol);

// "512 B", "1.5 KiB", "12.0 MiB", ...
std::string format_bytes(double bytes);

}  // namespace ms::session
