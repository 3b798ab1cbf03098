// Schemas: GridSample, AffineGrid, NonMaxSuppression, RoiAlign, Col2Im, CenterCropPad, MaxUnpool, DeformConv,
// ImageDecoder.
#include <algorithm>

#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::ops {
namespace {

using nn::dims_conflict;
using nn::dims_string;
using nn::require_float;
using nn::require_rank;
using std::to_string;

Cost vision_cost(const CostContext& c) { return nn::io_cost(c, 1); }

OpSchema schema(std::string op, int since, int min_in, int max_in, std::function<Status(InferContext&)> infer,
                OpCategory cat = OpCategory::Other) {
  return nn::make_schema(std::move(op), since, min_in, max_in, 1, 1, cat, std::move(infer), vision_cost);
}

// Dim i of input `in`'s static dims, or -1.
int64_t dim_of(const InferContext& ctx, size_t in, size_t i) {
  const auto* d = ctx.dims(in);
  return d && i < d->size() ? (*d)[i] : -1;
}

// Input i must be an integer tensor.
Status require_int(const InferContext& ctx, size_t i, const char* name) {
  if (!is_integer(ctx.in(i).dtype))
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be an integer tensor, got " +
                    std::string(dtype_name(ctx.in(i).dtype)));
  return Status::ok();
}

// Length of a rank-1 input (its static dim), -1 when unknown.
Expected<int64_t> list_length(const InferContext& ctx, size_t i, const char* name) {
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* d, require_rank(ctx, i, name, 1, 1));
  return d ? (*d)[0] : int64_t{-1};
}

// --- GridSample --------------------------------------------------------------------------------------

Status check_grid_sample_attrs(const InferContext& ctx) {
  const std::string mode = ctx.node.attr_string("mode", ctx.opset >= 20 ? "linear" : "bilinear");
  static const char* modes[] = {"linear", "bilinear", "nearest", "cubic", "bicubic"};
  if (std::none_of(std::begin(modes), std::end(modes), [&](const char* m) { return mode == m; }))
    return ctx.fail("attribute 'mode' = '" + mode + "' is not one of linear, nearest, cubic (bilinear, bicubic)");
  const std::string pad = ctx.node.attr_string("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return ctx.fail("attribute 'padding_mode' = '" + pad + "' is not one of zeros, border, reflection");
  return Status::ok();
}

Status infer_grid_sample(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_RETURN_IF_ERROR(require_float(ctx, 1, "grid"));
  MS_RETURN_IF_ERROR(check_grid_sample_attrs(ctx));
  const int64_t lo = ctx.opset >= 20 ? 3 : 4, hi = ctx.opset >= 20 ? -1 : 4;
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", lo, hi));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* gd, require_rank(ctx, 1, "grid", lo, hi));
  if (xd && gd) {
    if (xd->size() != gd->size())
      return ctx.fail("grid " + dims_string(*gd) + " must have the rank of X " + dims_string(*xd));
    if (dims_conflict(gd->back(), static_cast<int64_t>(xd->size()) - 2) || dims_conflict((*gd)[0], (*xd)[0]))
      return ctx.fail("grid " + dims_string(*gd) + " must be [N, D1, ..., Dr, r] for X " + dims_string(*xd));
  }
  if (!xd && !gd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const size_t rank = xd ? xd->size() : gd->size();
  std::vector<int64_t> out(rank, -1);
  out[0] = xd ? (*xd)[0] : (*gd)[0];
  out[1] = dim_of(ctx, 0, 1);
  for (size_t i = 2; i < rank; ++i) out[i] = dim_of(ctx, 1, i - 1);
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

// --- AffineGrid --------------------------------------------------------------------------------------

Status infer_affine_grid(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "theta"));
  MS_RETURN_IF_ERROR(require_int(ctx, 1, "size"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* td, require_rank(ctx, 0, "theta", 3, 3));
  MS_ASSIGN_OR_RETURN(int64_t len, list_length(ctx, 1, "size"));
  if (len >= 0 && len != 4 && len != 5) return ctx.fail("size must have 4 (N,C,H,W) or 5 (N,C,D,H,W) values");
  if (td && len >= 0 && (dims_conflict((*td)[1], len - 2) || dims_conflict((*td)[2], len - 1)))
    return ctx.fail("theta " + dims_string(*td) + " must be [N, " + to_string(len - 2) + ", " + to_string(len - 1) +
                    "] for a size of " + to_string(len) + " values");
  if (len < 0 && td && (*td)[1] >= 2) len = (*td)[1] + 2;
  if (len < 0) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  std::vector<int64_t> out(static_cast<size_t>(len), -1);  // [N, (D,) H, W, r]
  out.back() = len - 2;
  if (auto size = tensor::known_ints(ctx, 1)) {
    for (int64_t v : *size)
      if (v < 0) return ctx.fail("size " + dims_string(*size) + " must be >= 0");
    out[0] = (*size)[0];
    for (size_t i = 2; i < size->size(); ++i) out[i - 1] = (*size)[i];
  }
  if (td && (*td)[0] >= 0) {
    if (out[0] >= 0 && out[0] != (*td)[0])
      return ctx.fail("size N = " + to_string(out[0]) + " differs from theta's " + to_string((*td)[0]));
    out[0] = (*td)[0];
  }
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

// --- NonMaxSuppression -------------------------------------------------------------------------------

Status infer_nms(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "boxes"));
  MS_RETURN_IF_ERROR(require_float(ctx, 1, "scores"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, require_rank(ctx, 0, "boxes", 3, 3));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* sd, require_rank(ctx, 1, "scores", 3, 3));
  if (bd && dims_conflict((*bd)[2], 4)) return ctx.fail("boxes " + dims_string(*bd) + " must be [B, n, 4]");
  if (bd && sd && (dims_conflict((*bd)[0], (*sd)[0]) || dims_conflict((*bd)[1], (*sd)[2])))
    return ctx.fail("scores " + dims_string(*sd) + " must be [B, C, n] for boxes " + dims_string(*bd));
  if (ctx.has_input(2)) MS_RETURN_IF_ERROR(require_int(ctx, 2, "max_output_boxes_per_class"));
  if (ctx.has_input(3)) MS_RETURN_IF_ERROR(require_float(ctx, 3, "iou_threshold"));
  if (ctx.has_input(4)) MS_RETURN_IF_ERROR(require_float(ctx, 4, "score_threshold"));
  const int64_t cpb = ctx.node.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return ctx.fail("attribute 'center_point_box' must be 0 or 1, got " + to_string(cpb));
  ctx.set_output(0, DType::I64, {-1, 3});  // the selected count depends on the values
  return Status::ok();
}

// --- RoiAlign ----------------------------------------------------------------------------------------

Status check_roi_align_attrs(const InferContext& ctx) {
  const std::string mode = ctx.node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return ctx.fail("attribute 'mode' = '" + mode + "' is not avg or max");
  const std::string ct = ctx.node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ct != "half_pixel" && ct != "output_half_pixel")
    return ctx.fail("attribute 'coordinate_transformation_mode' = '" + ct + "' is not half_pixel or output_half_pixel");
  for (const char* a : {"output_height", "output_width"})
    if (ctx.node.attr_int(a, 1) < 1)
      return ctx.fail(std::string("attribute '") + a + "' must be >= 1, got " + to_string(ctx.node.attr_int(a, 1)));
  if (ctx.node.attr_int("sampling_ratio", 0) < 0) return ctx.fail("attribute 'sampling_ratio' must be >= 0");
  return Status::ok();
}

Status infer_roi_align(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 1, "rois"));
  MS_RETURN_IF_ERROR(require_int(ctx, 2, "batch_indices"));
  MS_RETURN_IF_ERROR(check_roi_align_attrs(ctx));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 4, 4));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* rd, require_rank(ctx, 1, "rois", 2, 2));
  MS_ASSIGN_OR_RETURN(int64_t nb, list_length(ctx, 2, "batch_indices"));
  if (rd && dims_conflict((*rd)[1], 4)) return ctx.fail("rois " + dims_string(*rd) + " must be [num_rois, 4]");
  if (rd && dims_conflict((*rd)[0], nb))
    return ctx.fail("rois " + dims_string(*rd) + " and batch_indices [" + to_string(nb) + "] differ in num_rois");
  const int64_t rois = rd && (*rd)[0] >= 0 ? (*rd)[0] : nb;
  ctx.set_output(
      0, ctx.in(0).dtype,
      {rois, xd ? (*xd)[1] : -1, ctx.node.attr_int("output_height", 1), ctx.node.attr_int("output_width", 1)});
  return Status::ok();
}

// --- Col2Im ------------------------------------------------------------------------------------------

Status infer_col2im(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_int(ctx, 1, "image_shape"));
  MS_RETURN_IF_ERROR(require_int(ctx, 2, "block_shape"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "input", 3, 3));
  MS_ASSIGN_OR_RETURN(int64_t r, list_length(ctx, 1, "image_shape"));
  MS_ASSIGN_OR_RETURN(int64_t rb, list_length(ctx, 2, "block_shape"));
  if (dims_conflict(r, rb)) return ctx.fail("image_shape and block_shape must have the same length");
  if (r < 0) r = rb;
  if (r == 0) return ctx.fail("image_shape must not be empty");
  if (r < 0) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  std::vector<int64_t> out(static_cast<size_t>(r + 2), -1);
  out[0] = xd ? (*xd)[0] : -1;
  const auto image = tensor::known_ints(ctx, 1);
  const auto block = tensor::known_ints(ctx, 2);
  if (image)
    for (size_t i = 0; i < image->size(); ++i) {
      if ((*image)[i] < 1) return ctx.fail("image_shape " + dims_string(*image) + " must be >= 1");
      out[i + 2] = (*image)[i];
    }
  if (block) {
    int64_t k = 1;
    for (int64_t b : *block) {
      if (b < 1) return ctx.fail("block_shape " + dims_string(*block) + " must be >= 1");
      k *= b;
    }
    if (xd && (*xd)[1] >= 0 && (*xd)[1] % k != 0)
      return ctx.fail("input dim 1 (" + to_string((*xd)[1]) + ") is not divisible by the block size " + to_string(k));
    if (xd && (*xd)[1] >= 0) out[1] = (*xd)[1] / k;
  }
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

// --- CenterCropPad -----------------------------------------------------------------------------------

Status infer_center_crop_pad(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_int(ctx, 1, "shape"));
  MS_ASSIGN_OR_RETURN(int64_t len, list_length(ctx, 1, "shape"));
  const auto* xd = ctx.dims(0);
  if (!xd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(xd->size());
  std::vector<int64_t> axes = ctx.node.attr_ints("axes", {});
  if (!ctx.node.has_attr("axes"))
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  std::string err;
  if (!tensor::normalize_axes(axes, rank, true, err).is_ok()) return ctx.fail("attribute 'axes': " + err);
  if (dims_conflict(len, static_cast<int64_t>(axes.size())))
    return ctx.fail("shape has " + to_string(len) + " values for " + to_string(axes.size()) + " axes");
  std::vector<int64_t> out = *xd;
  const auto shape = tensor::known_ints(ctx, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t v = shape ? (*shape)[i] : -1;
    if (shape && v < 0) return ctx.fail("shape " + dims_string(*shape) + " must be >= 0");
    out[static_cast<size_t>(axes[i])] = v;
  }
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

// --- ImageDecoder ------------------------------------------------------------------------------------

// The image's size is only known once it is decoded: [H, W, 3] (RGB, BGR) or [H, W, 1] (Grayscale).
Status infer_image_decoder(InferContext& ctx) {
  if (ctx.in(0).dtype != DType::U8)
    return ctx.fail("input 0 (encoded_stream) must be uint8, got " + std::string(dtype_name(ctx.in(0).dtype)));
  MS_RETURN_IF_ERROR(list_length(ctx, 0, "encoded_stream").status());
  const std::string pf = ctx.node.attr_string("pixel_format", "RGB");
  if (pf != "RGB" && pf != "BGR" && pf != "Grayscale")
    return ctx.fail("attribute 'pixel_format' = '" + pf + "' is not one of RGB, BGR, Grayscale");
  ctx.set_output(0, DType::U8, {-1, -1, pf == "Grayscale" ? 1 : 3});
  return Status::ok();
}

}  // namespace

// Shared with the vision_window schemas (vision_window.cpp).
void register_vision_window_ops(Registry& r);

void register_vision_ops(Registry& r) {
  r.add(schema("GridSample", 16, 2, 2, infer_grid_sample));
  r.add(schema("AffineGrid", 20, 2, 2, infer_affine_grid));
  r.add(schema("NonMaxSuppression", 10, 2, 5, infer_nms));
  r.add(schema("RoiAlign", 10, 3, 3, infer_roi_align, OpCategory::Pool));
  r.add(schema("Col2Im", 18, 3, 3, infer_col2im, OpCategory::Data));
  r.add(schema("CenterCropPad", 18, 2, 2, infer_center_crop_pad, OpCategory::Data));
  r.add(schema("ImageDecoder", 20, 1, 1, infer_image_decoder, OpCategory::Data));
  register_vision_window_ops(r);
}

}  // namespace ms::ops
