// Helpers shared by the nn op schemas (ops/nn*.cpp). Private to those files.
#pragma once

#include <string>
#include <vector>

#include "engine/ops/schema.h"

namespace ms::ops::nn {

void register_conv_ops(Registry& r);    // nn_conv.cpp: Conv, ConvTranspose
void register_pool_ops(Registry& r);    // nn_pool.cpp: MaxPool, AveragePool, LpPool, Global*Pool
void register_norm_ops(Registry& r);    // nn_norm.cpp: BatchNormalization, Instance/LayerNormalization, LRN, MVN
void register_matmul_ops(Registry& r);  // nn_matmul.cpp: Gemm, MatMul
// numpy matmul's output shape of inputs ia (A) and ib (B), rank >= 1, set as output 0 of type t
// (nn_matmul.cpp; MatMul, MatMulInteger, QLinearMatMul).
Status matmul_output(InferContext& ctx, size_t ia, size_t ib, DType t);
void register_softmax_ops(Registry& r);  // nn_softmax.cpp: Softmax, LogSoftmax, Hardmax, Dropout
void register_loss_ops(Registry& r);     // nn_loss.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss

// "[1,3,?,?]" for error messages.
std::string dims_string(const std::vector<int64_t>& d);
// Input i must be a float tensor (f32, f64, f16, bf16). `name` is the ONNX input name ("X", "W").
Status require_float(const InferContext& ctx, size_t i, const char* name);
// Input i must have the same dtype as input 0.
Status require_same_dtype(const InferContext& ctx, size_t i, const char* name);
// Input i must have a known rank within [lo, hi] (hi < 0: no upper bound); returns the dims.
Expected<const std::vector<int64_t>*> require_rank(const InferContext& ctx, size_t i, const char* name, int64_t lo,
                                                   int64_t hi);
// Two dims that must be equal when both known.
inline bool dims_conflict(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

// A schema of the default domain (keeps registrations short and every field set).
inline OpSchema make_schema(std::string op_type, int since, int min_in, int max_in, int min_out, int max_out,
                            OpCategory category, std::function<Status(InferContext&)> infer,
                            std::function<Cost(const CostContext&)> cost) {
  return OpSchema{std::move(op_type), "", since, min_in, max_in, min_out, max_out, category, std::move(infer),
                  std::move(cost)};
}

// Bytes of a static type (0 when unknown).
double type_bytes(const ir::ValueType& t);
// Bytes of all inputs + outputs, flops = flops_per_output * output 0 numel.
Cost io_cost(const CostContext& c, double flops_per_output);

}  // namespace ms::ops::nn
