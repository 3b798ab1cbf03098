// Shape-changing ops that never reorder data (Reshape, Flatten, Squeeze, Unsqueeze) and the ops that
// produce shapes or shape-driven tensors (Shape, Size, ConstantOfShape, Range). Their outputs feed
// later shape computations, so inference is exact whenever the inputs allow it.
#include <algorithm>
#include <cmath>

#include "engine/ops/tensor_internal.h"

namespace ms::ops::tensor {
namespace {

int64_t product_or_unknown(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) {
    if (d[i] < 0) return -1;
    p *= d[i];
  }
  return p;
}

Status infer_reshape(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (!is_integer(ctx.in(1).dtype)) return ctx.fail("shape input must be i64");
  MS_RETURN_IF_ERROR(require_rank(ctx, 1, 1));
  const bool allowzero = ctx.opset >= 14 && ctx.node.attr_int("allowzero", 0) != 0;
  const auto shape = known_ints(ctx, 1);
  if (!shape) {
    const auto* sd = ctx.dims(1);
    if (sd && (*sd)[0] >= 0)
      ctx.set_output(0, dt, std::vector<int64_t>(static_cast<size_t>((*sd)[0]), -1));
    else
      ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto* in = ctx.dims(0);
  MS_RETURN_IF_ERROR(check_size(ctx, *shape));
  std::vector<int64_t> out(shape->size());
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape->size(); ++i) {
    const int64_t v = (*shape)[i];
    if (v == -1) {
      if (infer_at >= 0) return ctx.fail("shape " + shape_to_string(*shape) + " has more than one -1");
      infer_at = static_cast<int>(i);
      out[i] = -1;
    } else if (v < -1) {
      return ctx.fail("shape " + shape_to_string(*shape) + " has a negative dim");
    } else if (v == 0 && !allowzero) {
      if (in && i >= in->size())
        return ctx.fail("shape " + shape_to_string(*shape) + " copies dim " + std::to_string(i) + " but the input is " +
                        shape_to_string(*in));
      out[i] = in ? (*in)[i] : -1;
    } else {
      has_zero |= v == 0;
      out[i] = v;
    }
  }
  if (allowzero && has_zero && infer_at >= 0) return ctx.fail("allowzero shape has both 0 and -1");
  const int64_t total = in ? product_or_unknown(*in, 0, in->size()) : -1;
  int64_t known = 1;
  bool all_known = true;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) == infer_at) continue;
    if (out[i] < 0)
      all_known = false;
    else
      known *= out[i];
  }
  if (total >= 0 && all_known) {
    if (infer_at >= 0) {
      if (known == 0 || total % known != 0)
        return ctx.fail("cannot reshape " + shape_to_string(*in) + " to " + shape_to_string(*shape));
      out[static_cast<size_t>(infer_at)] = total / known;
    } else if (known != total) {
      return ctx.fail("cannot reshape " + shape_to_string(*in) + " (" + std::to_string(total) + " elements) to " +
                      shape_to_string(*shape) + " (" + std::to_string(known) + " elements)");
    }
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_flatten(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const auto* in = ctx.dims(0);
  int64_t axis = ctx.node.attr_int("axis", 1);
  if (!in) {
    ctx.set_output(0, dt, {-1, -1});
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(in->size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return ctx.fail("axis out of range for input " + shape_to_string(*in));
  ctx.set_output(0, dt,
                 {product_or_unknown(*in, 0, static_cast<size_t>(axis)),
                  product_or_unknown(*in, static_cast<size_t>(axis), in->size())});
  return Status::ok();
}

Status infer_squeeze(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  bool present = false;
  auto axes = ints_from_input_or_attr(ctx, ctx.opset >= 13, 1, "axes", present);
  if (ctx.opset >= 13 && present && !is_integer(ctx.in(1).dtype)) return ctx.fail("axes input must be i64");
  const auto* in = ctx.dims(0);
  if (!in || (present && !axes)) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(in->size());
  std::vector<bool> drop(in->size(), false);
  if (present) {
    std::string err;
    if (!normalize_axes(*axes, rank, true, err).is_ok()) return ctx.fail(err);
    for (int64_t a : *axes) {
      const int64_t d = (*in)[static_cast<size_t>(a)];
      if (d >= 0 && d != 1)
        return ctx.fail("cannot squeeze axis " + std::to_string(a) + " of " + shape_to_string(*in) + " (not 1)");
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t i = 0; i < in->size(); ++i) {
      if ((*in)[i] < 0) {  // might be 1: the output rank is not known
        ctx.set_output_rank_unknown(0, dt);
        return Status::ok();
      }
      drop[i] = (*in)[i] == 1;
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < in->size(); ++i)
    if (!drop[i]) out.push_back((*in)[i]);
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_unsqueeze(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  bool present = false;
  auto axes = ints_from_input_or_attr(ctx, ctx.opset >= 13, 1, "axes", present);
  if (!present) return ctx.fail("axes are required");
  if (ctx.opset >= 13 && !is_integer(ctx.in(1).dtype)) return ctx.fail("axes input must be i64");
  const auto* in = ctx.dims(0);
  if (!in) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  if (!axes) {
    const auto* ad = ctx.dims(1);
    if (ad && ad->size() == 1 && (*ad)[0] >= 0)
      ctx.set_output(0, dt, std::vector<int64_t>(in->size() + static_cast<size_t>((*ad)[0]), -1));
    else
      ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto out_rank = static_cast<int64_t>(in->size() + axes->size());
  std::string err;
  if (!normalize_axes(*axes, out_rank, true, err).is_ok()) return ctx.fail(err);
  std::vector<int64_t> out(static_cast<size_t>(out_rank), 1);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) inserted[static_cast<size_t>(a)] = true;
  size_t j = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!inserted[i]) out[i] = (*in)[j++];
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_shape(InferContext& ctx) {
  const auto* in = ctx.dims(0);
  if (!in) {
    ctx.set_output(0, DType::I64, {-1});
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(in->size());
  int64_t start = ctx.opset >= 15 ? ctx.node.attr_int("start", 0) : 0;
  int64_t end = ctx.opset >= 15 ? ctx.node.attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  ctx.set_output(0, DType::I64, {std::max<int64_t>(0, end - start)});
  return Status::ok();
}

Status infer_size(InferContext& ctx) {
  ctx.set_output(0, DType::I64, {});
  return Status::ok();
}

Status infer_constant_of_shape(InferContext& ctx) {
  DType dt = DType::F32;
  if (const Tensor* v = ctx.node.attr_tensor("value")) {
    if (v->numel() != 1) return ctx.fail("value must have exactly one element");
    dt = v->dtype();
  }
  if (!is_integer(ctx.in(0).dtype)) return ctx.fail("input must be i64");
  MS_RETURN_IF_ERROR(require_rank(ctx, 0, 1));
  if (auto shape = known_ints(ctx, 0)) {
    for (int64_t d : *shape)
      if (d < 0) return ctx.fail("shape " + shape_to_string(*shape) + " has a negative dim");
    MS_RETURN_IF_ERROR(check_size(ctx, *shape));
    ctx.set_output(0, dt, std::move(*shape));
    return Status::ok();
  }
  const auto* d = ctx.dims(0);
  if (d && (*d)[0] >= 0)
    ctx.set_output(0, dt, std::vector<int64_t>(static_cast<size_t>((*d)[0]), -1));
  else
    ctx.set_output_rank_unknown(0, dt);
  return Status::ok();
}

Status infer_range(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.in(i).dtype != dt) return ctx.fail("start, limit and delta must have the same dtype");
    const auto* d = ctx.dims(i);
    // Scalars, or 1-element tensors as the reference accepts (a rank-1 dim not known yet may be 1).
    if (d && !(d->empty() || (d->size() == 1 && ((*d)[0] == 1 || (*d)[0] < 0))))
      return ctx.fail("start, limit and delta must be scalars (or 1-element tensors), got " + shape_to_string(*d));
    if (const Tensor* v = host_value(ctx, i); v && v->numel() != 1)
      return ctx.fail("start, limit and delta must have one element, got " + shape_to_string(v->shape()));
  }
  if (!is_numeric(dt)) return ctx.fail("Range needs a numeric dtype");
  const Tensor* s = host_value(ctx, 0);
  const Tensor* l = host_value(ctx, 1);
  const Tensor* d = host_value(ctx, 2);
  if (!s || !l || !d) {
    ctx.set_output(0, dt, {-1});
    return Status::ok();
  }
  int64_t n = 0;
  if (is_float(dt)) {
    const double dv = d->at_double(0);
    if (dv == 0 || !std::isfinite(dv)) return ctx.fail("delta must be finite and non-zero");
    const double c = std::ceil((l->at_double(0) - s->at_double(0)) / dv);
    if (!(c < 1e14)) return ctx.fail("range is too large");
    n = c > 0 ? static_cast<int64_t>(c) : 0;
  } else {
    const int64_t dv = d->at_int(0);
    if (dv == 0) return ctx.fail("delta must be non-zero");
    const long double span = static_cast<long double>(l->at_int(0)) - static_cast<long double>(s->at_int(0));
    const long double c = std::ceil(span / static_cast<long double>(dv));
    if (!(c < 1e14L)) return ctx.fail("range is too large");
    n = c > 0 ? static_cast<int64_t>(c) : 0;
  }
  ctx.set_output(0, dt, {n});
  return Status::ok();
}

}  // namespace

void register_shape_ops(Registry& r) {
  r.add(make_schema("Reshape", 2, 2, 1, 1, OpCategory::Shape, infer_reshape));
  r.add(make_schema("Flatten", 1, 1, 1, 1, OpCategory::Shape, infer_flatten));
  r.add(make_schema("Squeeze", 1, 2, 1, 1, OpCategory::Shape, infer_squeeze));
  r.add(make_schema("Unsqueeze", 1, 2, 1, 1, OpCategory::Shape, infer_unsqueeze));
  // Shape and Size read only metadata: their cost is writing the (tiny) result.
  const auto metadata_cost = [](const CostContext& c) {
    Cost cost;
    const int64_t n = c.outputs.empty() ? -1 : static_numel(c.outputs[0]);
    if (n > 0) cost.bytes = static_cast<double>(n) * 8.0;
    return cost;
  };
  OpSchema shape = make_schema("Shape", 1, 1, 1, 1, OpCategory::Shape, infer_shape);
  shape.cost = metadata_cost;
  r.add(std::move(shape));
  OpSchema size = make_schema("Size", 1, 1, 1, 1, OpCategory::Shape, infer_size);
  size.cost = metadata_cost;
  r.add(std::move(size));
  r.add(make_schema("ConstantOfShape", 1, 1, 1, 1, OpCategory::Data, infer_constant_of_shape));
  r.add(make_schema("Range", 3, 3, 1, 1, OpCategory::Data, infer_range));
}

}  // namespace ms::ops::tensor
