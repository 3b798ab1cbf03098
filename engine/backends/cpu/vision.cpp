// CPU kernels: GridSample, AffineGrid, RoiAlign, DeformConv (here) and NonMaxSuppression, Col2Im,
// CenterCropPad, MaxUnpool (vision_misc.cpp). Sampling math follows the ONNX reference and runs in
// double precision; results are converted to the output dtype once.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/backends/cpu/vision_internal.h"

namespace ms::cpu::vision {
namespace {

using std::to_string;

// Keys' cubic convolution weight at distance d (alpha -0.75, as GridSample uses).
double cubic_weight(double d, double a = -0.75) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0.0;
}

// --- GridSample --------------------------------------------------------------------------------------

enum class GsMode : uint8_t { Nearest, Linear, Cubic };
enum class GsPad : uint8_t { Zeros, Border, Reflection };

struct GridSampler {
  GsMode mode = GsMode::Linear;
  GsPad pad = GsPad::Zeros;
  bool align = false;
};

// Up to four input indices along one axis (-1: a zero from the padding) and their weights.
struct AxisTaps {
  int64_t idx[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
  int n = 0;
};

// Reflects x by the nearer border until it lies within [lo, hi].
double gs_reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (!(range > 0)) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double n = std::floor(dx / range);
  const double r = dx - n * range;
  const bool even = std::fmod(n, 2.0) == 0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

int64_t gs_resolve(const GridSampler& g, int64_t i, int64_t d, double lo, double hi) {
  if (g.pad == GsPad::Zeros) return i >= 0 && i < d ? i : -1;
  if (g.pad == GsPad::Border) return std::clamp<int64_t>(i, 0, d - 1);
  return std::clamp<int64_t>(static_cast<int64_t>(gs_reflect(static_cast<double>(i), lo, hi)), 0, d - 1);
}

// Taps for the normalized coordinate `nrm` along an axis of `d` pixels.
void gs_axis_taps(const GridSampler& g, double nrm, int64_t d, AxisTaps& t) {
  const auto fd = static_cast<double>(d);
  const double lo = g.align ? 0.0 : -0.5, hi = g.align ? fd - 1 : fd - 0.5;
  double x = g.align ? (nrm + 1) / 2 * (fd - 1) : ((nrm + 1) * fd - 1) / 2;
  if (std::isnan(x)) x = lo - 2;                         // outside: a zero (or the border pixel)
  if (g.mode == GsMode::Nearest) x = std::nearbyint(x);  // half to even, as the reference
  if (x < lo || x > hi) {
    if (g.pad == GsPad::Border) x = std::clamp(x, 0.0, fd - 1);
    if (g.pad == GsPad::Reflection) x = gs_reflect(x, lo, hi);
  }
  x = std::clamp(x, -1e15, 1e15);  // keeps the integer conversions below defined
  const double f = std::floor(x), r = x - f;
  const auto i0 = static_cast<int64_t>(f);
  if (g.mode == GsMode::Nearest) {
    t.n = 1;
    t.idx[0] = gs_resolve(g, static_cast<int64_t>(x), d, lo, hi);
    t.w[0] = 1;
  } else if (g.mode == GsMode::Linear) {
    t.n = 2;
    for (int k = 0; k < 2; ++k) t.idx[k] = gs_resolve(g, i0 + k, d, lo, hi);
    t.w[0] = 1 - r;
    t.w[1] = r;
  } else {
    t.n = 4;
    for (int k = 0; k < 4; ++k) {
      t.idx[k] = gs_resolve(g, i0 - 1 + k, d, lo, hi);
      t.w[k] = cubic_weight(r + 1 - k);
    }
  }
}

// Expands per-axis taps into (flat spatial offset, weight) pairs over all axes.
void combine_taps(const std::vector<AxisTaps>& taps, const Shape& strides, std::vector<std::pair<int64_t, double>>& cur,
                  std::vector<std::pair<int64_t, double>>& next) {
  cur.assign(1, {0, 1.0});
  for (size_t a = 0; a < taps.size(); ++a) {
    next.clear();
    for (const auto& [off, w] : cur)
      for (int k = 0; k < taps[a].n; ++k)
        if (taps[a].idx[k] >= 0 && taps[a].w[k] != 0)
          next.emplace_back(off + taps[a].idx[k] * strides[a], w * taps[a].w[k]);
    cur.swap(next);
  }
}

Expected<GridSampler> grid_sampler(runtime::KernelContext& ctx) {
  GridSampler g;
  const std::string mode = ctx.node().attr_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  const std::string pad = ctx.node().attr_string("padding_mode", "zeros");
  if (mode == "nearest")
    g.mode = GsMode::Nearest;
  else if (mode == "linear" || mode == "bilinear")
    g.mode = GsMode::Linear;
  else if (mode == "cubic" || mode == "bicubic")
    g.mode = GsMode::Cubic;
  else
    return ctx.fail("attribute 'mode' = '" + mode + "' is not one of linear, nearest, cubic");
  if (pad == "zeros")
    g.pad = GsPad::Zeros;
  else if (pad == "border")
    g.pad = GsPad::Border;
  else if (pad == "reflection")
    g.pad = GsPad::Reflection;
  else
    return ctx.fail("attribute 'padding_mode' = '" + pad + "' is not one of zeros, border, reflection");
  g.align = ctx.node().attr_int("align_corners", 0) != 0;
  return g;
}

Status grid_sample_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  MS_ASSIGN_OR_RETURN(GridSampler g, grid_sampler(ctx));
  const int64_t rank = x.rank(), r = rank - 2;
  if (r < 1 || grid.rank() != rank || grid.dim(0) != x.dim(0) || grid.dim(-1) != r)
    return ctx.fail("grid " + shape_to_string(grid.shape()) + " must be [N, D1, ..., Dr, r] for X " +
                    shape_to_string(x.shape()));
  Shape out_shape{x.dim(0), x.dim(1)};
  out_shape.insert(out_shape.end(), grid.shape().begin() + 1, grid.shape().end() - 1);
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), out_shape));
  if (!is_float(x.dtype()) || !is_float(grid.dtype())) return ctx.unsupported_case("GridSample needs float inputs");
  const Shape spatial(x.shape().begin() + 2, x.shape().end());
  const Shape strides = contiguous_strides(spatial);
  const int64_t n_batch = x.dim(0), channels = x.dim(1), s_in = numel(spatial);
  const int64_t points = numel(Shape(out_shape.begin() + 2, out_shape.end()));
  if (s_in == 0 && out->numel() > 0) return ctx.fail("cannot sample an empty X " + shape_to_string(x.shape()));
  const std::vector<double> xv = to_doubles(x), gv = to_doubles(grid);
  std::vector<double> y(static_cast<size_t>(out->numel()), 0.0);
  std::vector<AxisTaps> taps(static_cast<size_t>(r));
  std::vector<std::pair<int64_t, double>> comb, scratch;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t p = 0; p < points; ++p) {
      const double* coord = gv.data() + (n * points + p) * r;  // (x, y, z...): the last axis first
      for (int64_t a = 0; a < r; ++a)
        gs_axis_taps(g, coord[r - 1 - a], spatial[static_cast<size_t>(a)], taps[static_cast<size_t>(a)]);
      combine_taps(taps, strides, comb, scratch);
      for (int64_t c = 0; c < channels; ++c) {
        const double* src = xv.data() + (n * channels + c) * s_in;
        double acc = 0;
        for (const auto& [off, w] : comb) acc += w * src[off];
        y[static_cast<size_t>((n * channels + c) * points + p)] = acc;
      }
    }
  from_doubles(y, *out);
  return Status::ok();
}

// --- AffineGrid --------------------------------------------------------------------------------------

// The normalized base coordinate of pixel i along an axis of d pixels.
double affine_base(int64_t i, int64_t d, bool align) {
  const auto fi = static_cast<double>(i), fd = static_cast<double>(d);
  if (align) return d == 1 ? -1.0 : -1.0 + 2.0 * fi / (fd - 1);
  return -1.0 + (2.0 * fi + 1.0) / fd;
}

Status affine_grid_kernel(runtime::KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = ctx.input(1).to_int_vector();
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  if (size.size() != 4 && size.size() != 5) return ctx.fail("size must have 4 or 5 values");
  const auto r = static_cast<int64_t>(size.size()) - 2;
  if (theta.rank() != 3 || theta.dim(1) != r || theta.dim(2) != r + 1 || theta.dim(0) != size[0])
    return ctx.fail("theta " + shape_to_string(theta.shape()) + " must be [" + to_string(size[0]) + ", " +
                    to_string(r) + ", " + to_string(r + 1) + "] for size " + shape_to_string(size));
  for (int64_t v : size)
    if (v < 0) return ctx.fail("size " + shape_to_string(size) + " must be >= 0");
  Shape out_shape{size[0]};
  out_shape.insert(out_shape.end(), size.begin() + 2, size.end());
  out_shape.push_back(r);
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, theta.dtype(), out_shape));
  if (!is_float(theta.dtype())) return ctx.unsupported_case("AffineGrid needs a float theta");
  const Shape spatial(size.begin() + 2, size.end());
  const int64_t points = numel(spatial);
  const std::vector<double> th = to_doubles(theta);
  std::vector<double> y(static_cast<size_t>(out->numel()));
  std::vector<double> hom(static_cast<size_t>(r + 1), 1.0);  // (x, y[, z], 1)
  for (int64_t p = 0; p < points; ++p) {
    int64_t rem = p;
    for (int64_t a = r - 1; a >= 0; --a) {  // spatial axis a feeds component r - 1 - a
      const int64_t d = spatial[static_cast<size_t>(a)];
      hom[static_cast<size_t>(r - 1 - a)] = affine_base(rem % d, d, align);
      rem /= d;
    }
    for (int64_t n = 0; n < size[0]; ++n)
      for (int64_t j = 0; j < r; ++j) {
        const double* row = th.data() + (n * r + j) * (r + 1);
        double acc = 0;
        for (int64_t k = 0; k <= r; ++k) acc += row[k] * hom[static_cast<size_t>(k)];
        y[static_cast<size_t>((n * points + p) * r + j)] = acc;
      }
  }
  from_doubles(y, *out);
  return Status::ok();
}

// --- RoiAlign ----------------------------------------------------------------------------------------

struct RoiSample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

struct RoiAlignParams {
  bool max_mode = false, half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling = 0;
  double scale = 1.0;
};

// Bilinear sample at (y, x) of an h x w plane, as the reference's pre-calculation.
RoiSample roi_sample(double y, double x, int64_t h, int64_t w) {
  RoiSample s;
  const auto fh = static_cast<double>(h), fw = static_cast<double>(w);
  if (y < -1.0 || y > fh || x < -1.0 || x > fw) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_lo = static_cast<int64_t>(y), x_lo = static_cast<int64_t>(x);
  int64_t y_hi = y_lo + 1, x_hi = x_lo + 1;
  if (y_lo >= h - 1) y = static_cast<double>(y_hi = y_lo = h - 1);
  if (x_lo >= w - 1) x = static_cast<double>(x_hi = x_lo = w - 1);
  const double ly = y - static_cast<double>(y_lo), lx = x - static_cast<double>(x_lo);
  const double hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_lo * w + x_lo;
  s.pos[1] = y_lo * w + x_hi;
  s.pos[2] = y_hi * w + x_lo;
  s.pos[3] = y_hi * w + x_hi;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// Pools the samples of one bin (avg: mean of bilinear values; max: max of weighted corners).
double roi_pool(const RoiAlignParams& p, const RoiSample* s, int64_t count, const double* plane) {
  double acc = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (!p.max_mode) {
      for (int k = 0; k < 4; ++k) acc += s[i].w[k] * plane[s[i].pos[k]];
      continue;
    }
    double v = s[i].w[0] * plane[s[i].pos[0]];
    for (int k = 1; k < 4; ++k) v = std::max(v, s[i].w[k] * plane[s[i].pos[k]]);
    acc = i == 0 ? v : std::max(acc, v);
  }
  return p.max_mode ? acc : acc / static_cast<double>(std::max<int64_t>(count, 1));
}

// A whole count held in a double: its digits, or three significant ones from 1e9 up.
std::string count_text(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, v < 1e9 ? "%.0f" : "%.3g", v);
  return buf;
}

// One roi over every channel: out points at [C, out_h, out_w].
Status roi_align_one(runtime::KernelContext& ctx, const RoiAlignParams& p, const double* roi, const double* planes,
                     int64_t channels, int64_t h, int64_t w, double* out) {
  const double off = p.half_pixel ? 0.5 : 0.0;
  const double x0 = roi[0] * p.scale - off, y0 = roi[1] * p.scale - off;
  double rw = roi[2] * p.scale - off - x0, rh = roi[3] * p.scale - off - y0;
  if (!std::isfinite(rw) || !std::isfinite(rh) || !std::isfinite(x0) || !std::isfinite(y0))
    return ctx.fail("rois must be finite");
  if (!p.half_pixel) {
    rw = std::max(rw, 1.0);
    rh = std::max(rh, 1.0);
  }
  const double bh = rh / static_cast<double>(p.out_h), bw = rw / static_cast<double>(p.out_w);
  const double fgh = p.sampling > 0 ? static_cast<double>(p.sampling) : std::ceil(std::max(bh, 0.0));
  const double fgw = p.sampling > 0 ? static_cast<double>(p.sampling) : std::ceil(std::max(bw, 0.0));
  // Each factor on its own too: a zero-wide roi makes the product 0 whatever the other side's count.
  // The samples of one bin are held at once (64 bytes each), and every point is read once a channel.
  constexpr double kMaxBinPoints = static_cast<double>(int64_t{1} << 20);
  constexpr double kMaxWork = static_cast<double>(int64_t{1} << 33);
  const double bins = static_cast<double>(p.out_h) * static_cast<double>(p.out_w);
  if (fgh > kMaxBinPoints || fgw > kMaxBinPoints || fgh * fgw > kMaxBinPoints ||
      std::max(fgh * fgw, 1.0) * bins * static_cast<double>(std::max<int64_t>(channels, 1)) > kMaxWork)
    return ctx.fail("roi is too large to sample (" + count_text(fgh) + " x " + count_text(fgw) + " points per bin, " +
                    to_string(p.out_h) + " x " + to_string(p.out_w) + " bins, " + to_string(channels) + " channels)");
  const auto gh = static_cast<int64_t>(fgh), gw = static_cast<int64_t>(fgw);
  const int64_t per_bin = gh * gw, plane_bins = p.out_h * p.out_w;
  std::vector<RoiSample> samples(static_cast<size_t>(per_bin));
  for (int64_t ph = 0; ph < p.out_h; ++ph)
    for (int64_t pw = 0; pw < p.out_w; ++pw) {
      size_t k = 0;
      for (int64_t iy = 0; iy < gh; ++iy)
        for (int64_t ix = 0; ix < gw; ++ix) {
          const double yy =
              y0 + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
          const double xx =
              x0 + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
          samples[k++] = roi_sample(yy, xx, h, w);
        }
      const int64_t b = ph * p.out_w + pw;
      for (int64_t c = 0; c < channels; ++c)
        out[c * plane_bins + b] = roi_pool(p, samples.data(), per_bin, planes + c * h * w);
    }
  return Status::ok();
}

Status roi_align_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& idx = ctx.input(2);
  RoiAlignParams p;
  const auto& node = ctx.node();
  p.max_mode = node.attr_string("mode", "avg") == "max";
  p.half_pixel = node.attr_string("coordinate_transformation_mode",
                                  ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  p.out_h = node.attr_int("output_height", 1);
  p.out_w = node.attr_int("output_width", 1);
  p.sampling = node.attr_int("sampling_ratio", 0);
  p.scale = node.attr_float("spatial_scale", 1.0f);
  if (x.rank() != 4) return ctx.fail("X must be [N, C, H, W], got " + shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.dim(1) != 4 || idx.numel() != rois.dim(0))
    return ctx.fail("rois " + shape_to_string(rois.shape()) + " must be [num_rois, 4] with one batch index each, got " +
                    to_string(idx.numel()));
  if (p.out_h < 1 || p.out_w < 1 || p.sampling < 0) return ctx.fail("output_height/width must be >= 1");
  const int64_t n_rois = rois.dim(0), channels = x.dim(1), h = x.dim(2), w = x.dim(3);
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), {n_rois, channels, p.out_h, p.out_w}));
  if (!is_float(x.dtype()) || rois.dtype() != x.dtype()) return ctx.unsupported_case("RoiAlign needs float X and rois");
  const std::vector<int64_t> batch = idx.to_int_vector();
  const std::vector<double> xv = to_doubles(x), rv = to_doubles(rois);
  std::vector<double> y(static_cast<size_t>(out->numel()), 0.0);
  for (int64_t i = 0; i < n_rois; ++i) {
    const int64_t b = batch[static_cast<size_t>(i)];
    if (b < 0 || b >= x.dim(0))
      return ctx.fail("batch_indices[" + to_string(i) + "] = " + to_string(b) + " is out of range [0, " +
                      to_string(x.dim(0)) + ")");
    if (h * w == 0) continue;
    MS_RETURN_IF_ERROR(roi_align_one(ctx, p, rv.data() + i * 4, xv.data() + b * channels * h * w, channels, h, w,
                                     y.data() + i * channels * p.out_h * p.out_w));
  }
  from_doubles(y, *out);
  return Status::ok();
}

// --- DeformConv (2-D) --------------------------------------------------------------------------------

struct DeformGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t group = 1, og = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
};

// Bilinear sample of an h x w plane at (y, x), zeros outside.
double bilinear_zero(const double* plane, int64_t h, int64_t w, double y, double x) {
  if (!(y > -1.0 && y < static_cast<double>(h) && x > -1.0 && x < static_cast<double>(w))) return 0.0;
  const double fy = std::floor(y), fx = std::floor(x);
  const double ly = y - fy, lx = x - fx;
  const auto y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
  double acc = 0;
  for (int64_t dy = 0; dy < 2; ++dy)
    for (int64_t dx = 0; dx < 2; ++dx) {
      const int64_t yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      acc += (dy ? ly : 1 - ly) * (dx ? lx : 1 - lx) * plane[yy * w + xx];
    }
  return acc;
}

Expected<DeformGeometry> deform_geometry(runtime::KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &wt = ctx.input(1), &offset = ctx.input(2);
  if (x.rank() != 4)
    return ctx.unsupported_case("DeformConv supports 2 spatial dims, X is " + shape_to_string(x.shape()));
  if (wt.rank() != 4 || offset.rank() != 4) return ctx.fail("W and offset must be 4-D like X");
  const auto& node = ctx.node();
  DeformGeometry g{x.dim(0),  x.dim(1),  x.dim(2),      x.dim(3),     wt.dim(0),
                   wt.dim(2), wt.dim(3), offset.dim(2), offset.dim(3)};
  g.group = node.attr_int("group", 1);
  g.og = node.attr_int("offset_group", 1);
  const auto ks = node.attr_ints("kernel_shape", {g.kh, g.kw}), st = node.attr_ints("strides", {1, 1});
  const auto dl = node.attr_ints("dilations", {1, 1}), pd = node.attr_ints("pads", {0, 0, 0, 0});
  if (ks.size() != 2 || st.size() != 2 || dl.size() != 2 || pd.size() != 4 || ks[0] != g.kh || ks[1] != g.kw)
    return ctx.fail("kernel_shape/strides/dilations/pads do not fit 2 spatial dims and W " +
                    shape_to_string(wt.shape()));
  g.sh = st[0], g.sw = st[1], g.dh = dl[0], g.dw = dl[1], g.pt = pd[0], g.pl = pd[1];
  if (g.group < 1 || g.og < 1 || g.c != wt.dim(1) * g.group || g.oc % g.group != 0 || g.c % g.og != 0)
    return ctx.fail("channels of X " + shape_to_string(x.shape()) + " and W " + shape_to_string(wt.shape()) +
                    " do not fit group " + to_string(g.group) + " / offset_group " + to_string(g.og));
  const int64_t eh = (g.h + pd[0] + pd[2] - ((g.kh - 1) * g.dh + 1)) / g.sh + 1;
  const int64_t ew = (g.w + pd[1] + pd[3] - ((g.kw - 1) * g.dw + 1)) / g.sw + 1;
  if (offset.dim(0) != g.n || offset.dim(1) != g.og * g.kh * g.kw * 2 || g.oh != eh || g.ow != ew)
    return ctx.fail("offset " + shape_to_string(offset.shape()) + " must be [" + to_string(g.n) + ", " +
                    to_string(g.og * g.kh * g.kw * 2) + ", " + to_string(eh) + ", " + to_string(ew) + "]");
  if (ctx.has_input(3) && ctx.input(3).numel() != g.oc) return ctx.fail("B must have one value per output channel");
  if (ctx.has_input(4) && ctx.input(4).shape() != Shape{g.n, g.og * g.kh * g.kw, g.oh, g.ow})
    return ctx.fail("mask " + shape_to_string(ctx.input(4).shape()) + " must be [N, offset_group * kH * kW, oH, oW]");
  return g;
}

// Deformed im2col of batch n: col[(c * kh + i) * kw + j][y * ow + x].
void deform_columns(const DeformGeometry& g, int64_t n, const std::vector<double>& xv, const std::vector<double>& ov,
                    const std::vector<double>* mv, std::vector<double>& col) {
  const int64_t kk = g.kh * g.kw, pts = g.oh * g.ow, c_per_og = g.c / g.og;
  for (int64_t c = 0; c < g.c; ++c) {
    const int64_t o = c / c_per_og;
    const double* plane = xv.data() + (n * g.c + c) * g.h * g.w;
    for (int64_t k = 0; k < kk; ++k) {
      const int64_t i = k / g.kw, j = k % g.kw;
      const double* off = ov.data() + ((n * g.og + o) * kk + k) * 2 * pts;
      const double* m = mv ? mv->data() + ((n * g.og + o) * kk + k) * pts : nullptr;
      double* dst = col.data() + (c * kk + k) * pts;
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x) {
          const int64_t p = y * g.ow + x;
          const double sy = static_cast<double>(y * g.sh - g.pt + i * g.dh) + off[p];
          const double sx = static_cast<double>(x * g.sw - g.pl + j * g.dw) + off[pts + p];
          dst[p] = (m ? m[p] : 1.0) * bilinear_zero(plane, g.h, g.w, sy, sx);
        }
    }
  }
}

Status deform_conv_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(DeformGeometry g, deform_geometry(ctx));
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, ctx.input(0).dtype(), {g.n, g.oc, g.oh, g.ow}));
  for (size_t i = 0; i < 5; ++i)
    if (ctx.has_input(i) && !is_float(ctx.input(i).dtype()))
      return ctx.unsupported_case("DeformConv needs float inputs");
  const std::vector<double> xv = to_doubles(ctx.input(0)), wv = to_doubles(ctx.input(1)), ov = to_doubles(ctx.input(2));
  const std::vector<double> bv = ctx.has_input(3) ? to_doubles(ctx.input(3)) : std::vector<double>();
  const std::vector<double> mv = ctx.has_input(4) ? to_doubles(ctx.input(4)) : std::vector<double>();
  const int64_t kk = g.kh * g.kw, pts = g.oh * g.ow, cpg = g.c / g.group, opg = g.oc / g.group;
  std::vector<double> col(static_cast<size_t>(g.c * kk * pts));
  std::vector<double> y(static_cast<size_t>(out->numel()));
  for (int64_t n = 0; n < g.n; ++n) {
    deform_columns(g, n, xv, ov, ctx.has_input(4) ? &mv : nullptr, col);
    for (int64_t o = 0; o < g.oc; ++o) {
      double* dst = y.data() + (n * g.oc + o) * pts;
      std::fill(dst, dst + pts, bv.empty() ? 0.0 : bv[static_cast<size_t>(o)]);
      const double* wrow = wv.data() + o * cpg * kk;
      const double* src = col.data() + (o / opg) * cpg * kk * pts;
      for (int64_t q = 0; q < cpg * kk; ++q)
        for (int64_t p = 0; p < pts; ++p) dst[p] += wrow[q] * src[q * pts + p];
    }
  }
  from_doubles(y, *out);
  return Status::ok();
}

}  // namespace
}  // namespace ms::cpu::vision

namespace ms::cpu {

void register_vision_kernels(runtime::KernelRegistry& r) {
  r.add("GridSample", vision::grid_sample_kernel);
  r.add("AffineGrid", vision::affine_grid_kernel);
  r.add("RoiAlign", vision::roi_align_kernel);
  r.add("DeformConv", vision::deform_conv_kernel);
  vision::register_misc_kernels(r);
}

}  // namespace ms::cpu
