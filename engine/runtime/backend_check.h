// Backend check: every op case runs as a one-node graph on a reference backend (the CPU) and on the
// backend under test, and their outputs are compared with per-case tolerances. In perf mode each
// case is also timed (median of N runs) on both. `modescope-cli backend-check` and the CUDA tests
// use it; comparing the CPU with itself checks the harness.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/backend.h"

namespace ms::runtime {

struct OpCase {
  std::string name;  // "Conv/3x3_s2" - op type, then the case
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int64_t opset = 17;
  std::map<std::string, ir::Attribute> attrs;
  std::vector<Tensor> inputs;  // host tensors; an undefined one is an optional input left out
  std::vector<bool> constant;  // input i is an initializer (weights), else a graph input
  int num_outputs = 1;
  double rtol = 1e-4, atol = 1e-5;
};

struct OpCaseResult {
  std::string name;
  bool passed = false;
  std::string message;  // why it failed ("" when passed)
  double max_abs_error = 0;
  std::string impl;                        // the device's kernel implementation ("cuda:binary", "cpu-fallback:...")
  double reference_ms = 0, device_ms = 0;  // perf mode: medians
};

// The cases: each op family of the engine's common op set with representative shapes (broadcast,
// strides, groups, odd sizes). Deterministic for a seed.
std::vector<OpCase> backend_check_cases(uint64_t seed = 1);

// Runs `c` on both backends and compares. perf_iters > 0: also the median time of that many runs.
OpCaseResult run_op_case(Backend& reference, Backend& device, const OpCase& c, int perf_iters = 0);

}  // namespace ms::runtime
