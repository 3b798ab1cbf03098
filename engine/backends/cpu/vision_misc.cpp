// CPU kernels: NonMaxSuppression, Col2Im, CenterCropPad, MaxUnpool (ONNX reference semantics) and
// ImageDecoder (the codecs of image_decode.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "engine/backends/cpu/image_decode.h"
#include "engine/backends/cpu/tensor_internal.h"
#include "engine/backends/cpu/vision_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::cpu::vision {
namespace {

using std::to_string;

// --- NonMaxSuppression -------------------------------------------------------------------------------

// A box as [x1, x2] x [y1, y2] (corners sorted, or from center and size).
template <class C> struct NmsBox { C x1, y1, x2, y2; };

template <class C> NmsBox<C> nms_box(const C* b, bool center) {
  if (center) {
    const C hw = b[2] / C(2), hh = b[3] / C(2);
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// True when the boxes overlap with an IoU above the threshold.
template <class C> bool nms_suppress(const NmsBox<C>& a, const NmsBox<C>& b, C iou_threshold) {
  const C ix1 = std::max(a.x1, b.x1), ix2 = std::min(a.x2, b.x2);
  if (!(ix2 > ix1)) return false;
  const C iy1 = std::max(a.y1, b.y1), iy2 = std::min(a.y2, b.y2);
  if (!(iy2 > iy1)) return false;
  const C inter = (ix2 - ix1) * (iy2 - iy1);
  const C area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const C uni = area_a + area_b - inter;
  if (!(inter > 0) || !(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
  return inter / uni > iou_threshold;
}

struct NmsParams {
  int64_t max_out = 0;
  double iou = 0, score = 0;
  bool has_score = false, center = false;
};

// Selected box indices of one (batch, class): by descending score (lower index first on ties).
template <class C>
void nms_class(const NmsParams& p, const std::vector<NmsBox<C>>& boxes, const C* scores, std::vector<int64_t>& out) {
  std::vector<std::pair<C, int64_t>> cand;
  for (size_t i = 0; i < boxes.size(); ++i)
    if (!std::isnan(static_cast<double>(scores[i])) && (!p.has_score || scores[i] > static_cast<C>(p.score)))
      cand.emplace_back(scores[i], static_cast<int64_t>(i));
  std::stable_sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  out.clear();
  for (const auto& [s, i] : cand) {
    if (static_cast<int64_t>(out.size()) >= p.max_out) break;
    const NmsBox<C>& box = boxes[static_cast<size_t>(i)];
    bool keep = true;
    for (int64_t j : out)
      if (nms_suppress(box, boxes[static_cast<size_t>(j)], static_cast<C>(p.iou))) {
        keep = false;
        break;
      }
    if (keep) out.push_back(i);
  }
}

// Rows (batch, class, box) of every selection.
template <class C>
std::vector<int64_t> nms_run(const NmsParams& p, const std::vector<double>& bv, const std::vector<double>& sv,
                             int64_t batches, int64_t classes, int64_t n) {
  std::vector<int64_t> rows, picked;
  std::vector<NmsBox<C>> boxes(static_cast<size_t>(n));
  std::vector<C> scores(static_cast<size_t>(n));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < n; ++i) {
      C raw[4];
      for (int k = 0; k < 4; ++k) raw[k] = static_cast<C>(bv[static_cast<size_t>((b * n + i) * 4 + k)]);
      boxes[static_cast<size_t>(i)] = nms_box(raw, p.center);
    }
    for (int64_t c = 0; c < classes; ++c) {
      for (int64_t i = 0; i < n; ++i)
        scores[static_cast<size_t>(i)] = static_cast<C>(sv[static_cast<size_t>((b * classes + c) * n + i)]);
      nms_class(p, boxes, scores.data(), picked);
      for (int64_t i : picked) rows.insert(rows.end(), {b, c, i});
    }
  }
  return rows;
}

Status nms_kernel(runtime::KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
      scores.dim(2) != boxes.dim(1))
    return ctx.fail("boxes " + shape_to_string(boxes.shape()) + " and scores " + shape_to_string(scores.shape()) +
                    " must be [B, n, 4] and [B, C, n]");
  if (!is_float(boxes.dtype()) || !is_float(scores.dtype()))
    return ctx.unsupported_case("NonMaxSuppression needs float boxes and scores");
  NmsParams p;
  auto given = [&](size_t i) { return ctx.has_input(i) && ctx.input(i).numel() > 0; };
  if (given(2)) p.max_out = std::max<int64_t>(ctx.input(2).at_int(0), 0);
  if (given(3)) p.iou = ctx.input(3).at_double(0);
  if (given(4)) {
    p.has_score = true;
    p.score = ctx.input(4).at_double(0);
  }
  const int64_t cpb = ctx.node().attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return ctx.fail("attribute 'center_point_box' must be 0 or 1, got " + to_string(cpb));
  p.center = cpb == 1;
  const std::vector<double> bv = to_doubles(boxes), sv = to_doubles(scores);
  const int64_t nb = boxes.dim(0), nc = scores.dim(1), n = boxes.dim(1);
  const std::vector<int64_t> rows =
      boxes.dtype() == DType::F64 ? nms_run<double>(p, bv, sv, nb, nc, n) : nms_run<float>(p, bv, sv, nb, nc, n);
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::I64, {static_cast<int64_t>(rows.size() / 3), 3}));
  std::copy(rows.begin(), rows.end(), out->data<int64_t>());
  return Status::ok();
}

// --- Col2Im ------------------------------------------------------------------------------------------

struct Col2ImGeometry {
  std::vector<int64_t> image, block, dil, pads, strides, blocks;  // blocks: sliding positions per axis
  int64_t channels = 0, kernel = 1, length = 1;
};

Expected<Col2ImGeometry> col2im_geometry(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Col2ImGeometry g;
  g.image = ctx.input(1).to_int_vector();
  g.block = ctx.input(2).to_int_vector();
  const size_t r = g.image.size();
  if (x.rank() != 3 || r == 0 || g.block.size() != r)
    return ctx.fail("input " + shape_to_string(x.shape()) + " must be [N, C * prod(block), L] with image_shape " +
                    shape_to_string(g.image) + " and block_shape " + shape_to_string(g.block) + " of one length");
  g.dil = ctx.node().attr_ints("dilations", std::vector<int64_t>(r, 1));
  g.pads = ctx.node().attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  g.strides = ctx.node().attr_ints("strides", std::vector<int64_t>(r, 1));
  if (g.dil.size() != r || g.pads.size() != 2 * r || g.strides.size() != r)
    return ctx.fail("dilations/pads/strides must have " + to_string(r) + "/" + to_string(2 * r) + "/" + to_string(r) +
                    " values");
  for (size_t i = 0; i < r; ++i) {
    if (g.image[i] < 1 || g.block[i] < 1 || g.dil[i] < 1 || g.strides[i] < 1 || g.pads[i] < 0 || g.pads[i + r] < 0)
      return ctx.fail("image_shape, block_shape, dilations and strides must be >= 1 and pads >= 0");
    const int64_t span = g.image[i] + g.pads[i] + g.pads[i + r] - (g.dil[i] * (g.block[i] - 1) + 1);
    if (span < 0) return ctx.fail("block_shape " + shape_to_string(g.block) + " does not fit image_shape");
    g.blocks.push_back(span / g.strides[i] + 1);
    g.kernel *= g.block[i];
    g.length *= g.blocks.back();
  }
  if (x.dim(1) % g.kernel != 0 || x.dim(2) != g.length)
    return ctx.fail("input " + shape_to_string(x.shape()) + " needs dim 1 divisible by " + to_string(g.kernel) +
                    " and dim 2 = " + to_string(g.length) + " sliding blocks");
  g.channels = x.dim(1) / g.kernel;
  return g;
}

// Flat image offset of kernel position k and block position b, or -1 when it falls in the padding.
int64_t col2im_target(const Col2ImGeometry& g, int64_t k, int64_t b) {
  int64_t flat = 0, stride = 1;
  for (size_t a = g.image.size(); a-- > 0;) {
    const int64_t ki = k % g.block[a], bi = b % g.blocks[a];
    k /= g.block[a];
    b /= g.blocks[a];
    const int64_t pos = bi * g.strides[a] - g.pads[a] + ki * g.dil[a];
    if (pos < 0 || pos >= g.image[a]) return -1;
    flat += pos * stride;
    stride *= g.image[a];
  }
  return flat;
}

Status col2im_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(Col2ImGeometry g, col2im_geometry(ctx));
  const Tensor& x = ctx.input(0);
  Shape out_shape{x.dim(0), g.channels};
  out_shape.insert(out_shape.end(), g.image.begin(), g.image.end());
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), out_shape));
  if (!is_numeric(x.dtype())) return ctx.unsupported_case("Col2Im needs a numeric input");
  const int64_t planes = x.dim(0) * g.channels, img = numel(g.image);
  std::vector<int64_t> target(static_cast<size_t>(g.kernel * g.length));
  for (int64_t k = 0; k < g.kernel; ++k)
    for (int64_t b = 0; b < g.length; ++b) target[static_cast<size_t>(k * g.length + b)] = col2im_target(g, k, b);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* src = x.data<T>();
      T* dst = out->data<T>();
      std::fill(dst, dst + out->numel(), T(0));
      const auto cols = static_cast<int64_t>(target.size());
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = 0; i < cols; ++i) {
          const int64_t t = target[static_cast<size_t>(i)];
          if (t >= 0) dst[p * img + t] += src[p * cols + i];
        }
    }
  });
  return Status::ok();
}

// --- CenterCropPad -----------------------------------------------------------------------------------

Status center_crop_pad_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> shape = ctx.input(1).to_int_vector();
  std::vector<int64_t> axes = ctx.node().attr_ints("axes", {});
  if (!ctx.node().has_attr("axes"))
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  std::string err;
  if (!ops::tensor::normalize_axes(axes, x.rank(), true, err).is_ok()) return ctx.fail("attribute 'axes': " + err);
  if (shape.size() != axes.size())
    return ctx.fail("shape " + shape_to_string(shape) + " must have one value per axis (" + to_string(axes.size()) +
                    ")");
  Shape out_shape = x.shape(), count = x.shape();
  Shape src_off(static_cast<size_t>(x.rank()), 0), dst_off(static_cast<size_t>(x.rank()), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(axes[i]);
    const int64_t dim = x.shape()[a], want = shape[i];
    if (want < 0) return ctx.fail("shape " + shape_to_string(shape) + " must be >= 0");
    out_shape[a] = want;
    count[a] = std::min(dim, want);
    (want < dim ? src_off : dst_off)[a] = std::abs(dim - want) / 2;
  }
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), out_shape));
  MS_ASSIGN_OR_RETURN(size_t es, tensor::element_size(ctx, x.dtype()));
  if (out->numel() == 0) return Status::ok();
  std::memset(out->raw(), 0, out->nbytes());
  if (numel(count) == 0) return Status::ok();
  const Shape is = contiguous_strides(x.shape()), os = contiguous_strides(out_shape);
  int64_t s = 0, d = 0;
  for (size_t a = 0; a < is.size(); ++a) {
    s += src_off[a] * is[a];
    d += dst_off[a] * os[a];
  }
  tensor::strided_copy(static_cast<char*>(out->raw()) + static_cast<size_t>(d) * es,
                       static_cast<const char*>(x.raw()) + static_cast<size_t>(s) * es, count, os, is, es);
  return Status::ok();
}

// --- MaxUnpool ---------------------------------------------------------------------------------------

// The unpooled shape from kernel_shape / strides / pads.
Expected<Shape> unpooled_shape(runtime::KernelContext& ctx, const Tensor& x) {
  const auto r = static_cast<size_t>(x.rank() - 2);
  if (x.rank() < 3) return ctx.fail("X must have rank >= 3, got " + shape_to_string(x.shape()));
  if (!ctx.node().has_attr("kernel_shape")) return ctx.fail("attribute 'kernel_shape' is required");
  const auto k = ctx.node().attr_ints("kernel_shape", {});
  const auto s = ctx.node().attr_ints("strides", std::vector<int64_t>(r, 1));
  const auto p = ctx.node().attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || s.size() != r || p.size() != 2 * r)
    return ctx.fail("kernel_shape/strides/pads must have " + to_string(r) + "/" + to_string(r) + "/" +
                    to_string(2 * r) + " values");
  Shape out = x.shape();
  for (size_t i = 0; i < r; ++i) {
    out[i + 2] = (x.shape()[i + 2] - 1) * s[i] - p[i] - p[i + r] + k[i];
    if (out[i + 2] < 0 || k[i] < 1 || s[i] < 1) return ctx.fail("kernel_shape/strides/pads give a negative output");
  }
  return out;
}

Status max_unpool_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  MS_ASSIGN_OR_RETURN(Shape inferred, unpooled_shape(ctx, x));
  if (ind.shape() != x.shape() || (ind.dtype() != DType::I64 && ind.dtype() != DType::I32))
    return ctx.fail("I " + shape_to_string(ind.shape()) + " must be i64 (or i32) indices shaped like X " +
                    shape_to_string(x.shape()));
  Shape out_shape = inferred;
  if (ctx.has_input(2)) {
    out_shape = ctx.input(2).to_int_vector();
    bool ok = out_shape.size() == inferred.size();
    for (size_t i = 0; ok && i < out_shape.size(); ++i)
      ok = out_shape[i] >= inferred[i] && (i >= 2 || out_shape[i] == inferred[i]);
    if (!ok)
      return ctx.fail("output_shape " + shape_to_string(out_shape) + " must keep N, C and be at least the unpooled " +
                      shape_to_string(inferred));
  }
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), out_shape));
  MS_ASSIGN_OR_RETURN(size_t es, tensor::element_size(ctx, x.dtype()));
  std::memset(out->raw(), 0, out->nbytes());
  const int64_t total = numel(inferred);
  const Shape os = contiguous_strides(out_shape);
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out->raw());
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t idx = tensor::index_at(ind, e);
    if (idx < 0 || idx >= total)
      return ctx.fail("I[" + to_string(e) + "] = " + to_string(idx) + " is out of range [0, " + to_string(total) + ")");
    int64_t flat = 0;
    for (size_t a = inferred.size(); a-- > 0;) {
      flat += (idx % inferred[a]) * os[a];
      idx /= inferred[a];
    }
    std::memcpy(dst + static_cast<size_t>(flat) * es, src + static_cast<size_t>(e) * es, es);
  }
  return Status::ok();
}

// --- ImageDecoder ------------------------------------------------------------------------------------

Status image_decoder_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::U8 || x.rank() != 1)
    return ctx.fail("encoded_stream must be a 1-D uint8 tensor, got " + std::string(dtype_name(x.dtype())) +
                    shape_to_string(x.shape()));
  const std::string pf = ctx.node().attr_string("pixel_format", "RGB");
  image::PixelFormat format = image::PixelFormat::RGB;
  if (pf == "BGR")
    format = image::PixelFormat::BGR;
  else if (pf == "Grayscale")
    format = image::PixelFormat::Grayscale;
  else if (pf != "RGB")
    return ctx.fail("attribute 'pixel_format' = '" + pf + "' is not one of RGB, BGR, Grayscale");
  Expected<image::Image> img = image::decode({x.data<uint8_t>(), static_cast<size_t>(x.numel())}, format);
  if (!img)
    return img.status().code() == ErrorCode::Unsupported ? ctx.unsupported_case(img.status().message())
                                                         : ctx.fail(img.status().message());
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::U8, {img->height, img->width, img->channels}));
  std::memcpy(y->raw(), img->pixels.data(), img->pixels.size());
  ctx.set_impl("image:" + img->format);
  return Status::ok();
}

}  // namespace

void register_misc_kernels(runtime::KernelRegistry& r) {
  r.add("ImageDecoder", image_decoder_kernel);
  r.add("NonMaxSuppression", nms_kernel);
  r.add("Col2Im", col2im_kernel);
  r.add("CenterCropPad", center_crop_pad_kernel);
  r.add("MaxUnpool", max_unpool_kernel);
}

}  // namespace ms::cpu::vision
