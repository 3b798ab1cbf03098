// Shared by the schema files of ONNX Runtime's contrib ops (contrib.cpp, contrib_attention.cpp).
#pragma once

#include <functional>
#include <string>

#include "engine/ops/nn_internal.h"

namespace ms::ops {

inline constexpr const char* kMicrosoftDomain = "com.microsoft";

// A com.microsoft schema (version 1) whose cost is its inputs' and outputs' bytes and
// `flops_per_output` per output element.
inline OpSchema ms_schema(std::string op, int min_in, int max_in, int min_out, int max_out, OpCategory cat,
                          std::function<Status(InferContext&)> infer, double flops_per_output) {
  return OpSchema{std::move(op),
                  kMicrosoftDomain,
                  1,
                  min_in,
                  max_in,
                  min_out,
                  max_out,
                  cat,
                  std::move(infer),
                  [flops_per_output](const CostContext& c) { return nn::io_cost(c, flops_per_output); }};
}

}  // namespace ms::ops
