// A MODEL argument and the inputs to run it on, as the CLI and the app take them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/ir/graph.h"
#include "engine/runtime/executor.h"

namespace ms::session {

// MODEL: a path to an .onnx file, or a zoo template "zoo:NAME?key=value&...".
Expected<ir::Graph> load_model_arg(const std::string& model);

// Inputs by name: from .npy files where given (NAME=FILE), else random with a fixed seed (floats in
// [-1, 1), integers in [0, 4), bools random; an integer or boolean input whose name holds "mask" is
// all ones). Unknown dims take `dim_values[param]` or 1. A file
// must match the model's declared input (check_input); every dim value must be positive.
// Error unless `given` matches the declared input `name`: its dtype and every static dim (a
// dynamic dim takes any size). The message names the input, the declared and the given type.
Status check_input(const ir::Graph& g, const std::string& name, const Tensor& given);

// "N=8" -> 8: a positive integer, the whole string parsed; the error names the flag.
Expected<int64_t> parse_dim_value(const std::string& param, const std::string& text);

Expected<runtime::TensorMap> make_inputs(const ir::Graph& g, const std::map<std::string, std::string>& files,
                                         const std::map<std::string, int64_t>& dim_values, uint64_t seed);

}  // namespace ms::session
