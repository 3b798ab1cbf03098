// Private helpers shared by the elementwise schema files (ops/elementwise*.cpp).
#pragma once

#include <functional>
#include <initializer_list>
#include <string>

#include "engine/ops/schema.h"

namespace ms::ops::elementwise {

// Per-file registration, called by register_elementwise_ops (ops/elementwise.cpp).
void register_unary_ops(Registry& r);       // elementwise_unary.cpp: math and logic unary ops
void register_activation_ops(Registry& r);  // elementwise_activation.cpp: Relu family, Clip
void register_binary_ops(Registry& r);      // elementwise_binary.cpp: arithmetic, compare, logic, PRelu
void register_variadic_ops(Registry& r);    // elementwise_variadic.cpp: Min Max Sum Mean Where
void register_cast_ops(Registry& r);        // elementwise_cast.cpp: Cast CastLike

// Which element types an op accepts.
enum class TypeSet : uint8_t {
  Float,          // f16 bf16 f32 f64
  SignedNumeric,  // floats + signed ints
  Numeric,        // floats + all ints
  Integer,        // all ints
  Unsigned,       // unsigned ints
  Bool,
  Any,         // numeric + bool
  Comparable,  // numeric + bool + string (Equal)
};
bool in_type_set(DType t, TypeSet set);
const char* type_set_name(TypeSet set);

// Fails unless input i's dtype is in `set`; `what` names the input ("input", "exponent").
Status check_dtype(const InferContext& ctx, size_t i, TypeSet set);
// Fails unless inputs a and b have the same dtype.
Status check_same_dtype(const InferContext& ctx, size_t a, size_t b);

// Numpy broadcast of the (possibly partial) shapes of the given inputs (missing optional inputs are
// skipped). Unknown rank anywhere -> rank unknown (rank_known = false). An unknown dim (-1) against
// 1 or -1 stays unknown; against a known dim != 1 it takes that dim. Symbolic dim names are kept
// where the chosen dim came from. Fails naming the shapes when two known dims disagree.
struct BroadcastResult {
  bool rank_known = false;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
};
Status broadcast_inputs(const InferContext& ctx, std::initializer_list<size_t> inputs, BroadcastResult& out);
Status broadcast_all_inputs(const InferContext& ctx, BroadcastResult& out);
// Writes a broadcast result as output i with `dtype`.
void set_broadcast_output(InferContext& ctx, size_t i, DType dtype, const BroadcastResult& b);
// Output i = input j's shape with `dtype` (keeps symbolic names).
void set_same_shape_output(InferContext& ctx, size_t i, size_t j, DType dtype);

// Inference of a unary op whose output has input 0's shape and type, from `set`.
inline std::function<Status(InferContext&)> same_type(TypeSet set) {
  return [set](InferContext& ctx) -> Status {
    MS_RETURN_IF_ERROR(check_dtype(ctx, 0, set));
    set_same_shape_output(ctx, 0, 0, ctx.in(0).dtype);
    return Status::ok();
  };
}

// Cost: flops = output numel x flops_per_element, bytes = inputs + outputs.
std::function<Cost(const CostContext&)> cost_per_element(double flops_per_element);

// Schema skeleton for an elementwise op.
OpSchema make_schema(const char* op_type, int min_inputs, int max_inputs, OpCategory category,
                     std::function<Status(InferContext&)> infer, double flops_per_element = 1.0);

}  // namespace ms::ops::elementwise
