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

// How far `got` (a lower-precision run's outputs) lies from `want` (the f32 reference), over every
// floating-point output of equal shape: max |got - want| / max |want| (worst output) and
// mean |got - want| / mean |want| (all elements). `compared` counts the outputs that entered;
// `argmax_equal` is false when some output's flat argmax differs (a classifier's top-1).
struct Deviation {
  double max_rel = 0, mean_rel = 0;
  size_t compared = 0;
  bool argmax_equal = true;
};
Deviation deviation(const std::vector<Tensor>& got, const std::vector<Tensor>& want);

// "512 B", "1.5 KiB", "12.0 MiB", ...
std::string format_bytes(double bytes);

}  // namespace ms::session
