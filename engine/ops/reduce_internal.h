// Private to the reduction op family: registration split by feature, and the parameter math both the
// schemas and the CPU kernels need (reduced axes, Einsum equations), kept in one place so inference
// and execution can never disagree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ops/schema.h"

namespace ms::ops::reduce {

void register_reduce_family(Registry& r);  // reduce.cpp: ReduceSum, ReduceMean, ... (ten Reduce* ops)
void register_index_ops(Registry& r);      // reduce_index.cpp: ArgMax, ArgMin, TopK, CumSum
void register_einsum_ops(Registry& r);     // reduce_einsum.cpp: Einsum, Det

// Reduction cost: one operation per input element, bytes of inputs and outputs.
Cost reduction_cost(const CostContext& c);

// --- Reduce* axes -------------------------------------------------------------------------------

// Whether this Reduce* variant takes `axes` as input 1 at this opset (ReduceSum from 13, the rest
// from 18); before that it is an attribute.
bool axes_from_input(std::string_view op_type, int64_t opset);

// The `axes` list of a Reduce* node. From input 1 when the node has one (`axes_value` is its value,
// nullptr when unknown: then nullopt), else from the `axes` attribute (absent = empty).
std::optional<std::vector<int64_t>> reduce_axes(const ir::Node& node, const Tensor* axes_value);

// Which input dims are reduced. Empty axes reduce every dim, or none with noop_with_empty_axes.
// Negative axes count from the end. Returns false with `err` naming the axis and rank.
bool reduce_mask(const std::vector<int64_t>& axes, int64_t rank, bool noop_with_empty_axes, std::vector<bool>& mask,
                 std::string& err);

// Output dims: reduced dims become 1 (keepdims) or disappear.
std::vector<int64_t> reduced_dims(const std::vector<int64_t>& in, const std::vector<bool>& mask, bool keepdims);

// --- Einsum ---------------------------------------------------------------------------------------

// A parsed equation. Letters map to labels 0..51 ('a'..'z', 'A'..'Z'); kEllipsis marks "...".
struct EinsumEquation {
  static constexpr int kEllipsis = -1;
  std::vector<std::vector<int>> inputs;  // per operand, the subscript of each term position
  std::vector<int> output;               // explicit or implicit (numpy rules) output subscript
};
bool parse_einsum(std::string_view equation, size_t num_inputs, EinsumEquation& eq, std::string& err);

// An equation bound to operand shapes: every dim of every operand and of the output gets a label id
// (letters 0..51, the broadcast ellipsis dims 52..). Sizes are -1 where unknown (inference).
struct EinsumBinding {
  std::vector<int64_t> size;                     // per label id
  std::vector<std::vector<int>> operand_labels;  // per operand, per dim
  std::vector<int> output_labels;                // per output dim
};
// Shapes may hold -1 dims. Size-1 dims broadcast against the label's size.
bool bind_einsum(const EinsumEquation& eq, const std::vector<std::vector<int64_t>>& shapes, EinsumBinding& b,
                 std::string& err);

}  // namespace ms::ops::reduce
