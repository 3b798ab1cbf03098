// What every CLI subcommand shares: load a MODEL argument, make inputs, run it in a mode for some
// iterations and collect figures (latency, compile time, peak memory, kernels).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/compiler/options.h"
#include "engine/ir/graph.h"
#include "engine/runtime/executor.h"

namespace ms::cli {

struct RunConfig {
  runtime::ExecMode mode = runtime::ExecMode::PyNative;
  int iters = 10;
  int warmup = 2;
  compiler::CompileOptions compile;  // Graph mode: jit level, disabled passes
};

struct LatencySummary {
  double min = 0, median = 0, p90 = 0, mean = 0;
};
LatencySummary summarize(std::vector<double> ms);

struct RunResult {
  std::vector<std::string> output_names;
  std::vector<Tensor> outputs;
  std::vector<double> latencies_ms;
  LatencySummary latency;
  double compile_ms = 0;
  size_t peak_bytes = 0;
  int64_t kernels_per_iter = 0;
  size_t nodes = 0;
};

// MODEL: a path to an .onnx file.
Expected<ir::Graph> load_model_arg(const std::string& model);

// Inputs by name: from .npy files where given (NAME=FILE), else random with a fixed seed (floats in
// [-1, 1), integers in [0, 4), bools random). Unknown dims take `dim_values[param]` or 1.
Expected<runtime::TensorMap> make_inputs(const ir::Graph& g, const std::map<std::string, std::string>& files,
                                         const std::map<std::string, int64_t>& dim_values, uint64_t seed);

Expected<RunResult> run_model(const ir::Graph& g, const runtime::TensorMap& inputs, const RunConfig& config,
                              runtime::Backend& backend);

// Max |a-b| check with rtol/atol; returns a message naming the first mismatch, or "" when equal.
std::string compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol);

std::string format_bytes(double bytes);

}  // namespace ms::cli
