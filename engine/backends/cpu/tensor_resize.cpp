// Resize / Upsample. Nearest is a per-axis index gather on bytes (any dtype). Linear and cubic are
// separable: one pass per resized axis in double precision (the reference computes in float64),
// then a single conversion to the output dtype.
#include <algorithm>
#include <cmath>

#include "engine/backends/cpu/tensor_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::cpu::tensor {
namespace {

using ops::tensor::ResizeParams;

int64_t nearest_index(const ResizeParams& p, double x, double scale) {
  const double f = std::floor(x);
  if (x == f) return static_cast<int64_t>(f);
  const double r = x - f;
  const std::string& m = p.nearest_mode;
  bool up = false;
  if (m == "round_prefer_floor")
    up = r > 0.5;
  else if (m == "round_prefer_ceil")
    up = r >= 0.5;
  else if (m == "floor")
    up = false;
  else if (m == "ceil")
    up = true;
  else
    up = scale < 1;  // "simple"
  return static_cast<int64_t>(f) + (up ? 1 : 0);
}

// Keys' cubic convolution kernel at distance d.
double cubic_weight(double a, double d) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0.0;
}

// Interpolation taps along one axis: `n` per output position, input indices clamped to the axis
// (edge padding) and their weights; `outside` marks tf_crop_and_resize extrapolation.
struct AxisTaps {
  int64_t n = 0;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;
};

// Taps of one output position at input coordinate x, as the reference: offsets i in [lo, 2 - lo)
// from floor(x) (x - 1 when x is whole, with ratio 1), weight kernel(s * (i - ratio)); antialias
// widens the kernel by 1 / scale when downsampling and normalizes it.
void position_taps(const ResizeParams& p, double x, double s, int64_t lo, int64_t in_dim, int64_t* idx, double* w) {
  double base = std::floor(x);
  double r = x - base;
  if (r == 0) {
    base -= 1;
    r = 1;
  }
  const int64_t n = 2 - 2 * lo;
  double sum = 0, kept = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double d = s * (static_cast<double>(lo + k) - r);
    w[k] = p.mode == ResizeParams::Mode::Cubic ? cubic_weight(p.cubic_a, d) : std::max(0.0, 1.0 - std::abs(d));
    sum += w[k];
  }
  for (int64_t k = 0; k < n; ++k) {
    if (p.antialias && sum != 0) w[k] /= sum;
    const int64_t i = static_cast<int64_t>(base) + lo + k;
    if (p.exclude_outside && (i < 0 || i >= in_dim)) w[k] = 0;
    kept += w[k];
    idx[k] = std::clamp<int64_t>(i, 0, in_dim - 1);
  }
  if (p.exclude_outside && kept != 0)
    for (int64_t k = 0; k < n; ++k) w[k] /= kept;
}

AxisTaps make_axis_taps(const ResizeParams& p, size_t axis, int64_t in_dim, int64_t n_out) {
  const bool cubic = p.mode == ResizeParams::Mode::Cubic;
  const double s = p.antialias ? std::min(p.scales[axis], 1.0) : 1.0;
  const int64_t lo = p.antialias ? static_cast<int64_t>(std::floor(-(cubic ? 2.0 : 1.0) / s)) + 1 : (cubic ? -1 : 0);
  AxisTaps t;
  t.n = 2 - 2 * lo;
  t.idx.resize(static_cast<size_t>(n_out * t.n));
  t.w.resize(static_cast<size_t>(n_out * t.n));
  t.outside.assign(static_cast<size_t>(n_out), 0);
  for (int64_t o = 0; o < n_out; ++o) {
    double x = 0;
    if (!ops::tensor::resize_coordinate(p, axis, o, in_dim, x)) {
      t.outside[static_cast<size_t>(o)] = 1;
      continue;
    }
    position_taps(p, x, s, lo, in_dim, &t.idx[static_cast<size_t>(o * t.n)], &t.w[static_cast<size_t>(o * t.n)]);
  }
  return t;
}

Status resize_nearest(runtime::KernelContext& ctx, const ResizeParams& p, const Tensor& in, Tensor& out) {
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  std::vector<std::vector<int64_t>> maps(in.shape().size());
  for (size_t a = 0; a < maps.size(); ++a) {
    const int64_t n_in = in.shape()[a], n_out = out.shape()[a];
    maps[a].resize(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      double x = 0;
      maps[a][static_cast<size_t>(o)] = !ops::tensor::resize_coordinate(p, a, o, n_in, x)
                                            ? -1
                                            : std::clamp<int64_t>(nearest_index(p, x, p.scales[a]), 0, n_in - 1);
    }
  }
  unsigned char fill[16] = {0};
  store_double(in.dtype(), p.extrapolation, fill);
  gather_by_axis_maps(out.raw(), out.shape(), in.raw(), in.shape(), maps, fill, es);
  return Status::ok();
}

Status resize_interp(runtime::KernelContext& ctx, const ResizeParams& p, const Tensor& in, Tensor& out) {
  if (!is_numeric(in.dtype())) return ctx.unsupported_case("interpolating Resize needs a numeric dtype");
  std::vector<double> cur(static_cast<size_t>(in.numel()));
  visit_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = in.data<T>();
    for (size_t i = 0; i < cur.size(); ++i) cur[i] = static_cast<double>(s[i]);
  });
  Shape shape = in.shape();
  std::vector<double> next;
  for (size_t a = 0; a < shape.size(); ++a) {
    const int64_t n_in = shape[a], n_out = out.shape()[a];
    if (n_in == n_out && p.scales[a] == 1.0 && p.coord_mode != "tf_crop_and_resize") continue;  // identity
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < a; ++i) outer *= shape[i];
    for (size_t i = a + 1; i < shape.size(); ++i) inner *= shape[i];
    const AxisTaps t = make_axis_taps(p, a, n_in, n_out);
    next.assign(static_cast<size_t>(outer * n_out * inner), 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      const double* src = cur.data() + o * n_in * inner;
      double* dst = next.data() + o * n_out * inner;
      for (int64_t x = 0; x < n_out; ++x) {
        double* d = dst + x * inner;
        if (t.outside[static_cast<size_t>(x)]) {
          for (int64_t i = 0; i < inner; ++i) d[i] = p.extrapolation;
          continue;
        }
        for (int64_t k = 0; k < t.n; ++k) {
          const double w = t.w[static_cast<size_t>(x * t.n + k)];
          if (w == 0) continue;
          const double* s = src + t.idx[static_cast<size_t>(x * t.n + k)] * inner;
          for (int64_t i = 0; i < inner; ++i) d[i] += w * s[i];
        }
      }
    }
    cur.swap(next);
    shape[a] = n_out;
  }
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (size_t i = 0; i < cur.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>)
        o[i] = cur[i] != 0;
      else if constexpr (std::is_integral_v<T>) {
        const double v = std::nearbyint(cur[i]);
        const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
        const double hi = static_cast<double>(std::numeric_limits<T>::max());
        o[i] = static_cast<T>(std::clamp(v, lo, hi));
      } else {
        o[i] = static_cast<T>(cur[i]);
      }
    }
  });
  return Status::ok();
}

Status resize_kernel(runtime::KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  ResizeParams p;
  std::string err;
  if (!ops::tensor::resize_attributes(ctx.node(), ctx.opset(), p, err)) return ctx.fail(err);
  const auto slots = ops::tensor::resize_slots(ctx.node().op_type, ctx.opset());
  auto given = [&](int slot) {
    return slot >= 0 && ctx.has_input(static_cast<size_t>(slot)) && ctx.input(static_cast<size_t>(slot)).numel() > 0;
  };
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  bool has_scales = false, has_sizes = false;
  if (ctx.node().op_type == "Upsample" && slots.scales < 0) {
    for (float f : ctx.node().attr_floats("scales")) scales.push_back(f);
    has_scales = true;
  }
  if (given(slots.scales)) {
    const Tensor& t = ctx.input(static_cast<size_t>(slots.scales));
    for (int64_t i = 0; i < t.numel(); ++i) scales.push_back(t.at_double(i));
    has_scales = true;
  }
  if (given(slots.sizes)) {
    sizes = ctx.input(static_cast<size_t>(slots.sizes)).to_int_vector();
    has_sizes = true;
  }
  if (given(slots.roi)) {
    const Tensor& t = ctx.input(static_cast<size_t>(slots.roi));
    for (int64_t i = 0; i < t.numel(); ++i) p.roi.push_back(t.at_double(i));
  }
  if (!ops::tensor::resize_shape(in.shape(), has_sizes ? nullptr : (has_scales ? &scales : nullptr),
                                 has_sizes ? &sizes : nullptr, p, err))
    return ctx.fail(err + " (input " + shape_to_string(in.shape()) + ")");
  if (p.coord_mode == "tf_crop_and_resize" && p.roi.size() != 2 * in.shape().size())
    return ctx.fail("tf_crop_and_resize needs roi with " + std::to_string(2 * in.shape().size()) +
                    " values (2 per entry of axes when given)");
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, in.dtype(), p.out_shape));
  for (int64_t d : in.shape())
    if (d == 0 && out->numel() > 0) return ctx.fail("cannot resize an empty input to " + shape_to_string(p.out_shape));
  if (out->numel() == 0) return Status::ok();
  if (p.mode == ResizeParams::Mode::Nearest) return resize_nearest(ctx, p, in, *out);
  return resize_interp(ctx, p, in, *out);
}

}  // namespace

void register_resize_kernels(runtime::KernelRegistry& r) {
  r.add("Resize", resize_kernel);
  r.add("Upsample", resize_kernel);
}

}  // namespace ms::cpu::tensor
