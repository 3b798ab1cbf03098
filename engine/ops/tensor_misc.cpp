// Smaller data ops: Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence.
#include "engine/ops/tensor_internal.h"

namespace ms::ops::tensor {
namespace {

Status infer_trilu(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const auto* in = ctx.dims(0);
  if (in && in->size() < 2) return ctx.fail("input must have rank >= 2, got " + shape_to_string(*in));
  if (ctx.has_input(1)) {
    if (!is_integer(ctx.in(1).dtype)) return ctx.fail("k must be i64");
    const auto* kd = ctx.dims(1);
    if (kd && !(kd->empty() || (kd->size() == 1 && (*kd)[0] == 1))) return ctx.fail("k must be a scalar");
  }
  if (in)
    ctx.set_output(0, dt, *in);
  else
    ctx.set_output_rank_unknown(0, dt);
  return Status::ok();
}

Status infer_eye_like(InferContext& ctx) {
  DType dt = ctx.in(0).dtype;
  if (ctx.node.has_attr("dtype")) {
    auto t = dtype_from_onnx(static_cast<int>(ctx.node.attr_int("dtype", 1)));
    if (!t || *t == DType::String) return ctx.fail("unsupported dtype attribute");
    dt = *t;
  }
  MS_RETURN_IF_ERROR(require_rank(ctx, 0, 2));
  const auto* in = ctx.dims(0);
  ctx.set_output(0, dt, in ? *in : std::vector<int64_t>{-1, -1});
  return Status::ok();
}

Status infer_depth_space(InferContext& ctx, bool to_space) {
  const DType dt = ctx.in(0).dtype;
  MS_RETURN_IF_ERROR(require_rank(ctx, 0, 4));
  const int64_t b = ctx.node.attr_int("blocksize", 0);
  if (b < 1) return ctx.fail("blocksize must be >= 1");
  const std::string mode = ctx.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.fail("mode must be DCR or CRD");
  const auto* in = ctx.dims(0);
  if (!in) {
    ctx.set_output(0, dt, {-1, -1, -1, -1});
    return Status::ok();
  }
  auto mul = [](int64_t d, int64_t k) { return d < 0 ? -1 : d * k; };
  const int64_t n = (*in)[0], c = (*in)[1], h = (*in)[2], w = (*in)[3];
  if (to_space) {
    if (c >= 0 && c % (b * b) != 0)
      return ctx.fail("channels of " + shape_to_string(*in) + " not divisible by blocksize^2");
    ctx.set_output(0, dt, {n, c < 0 ? -1 : c / (b * b), mul(h, b), mul(w, b)});
  } else {
    if ((h >= 0 && h % b != 0) || (w >= 0 && w % b != 0))
      return ctx.fail("spatial dims of " + shape_to_string(*in) + " not divisible by blocksize");
    ctx.set_output(0, dt, {n, mul(c, b * b), h < 0 ? -1 : h / b, w < 0 ? -1 : w / b});
  }
  return Status::ok();
}

Status infer_reverse_sequence(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  MS_RETURN_IF_ERROR(require_index_dtype(ctx, 1));
  MS_RETURN_IF_ERROR(require_rank(ctx, 1, 1));
  const int64_t ba = ctx.node.attr_int("batch_axis", 1), ta = ctx.node.attr_int("time_axis", 0);
  if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
    return ctx.fail("batch_axis and time_axis must be 0 and 1 (one each)");
  const auto* in = ctx.dims(0);
  if (in && in->size() < 2) return ctx.fail("input must have rank >= 2, got " + shape_to_string(*in));
  const auto* sl = ctx.dims(1);
  if (in && sl && (*in)[static_cast<size_t>(ba)] >= 0 && (*sl)[0] >= 0 && (*sl)[0] != (*in)[static_cast<size_t>(ba)])
    return ctx.fail("sequence_lens " + shape_to_string(*sl) + " must have one entry per batch of " +
                    shape_to_string(*in));
  if (in)
    ctx.set_output(0, dt, *in);
  else
    ctx.set_output_rank_unknown(0, dt);
  return Status::ok();
}

}  // namespace

void register_misc_ops(Registry& r) {
  r.add(make_schema("Trilu", 1, 2, 1, 1, OpCategory::Data, infer_trilu));
  r.add(make_schema("EyeLike", 1, 1, 1, 1, OpCategory::Data, infer_eye_like));
  r.add(make_schema("DepthToSpace", 1, 1, 1, 1, OpCategory::Data,
                    [](InferContext& c) { return infer_depth_space(c, true); }));
  r.add(make_schema("SpaceToDepth", 1, 1, 1, 1, OpCategory::Data,
                    [](InferContext& c) { return infer_depth_space(c, false); }));
  r.add(make_schema("ReverseSequence", 2, 2, 1, 1, OpCategory::Data, infer_reverse_sequence));
}

}  // namespace ms::ops::tensor
