// Dtype sets, partial-shape broadcasting and cost shared by the elementwise schemas.
#include <algorithm>

#include "engine/ops/elementwise_internal.h"

namespace ms::ops::elementwise {

bool in_type_set(DType t, TypeSet set) {
  switch (set) {
    case TypeSet::Float: return is_float(t);
    case TypeSet::SignedNumeric: return is_float(t) || is_signed_int(t);
    case TypeSet::Numeric: return is_numeric(t);
    case TypeSet::Integer: return is_integer(t);
    case TypeSet::Unsigned: return is_unsigned_int(t);
    case TypeSet::Bool: return t == DType::Bool;
    case TypeSet::Any: return is_numeric(t) || t == DType::Bool;
    case TypeSet::Comparable: return is_numeric(t) || t == DType::Bool || t == DType::String;
  }
  return false;
}

const char* type_set_name(TypeSet set) {
  switch (set) {
    case TypeSet::Float: return "a float type (f16, bf16, f32, f64)";
    case TypeSet::SignedNumeric: return "a float or signed integer type";
    case TypeSet::Numeric: return "a numeric type";
    case TypeSet::Integer: return "an integer type";
    case TypeSet::Unsigned: return "an unsigned integer type";
    case TypeSet::Bool: return "bool";
    case TypeSet::Any: return "a numeric or bool type";
    case TypeSet::Comparable: return "a numeric, bool or string type";
  }
  return "?";
}

Status check_dtype(const InferContext& ctx, size_t i, TypeSet set) {
  const DType t = ctx.in(i).dtype;
  if (in_type_set(t, set)) return Status::ok();
  return ctx.fail("input " + std::to_string(i) + " must be " + type_set_name(set) + ", got " +
                  std::string(dtype_name(t)));
}

Status check_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.in(a).dtype == ctx.in(b).dtype) return Status::ok();
  return ctx.fail("inputs " + std::to_string(a) + " and " + std::to_string(b) + " must have the same dtype, got " +
                  ctx.in(a).to_string() + " and " + ctx.in(b).to_string());
}

namespace {

// Folds the shapes of inputs idx[0..count) into one broadcast shape.
Status broadcast_indices(const InferContext& ctx, const size_t* idx, size_t count, BroadcastResult& out) {
  out = BroadcastResult{};
  size_t rank = 0;
  for (size_t j = 0; j < count; ++j) {
    if (!ctx.has_input(idx[j])) continue;
    if (!ctx.in(idx[j]).has_rank()) return Status::ok();  // rank unknown
    rank = std::max(rank, ctx.in(idx[j]).dims->size());
  }
  out.rank_known = true;
  out.dims.assign(rank, 1);
  out.dim_params.assign(rank, "");
  for (size_t j = 0; j < count; ++j) {
    if (!ctx.has_input(idx[j])) continue;
    const ir::ValueType& t = ctx.in(idx[j]);
    const std::vector<int64_t>& d = *t.dims;
    const size_t off = rank - d.size();
    for (size_t k = 0; k < d.size(); ++k) {
      const int64_t in = d[k];
      const std::string& param = k < t.dim_params.size() ? t.dim_params[k] : std::string();
      int64_t& cur = out.dims[off + k];
      std::string& cur_param = out.dim_params[off + k];
      if (in == 1) continue;
      if (cur == 1) {
        cur = in;
        cur_param = param;
      } else if (in < 0) {
        // Unknown against unknown stays unknown; a symbolic name survives only when both agree.
        if (cur < 0 && cur_param != param) cur_param.clear();
      } else if (cur < 0) {
        // The unknown side must be 1 (or equal) for the model to be valid: the known dim wins.
        cur = in;
        cur_param = param;
      } else if (cur != in) {
        std::string shapes;
        for (size_t q = 0; q < count; ++q)
          if (ctx.has_input(idx[q])) shapes += (shapes.empty() ? "" : ", ") + ctx.in(idx[q]).to_string();
        return ctx.fail("cannot broadcast shapes " + shapes + " (dim " + std::to_string(cur) + " vs " +
                        std::to_string(in) + ")");
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status broadcast_inputs(const InferContext& ctx, std::initializer_list<size_t> inputs, BroadcastResult& out) {
  return broadcast_indices(ctx, inputs.begin(), inputs.size(), out);
}

Status broadcast_all_inputs(const InferContext& ctx, BroadcastResult& out) {
  std::vector<size_t> idx(ctx.num_inputs());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return broadcast_indices(ctx, idx.data(), idx.size(), out);
}

void set_broadcast_output(InferContext& ctx, size_t i, DType dtype, const BroadcastResult& b) {
  if (!b.rank_known) {
    ctx.set_output_rank_unknown(i, dtype);
    return;
  }
  ctx.set_output(i, dtype, b.dims);
  ctx.outputs[i].dim_params = b.dim_params;
}

void set_same_shape_output(InferContext& ctx, size_t i, size_t j, DType dtype) {
  const ir::ValueType& in = ctx.in(j);
  ctx.outputs[i].dtype = dtype;
  ctx.outputs[i].dims = in.dims;
  ctx.outputs[i].dim_params = in.dim_params;
  if (in.dims && ctx.outputs[i].dim_params.size() != in.dims->size())
    ctx.outputs[i].dim_params.assign(in.dims->size(), "");
}

std::function<Cost(const CostContext&)> cost_per_element(double flops_per_element) {
  return [flops_per_element](const CostContext& c) {
    Cost cost;
    for (const auto& t : c.inputs) {
      const int64_t n = static_numel(t);
      if (n > 0) cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
    }
    for (const auto& t : c.outputs) {
      const int64_t n = static_numel(t);
      if (n > 0) {
        cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
        cost.flops += static_cast<double>(n) * flops_per_element;
      }
    }
    return cost;
  };
}

OpSchema make_schema(const char* op_type, int min_inputs, int max_inputs, OpCategory category,
                     std::function<Status(InferContext&)> infer, double flops_per_element) {
  OpSchema s;
  s.op_type = op_type;
  s.min_inputs = min_inputs;
  s.max_inputs = max_inputs;
  s.min_outputs = 1;
  s.max_outputs = 1;
  s.category = category;
  s.infer = std::move(infer);
  s.cost = cost_per_element(flops_per_element);
  return s;
}

}  // namespace ms::ops::elementwise
