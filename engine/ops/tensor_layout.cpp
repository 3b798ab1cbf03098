// Ops that move data between layouts without looking at values: Transpose, Concat, Split, Slice,
// Tile, Expand, Pad. Concat and Slice sit in shape computations (Shape -> Slice -> Concat ->
// Reshape), so with known inputs their output shapes are exact.
#include <algorithm>

#include "engine/ops/tensor_internal.h"

namespace ms::ops::tensor {
namespace {

Status infer_transpose(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const auto* in = ctx.dims(0);
  const bool has_perm = ctx.node.has_attr("perm");
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (!in) {
    if (has_perm)
      ctx.set_output(0, dt, std::vector<int64_t>(perm.size(), -1));
    else
      ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(in->size());
  if (!has_perm)
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return ctx.fail("perm " + shape_to_string(perm) + " does not match input " + shape_to_string(*in));
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + rank : perm[i];
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return ctx.fail("perm " + shape_to_string(perm) + " is not a permutation of " + std::to_string(rank) + " axes");
    seen[static_cast<size_t>(p)] = true;
    out[i] = (*in)[static_cast<size_t>(p)];
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_concat(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (!ctx.node.has_attr("axis")) return ctx.fail("attribute 'axis' is required");
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  const std::vector<int64_t>* ref = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input " + std::to_string(i) + " is missing");
    if (ctx.in(i).dtype != dt) return ctx.fail("all inputs must have the same dtype");
    if (!ref && ctx.dims(i)) ref = ctx.dims(i);
  }
  if (!ref) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(ref->size());
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 0 || axis >= rank)
    return ctx.fail("axis " + std::to_string(axis_attr) + " out of range for rank " + std::to_string(rank));
  std::vector<int64_t> out(ref->size(), -1);
  int64_t sum = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const auto* d = ctx.dims(i);
    if (!d) {
      sum = -1;
      continue;
    }
    if (static_cast<int64_t>(d->size()) != rank)
      return ctx.fail("inputs have different ranks: " + shape_to_string(*ref) + " and " + shape_to_string(*d));
    for (size_t k = 0; k < d->size(); ++k) {
      const int64_t v = (*d)[k];
      if (static_cast<int64_t>(k) == axis) {
        sum = (sum < 0 || v < 0) ? -1 : sum + v;
      } else if (v >= 0) {
        if (out[k] >= 0 && out[k] != v)
          return ctx.fail("inputs " + shape_to_string(*ref) + " and " + shape_to_string(*d) + " differ outside axis " +
                          std::to_string(axis));
        out[k] = v;
      }
    }
  }
  out[static_cast<size_t>(axis)] = sum;
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_split(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const size_t n = ctx.node.outputs.size();
  const auto* in = ctx.dims(0);
  if (!in) {
    for (size_t i = 0; i < n; ++i) ctx.set_output_rank_unknown(i, dt);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(in->size());
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 0 || axis >= rank)
    return ctx.fail("axis " + std::to_string(axis_attr) + " out of range for " + shape_to_string(*in));
  bool present = false;
  auto split = ints_from_input_or_attr(ctx, ctx.opset >= 13, 1, "split", present);
  if (ctx.opset >= 13 && present && !is_integer(ctx.in(1).dtype)) return ctx.fail("split input must be i64");
  const int64_t dim = (*in)[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes(n, -1);
  if (present && split) {
    if (split->size() != n)
      return ctx.fail("split has " + std::to_string(split->size()) + " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0 || __builtin_add_overflow(sum, s, &sum))
        return ctx.fail("split sizes must be >= 0 and add up to the dim, got " + shape_to_string(*split));
    }
    if (dim >= 0 && sum != dim)
      return ctx.fail("split " + shape_to_string(*split) + " does not add up to dim " + std::to_string(dim) + " of " +
                      shape_to_string(*in));
    sizes = *split;
  } else if (!present && dim >= 0) {
    const int64_t k = static_cast<int64_t>(n);
    if (ctx.node.has_attr("num_outputs") && ctx.node.attr_int("num_outputs", 0) != k)
      return ctx.fail("num_outputs does not match the number of outputs");
    if (dim % k != 0 && !ctx.node.has_attr("num_outputs"))
      return ctx.fail("dim " + std::to_string(dim) + " of " + shape_to_string(*in) + " cannot be split evenly into " +
                      std::to_string(n) + " parts");
    // num_outputs (opset 18) allows a smaller last chunk.
    const int64_t chunk = (dim + k - 1) / k;
    for (size_t i = 0; i < n; ++i) sizes[i] = std::clamp<int64_t>(dim - chunk * static_cast<int64_t>(i), 0, chunk);
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> out = *in;
    out[static_cast<size_t>(axis)] = sizes[i];
    ctx.set_output(i, dt, std::move(out));
  }
  return Status::ok();
}

Status infer_slice(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const auto* in = ctx.dims(0);
  if (!in) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  bool has_axes = false, has_steps = false;
  if (ctx.opset < 10) {
    if (!ctx.node.has_attr("starts") || !ctx.node.has_attr("ends")) return ctx.fail("starts and ends are required");
    starts = ctx.node.attr_ints("starts");
    ends = ctx.node.attr_ints("ends");
    has_axes = ctx.node.has_attr("axes");
    if (has_axes) axes = ctx.node.attr_ints("axes");
  } else {
    if (ctx.num_inputs() < 3) return ctx.fail("starts and ends inputs are required");
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      MS_RETURN_IF_ERROR(require_index_dtype(ctx, i));
      MS_RETURN_IF_ERROR(require_rank(ctx, i, 1));
    }
    starts = known_ints(ctx, 1);
    ends = known_ints(ctx, 2);
    has_axes = ctx.has_input(3);
    if (has_axes) axes = known_ints(ctx, 3);
    has_steps = ctx.has_input(4);
    if (has_steps) steps = known_ints(ctx, 4);
  }
  const bool known = starts && ends && (!has_axes || axes) && (!has_steps || steps);
  if (!known) {
    std::vector<int64_t> out = *in;
    if (has_axes && axes) {
      std::string err;
      if (!normalize_axes(*axes, static_cast<int64_t>(in->size()), true, err).is_ok()) return ctx.fail(err);
      for (int64_t a : *axes) out[static_cast<size_t>(a)] = -1;
    } else {
      std::fill(out.begin(), out.end(), -1);
    }
    ctx.set_output(0, dt, std::move(out));
    return Status::ok();
  }
  Shape probe = *in;
  for (auto& d : probe) d = std::max<int64_t>(d, 0);
  std::vector<SliceDim> dims;
  std::string err;
  if (!compute_slice(probe, *starts, *ends, has_axes ? *axes : std::vector<int64_t>{},
                     has_steps ? *steps : std::vector<int64_t>{}, dims, err))
    return ctx.fail(err + " (input " + shape_to_string(*in) + ")");
  std::vector<int64_t> out(in->size());
  for (size_t i = 0; i < in->size(); ++i) out[i] = (*in)[i] < 0 ? -1 : dims[i].count;
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_tile(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  MS_RETURN_IF_ERROR(require_index_dtype(ctx, 1));
  MS_RETURN_IF_ERROR(require_rank(ctx, 1, 1));
  const auto* in = ctx.dims(0);
  if (!in) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto reps = known_ints(ctx, 1);
  std::vector<int64_t> out(in->size(), -1);
  if (reps) {
    if (reps->size() != in->size())
      return ctx.fail("repeats " + shape_to_string(*reps) + " must have one entry per dim of " + shape_to_string(*in));
    for (size_t i = 0; i < in->size(); ++i) {
      if ((*reps)[i] < 0) return ctx.fail("repeats must be >= 0, got " + shape_to_string(*reps));
      if ((*in)[i] < 0) continue;
      if (__builtin_mul_overflow((*in)[i], (*reps)[i], &out[i]))
        return ctx.fail("repeats " + shape_to_string(*reps) + " make the output too large");
    }
    MS_RETURN_IF_ERROR(check_size(ctx, out));
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_expand(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (!is_integer(ctx.in(1).dtype)) return ctx.fail("shape input must be i64");
  MS_RETURN_IF_ERROR(require_rank(ctx, 1, 1));
  const auto* in = ctx.dims(0);
  const auto shape = known_ints(ctx, 1);
  if (!shape || !in) {
    const auto* sd = ctx.dims(1);
    if (in && sd && (*sd)[0] >= 0)
      ctx.set_output(0, dt, std::vector<int64_t>(std::max(in->size(), static_cast<size_t>((*sd)[0])), -1));
    else
      ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const size_t rank = std::max(in->size(), shape->size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - in->size() ? 1 : (*in)[i - (rank - in->size())];
    const int64_t b = i < rank - shape->size() ? 1 : (*shape)[i - (rank - shape->size())];
    if (b < 0) return ctx.fail("shape " + shape_to_string(*shape) + " has a negative dim");
    if (a == b || b == 1)
      out[i] = a;
    else if (a == 1 || a < 0)
      out[i] = b;
    else
      return ctx.fail("cannot expand " + shape_to_string(*in) + " to " + shape_to_string(*shape));
  }
  MS_RETURN_IF_ERROR(check_size(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_pad(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const std::string mode = ctx.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.fail("pad mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  if (mode == "wrap" && ctx.opset < 19) return ctx.fail("pad mode 'wrap' needs opset >= 19");
  std::optional<std::vector<int64_t>> pads, axes;
  bool has_axes = false;
  if (ctx.opset < 11) {
    if (!ctx.node.has_attr("pads") && !ctx.node.has_attr("paddings")) return ctx.fail("attribute 'pads' is required");
    pads = ctx.node.attr_ints(ctx.node.has_attr("pads") ? "pads" : "paddings");
  } else {
    if (ctx.num_inputs() < 2) return ctx.fail("pads input is required");
    MS_RETURN_IF_ERROR(require_index_dtype(ctx, 1));
    pads = known_ints(ctx, 1);
    if (ctx.has_input(2) && ctx.in(2).dtype != dt) return ctx.fail("constant_value must have the input's dtype");
    has_axes = ctx.has_input(3);
    if (has_axes) axes = known_ints(ctx, 3);
  }
  const auto* in = ctx.dims(0);
  if (!in) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  if (!pads || (has_axes && !axes)) {
    ctx.set_output(0, dt, std::vector<int64_t>(in->size(), -1));
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> full;
  std::string err;
  if (!expand_pads(*pads, has_axes ? &*axes : nullptr, rank, full, err)) return ctx.fail(err);
  std::vector<int64_t> out(in->size());
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = (*in)[static_cast<size_t>(i)];
    const int64_t b = full[static_cast<size_t>(i)], e = full[static_cast<size_t>(i + rank)];
    if (d < 0) {
      out[static_cast<size_t>(i)] = -1;
      continue;
    }
    if (__builtin_add_overflow(d, b, &out[static_cast<size_t>(i)]) ||
        __builtin_add_overflow(out[static_cast<size_t>(i)], e, &out[static_cast<size_t>(i)]))
      return ctx.fail("pads " + shape_to_string(*pads) + " are too large");
    if (out[static_cast<size_t>(i)] < 0)
      return ctx.fail("pads " + shape_to_string(*pads) + " remove more than input " + shape_to_string(*in));
    if (mode != "constant" && d == 0 && (b > 0 || e > 0))
      return ctx.fail("cannot " + mode + "-pad an empty axis of " + shape_to_string(*in));
  }
  MS_RETURN_IF_ERROR(check_size(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

}  // namespace

void register_layout_ops(Registry& r) {
  r.add(make_schema("Transpose", 1, 1, 1, 1, OpCategory::Data, infer_transpose));
  r.add(make_schema("Concat", 1, -1, 1, 1, OpCategory::Data, infer_concat));
  r.add(make_schema("Split", 1, 2, 1, -1, OpCategory::Data, infer_split));
  r.add(make_schema("Slice", 1, 5, 1, 1, OpCategory::Data, infer_slice));
  r.add(make_schema("Tile", 2, 2, 1, 1, OpCategory::Data, infer_tile));
  r.add(make_schema("Expand", 2, 2, 1, 1, OpCategory::Data, infer_expand));
  r.add(make_schema("Pad", 1, 4, 1, 1, OpCategory::Data, infer_pad));
}

}  // namespace ms::ops::tensor
