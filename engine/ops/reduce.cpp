// Reduction ops: registration entry point, the ten Reduce* schemas and the axes helpers that the
// CPU kernels share.
#include <algorithm>

#include "engine/ops/families.h"
#include "engine/ops/reduce_internal.h"

namespace ms::ops {

void register_reduce_ops(Registry& r) {
  reduce::register_reduce_family(r);
  reduce::register_index_ops(r);
  reduce::register_einsum_ops(r);
}

namespace reduce {

Cost reduction_cost(const CostContext& c) {
  // A reduction touches every input element once; what dominates is reading the input.
  Cost cost;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const int64_t n = static_numel(c.inputs[i]);
    if (n <= 0) continue;
    cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(c.inputs[i].dtype));
    if (i == 0) cost.flops += static_cast<double>(n);
  }
  for (const auto& t : c.outputs) {
    const int64_t n = static_numel(t);
    if (n > 0) cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
  }
  return cost;
}

bool axes_from_input(std::string_view op_type, int64_t opset) {
  return op_type == "ReduceSum" ? opset >= 13 : opset >= 18;
}

std::optional<std::vector<int64_t>> reduce_axes(const ir::Node& node, const Tensor* axes_value) {
  // The input wins when present: a model built for a newer opset keeps working under an older one.
  if (node.has_input(1)) {
    if (!axes_value || !axes_value->defined() || !axes_value->device().is_cpu()) return std::nullopt;
    return axes_value->to_int_vector();
  }
  return node.attr_ints("axes");
}

bool reduce_mask(const std::vector<int64_t>& axes, int64_t rank, bool noop_with_empty_axes, std::vector<bool>& mask,
                 std::string& err) {
  mask.assign(static_cast<size_t>(rank), axes.empty() && !noop_with_empty_axes);
  for (int64_t a : axes) {
    const int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) {
      err = "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank);
      return false;
    }
    if (mask[static_cast<size_t>(n)]) {
      err = "axis " + std::to_string(a) + " is listed twice (rank " + std::to_string(rank) + ")";
      return false;
    }
    mask[static_cast<size_t>(n)] = true;
  }
  return true;
}

std::vector<int64_t> reduced_dims(const std::vector<int64_t>& in, const std::vector<bool>& mask, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!mask[i])
      out.push_back(in[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

namespace {

Status check_axes_input(const InferContext& ctx) {
  if (!ctx.has_input(1)) return Status::ok();
  const DType t = ctx.in(1).dtype;
  if (!is_integer(t)) return ctx.fail("axes (input 1) must be an integer tensor, got " + std::string(dtype_name(t)));
  const auto* d = ctx.dims(1);
  if (d && d->size() > 1) return ctx.fail("axes (input 1) must be 1-D, got shape " + shape_to_string(*d));
  return Status::ok();
}

Status infer_reduce(InferContext& ctx) {
  const ir::Node& n = ctx.node;
  const DType dt = ctx.in(0).dtype;
  // ReduceMax/ReduceMin also take bool (opset 20): any / all.
  const bool bool_ok = n.op_type == "ReduceMax" || n.op_type == "ReduceMin";
  if (!is_numeric(dt) && !(bool_ok && dt == DType::Bool))
    return ctx.fail(n.op_type + " does not support dtype " + std::string(dtype_name(dt)));
  MS_RETURN_IF_ERROR(check_axes_input(ctx));
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  const auto* dims = ctx.dims(0);
  if (!dims) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  const auto axes = reduce_axes(n, ctx.has_input(1) ? ctx.value(1) : nullptr);
  if (!axes) {
    // Which dims go is not known yet; with keepdims the rank still is.
    if (keepdims)
      ctx.set_output(0, dt, std::vector<int64_t>(static_cast<size_t>(rank), -1));
    else
      ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  std::vector<bool> mask;
  std::string err;
  if (!reduce_mask(*axes, rank, noop, mask, err))
    return ctx.fail(err + " (input shape " + shape_to_string(*dims) + ")");
  ctx.set_output(0, dt, reduced_dims(*dims, mask, keepdims));
  // Symbolic names of kept dims survive (a batch dim "N" stays "N").
  const auto& params = ctx.in(0).dim_params;
  if (params.size() == dims->size()) {
    size_t o = 0;
    for (size_t i = 0; i < mask.size(); ++i) {
      if (!mask[i]) ctx.outputs[0].dim_params[o] = params[i];
      if (!mask[i] || keepdims) ++o;
    }
  }
  return Status::ok();
}

}  // namespace

void register_reduce_family(Registry& r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    OpSchema s;
    s.op_type = op;
    s.since_version = 1;
    s.min_inputs = 1;
    s.max_inputs = 2;  // axes became an input (ReduceSum at 13, the others at 18)
    s.category = OpCategory::Reduction;
    s.infer = infer_reduce;
    s.cost = reduction_cost;
    r.add(std::move(s));
  }
}

}  // namespace reduce
}  // namespace ms::ops
