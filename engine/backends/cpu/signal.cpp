// CPU kernels: DFT, STFT, window functions, MelWeightMatrix. Transforms run in double precision
// (signal_fft.h) whatever the tensor's float type.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/signal_fft.h"
#include "engine/ops/signal_internal.h"

namespace ms::cpu {
namespace signal {
namespace {

using ops::signal::DftSpec;
using ops::signal::ScalarArg;
using ops::signal::StftSpec;
using std::to_string;

template <class T> double to_d(T v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

template <class T> T from_d(double v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

using nn::visit_float;

// Optional integer scalar input i.
Expected<ScalarArg> scalar_arg(runtime::KernelContext& ctx, size_t i, const char* name) {
  ScalarArg a;
  a.given = ctx.has_input(i);
  if (!a.given) return a;
  const Tensor& t = ctx.input(i);
  if (!is_integer(t.dtype()) || t.numel() != 1)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be one integer, got " +
                    std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()));
  a.value = t.at_int(0);
  return a;
}

Expected<int64_t> required_int(runtime::KernelContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return ctx.fail("input " + to_string(i) + " (" + name + ") is missing");
  MS_ASSIGN_OR_RETURN(ScalarArg a, scalar_arg(ctx, i, name));
  return *a.value;
}

Expected<double> float_scalar(runtime::KernelContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return ctx.fail("input " + to_string(i) + " (" + name + ") is missing");
  const Tensor& t = ctx.input(i);
  if (!is_float(t.dtype()) || t.numel() != 1)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be one float, got " +
                    std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()));
  return t.at_double(0);
}

// ---- DFT ----

// One transform line: `n` complex (c == 2) or real (c == 1) values `stride` elements apart.
template <class T> void load_line(const T* src, int64_t stride, int64_t c, int64_t count, cd* buf, int64_t len) {
  for (int64_t j = 0; j < count; ++j) {
    const T* p = src + j * stride;
    buf[j] = cd(to_d(p[0]), c == 2 ? to_d(p[1]) : 0.0);
  }
  for (int64_t j = count; j < len; ++j) buf[j] = cd(0, 0);
}

template <class T> void store_line(const cd* buf, double scale, int64_t count, T* dst, int64_t stride, int64_t c) {
  for (int64_t j = 0; j < count; ++j) {
    T* p = dst + j * stride;
    p[0] = from_d<T>(buf[j].real() * scale);
    if (c == 2) p[1] = from_d<T>(buf[j].imag() * scale);
  }
}

// The full Hermitian spectrum of length `len` from its first len/2 + 1 values (already in buf):
// the inverse transform's real part is then numpy's irfft.
void mirror_half_spectrum(cd* buf, int64_t len) {
  for (int64_t k = 1; k < (len + 1) / 2; ++k) buf[len - k] = std::conj(buf[k]);
}

template <class T> void run_dft(const Tensor& x, Tensor& y, const DftSpec& s) {
  const Shape& d = x.shape();
  const auto ax = static_cast<size_t>(s.axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < ax; ++i) outer *= d[i];
  for (size_t i = ax + 1; i + 1 < d.size(); ++i) inner *= d[i];
  const int64_t n_in = d[ax], c_in = d.back(), n_out = y.dim(s.axis), c_out = y.dim(-1), len = s.length;
  const bool irfft = s.inverse && s.onesided;
  const int64_t count = std::min(n_in, irfft ? len / 2 + 1 : len);
  const double scale = s.inverse ? 1.0 / static_cast<double>(len) : 1.0;
  FftPlan plan(len);
  std::vector<cd> buf(static_cast<size_t>(len));
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      load_line(xp + (o * n_in * inner + i) * c_in, inner * c_in, c_in, count, buf.data(), len);
      if (irfft) mirror_half_spectrum(buf.data(), len);
      plan.run(buf.data(), s.inverse);
      store_line(buf.data(), scale, n_out, yp + (o * n_out * inner + i) * c_out, inner * c_out, c_out);
    }
}

Status dft_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_float(x.dtype()))
    return ctx.fail("input 0 (input) must be a float tensor, got " + std::string(dtype_name(x.dtype())));
  MS_ASSIGN_OR_RETURN(ScalarArg length, scalar_arg(ctx, 1, "dft_length"));
  ScalarArg axis;
  if (ctx.opset() >= 20) {
    MS_ASSIGN_OR_RETURN(axis, scalar_arg(ctx, 2, "axis"));
  }
  DftSpec s;
  std::string err;
  if (!ops::signal::resolve_dft(ctx.node(), ctx.opset(), x.shape(), axis, length, s, err)) return ctx.fail(err);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), ops::signal::dft_output_dims(x.shape(), s)));
  visit_float(x.dtype(), [&](auto tag) { run_dft<typename decltype(tag)::type>(x, *y, s); });
  ctx.set_impl(s.length > 0 && (s.length & (s.length - 1)) == 0 ? "fft:radix2" : "fft");
  return Status::ok();
}

// ---- STFT ----

template <class T> void run_stft(const Tensor& x, const Tensor* window, Tensor& y, const StftSpec& s) {
  const int64_t batch = x.dim(0), len = x.dim(1), c = x.dim(2), fl = s.frame_length;
  FftPlan plan(fl);
  std::vector<cd> buf(static_cast<size_t>(fl));
  std::vector<double> w(static_cast<size_t>(fl), 1.0);
  if (window)
    for (int64_t t = 0; t < fl; ++t) w[static_cast<size_t>(t)] = to_d(window->data<T>()[t]);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < s.frames; ++f) {
      load_line(xp + (b * len + f * s.step) * c, c, c, fl, buf.data(), fl);
      for (int64_t t = 0; t < fl; ++t) buf[static_cast<size_t>(t)] *= w[static_cast<size_t>(t)];
      plan.run(buf.data(), false);
      store_line(buf.data(), 1.0, s.bins, yp + (b * s.frames + f) * s.bins * 2, 2, 2);
    }
}

Status stft_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_float(x.dtype()))
    return ctx.fail("input 0 (signal) must be a float tensor, got " + std::string(dtype_name(x.dtype())));
  MS_ASSIGN_OR_RETURN(ScalarArg step, scalar_arg(ctx, 1, "frame_step"));
  MS_ASSIGN_OR_RETURN(ScalarArg frame_length, scalar_arg(ctx, 3, "frame_length"));
  const Tensor* window = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (window && window->dtype() != x.dtype())
    return ctx.fail("input 2 (window) is " + std::string(dtype_name(window->dtype())) + " but signal is " +
                    std::string(dtype_name(x.dtype())));
  StftSpec s;
  std::string err;
  if (!ops::signal::resolve_stft(ctx.node(), x.shape(), step, window ? &window->shape() : nullptr, window != nullptr,
                                 frame_length, s, err))
    return ctx.fail(err);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), {x.dim(0), s.frames, s.bins, 2}));
  visit_float(x.dtype(), [&](auto tag) { run_stft<typename decltype(tag)::type>(x, window, *y, s); });
  return Status::ok();
}

// ---- Windows and MelWeightMatrix ----

template <class T> void store_all(const std::vector<double>& v, Tensor& out) {
  T* p = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = from_d<T>(v[i]);
}

Status store_values(runtime::KernelContext& ctx, DType dt, const Shape& shape, const std::vector<double>& v) {
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, dt, shape));
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) store_all<T>(v, *out);
  });
  return Status::ok();
}

enum class Window { Hann, Hamming, Blackman };

// w[n] over `size` points; the denominator is size (periodic) or size - 1 (symmetric).
std::vector<double> window_values(Window kind, int64_t size, bool periodic) {
  std::vector<double> v(static_cast<size_t>(size));
  const int64_t denom = periodic ? size : size - 1;
  if (denom == 0) {  // one symmetric point: the window's peak
    std::fill(v.begin(), v.end(), 1.0);
    return v;
  }
  const double pi = std::numbers::pi;
  for (int64_t n = 0; n < size; ++n) {
    const double x = static_cast<double>(n) / static_cast<double>(denom);
    double w = 0;
    switch (kind) {
      case Window::Hann: w = std::sin(pi * x) * std::sin(pi * x); break;
      case Window::Hamming: w = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(2 * pi * x); break;
      case Window::Blackman: w = 0.42 - 0.5 * std::cos(2 * pi * x) + 0.08 * std::cos(4 * pi * x); break;
    }
    v[static_cast<size_t>(n)] = w;
  }
  return v;
}

template <Window kind> Status window_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(const int64_t n, required_int(ctx, 0, "size"));
  DType dt;
  std::string err;
  if (!ops::signal::signal_output_dtype(ctx.node(), dt, err)) return ctx.fail(err);
  const int64_t periodic = ctx.node().attr_int("periodic", 1);
  if (periodic != 0 && periodic != 1)
    return ctx.fail("attribute 'periodic' must be 0 or 1, got " + to_string(periodic));
  if (n < 0 || n > ops::signal::kMaxSignalLength)
    return ctx.fail("input 0 (size) must be in [0, 2^28], got " + to_string(n));
  return store_values(ctx, dt, {n}, window_values(kind, n, periodic == 1));
}

struct MelArgs {
  int64_t bins = 0, dft = 0, rate = 0;
  double lower = 0, upper = 0;
};

Expected<MelArgs> mel_args(runtime::KernelContext& ctx) {
  MelArgs a;
  MS_ASSIGN_OR_RETURN(a.bins, required_int(ctx, 0, "num_mel_bins"));
  MS_ASSIGN_OR_RETURN(a.dft, required_int(ctx, 1, "dft_length"));
  MS_ASSIGN_OR_RETURN(a.rate, required_int(ctx, 2, "sample_rate"));
  MS_ASSIGN_OR_RETURN(a.lower, float_scalar(ctx, 3, "lower_edge_hertz"));
  MS_ASSIGN_OR_RETURN(a.upper, float_scalar(ctx, 4, "upper_edge_hertz"));
  const int64_t kMax = ops::signal::kMaxSignalLength;
  if (a.bins < 1 || a.bins > kMax) return ctx.fail("num_mel_bins must be in [1, 2^28], got " + to_string(a.bins));
  if (a.dft < 1 || a.dft > kMax) return ctx.fail("dft_length must be in [1, 2^28], got " + to_string(a.dft));
  if (a.rate < 1) return ctx.fail("sample_rate must be >= 1, got " + to_string(a.rate));
  if (!(a.lower >= 0) || !(a.upper >= a.lower))
    return ctx.fail("need 0 <= lower_edge_hertz <= upper_edge_hertz, got " + to_string(a.lower) + " and " +
                    to_string(a.upper));
  return a;
}

// Triangular filters between mel-spaced DFT bins (the ONNX reference's construction: bin edges at
// num_mel_bins + 2 points spaced (high - low) / (num_mel_bins + 2) apart on the mel scale).
Status mel_weight_matrix_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(MelArgs a, mel_args(ctx));
  DType dt;
  std::string err;
  if (!ops::signal::signal_output_dtype(ctx.node(), dt, err)) return ctx.fail(err);
  const int64_t spec_bins = a.dft / 2 + 1;
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low = mel(a.lower), step = (mel(a.upper) - low) / static_cast<double>(a.bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(a.bins + 2));
  for (int64_t i = 0; i < a.bins + 2; ++i) {
    const double hz = 700.0 * std::expm1((static_cast<double>(i) * step + low) / 2595.0 * std::log(10.0));
    edge[static_cast<size_t>(i)] =
        static_cast<int64_t>(std::floor(static_cast<double>(a.dft + 1) * hz / static_cast<double>(a.rate)));
  }
  // Filter i writes rows edge[i] .. max(edge[i + 1], edge[i + 2] - 1); the edges never decrease.
  if (edge[static_cast<size_t>(a.bins)] >= spec_bins || edge.back() > spec_bins)
    return ctx.fail("upper_edge_hertz " + to_string(a.upper) + " maps to DFT bin " + to_string(edge.back()) +
                    ", past the last of " + to_string(spec_bins) + " bins (keep it <= sample_rate / 2)");
  std::vector<double> w(static_cast<size_t>(spec_bins * a.bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return w[static_cast<size_t>(j * a.bins + i)]; };
  for (int64_t i = 0; i < a.bins; ++i) {
    const int64_t lo = edge[static_cast<size_t>(i)], mid = edge[static_cast<size_t>(i + 1)],
                  hi = edge[static_cast<size_t>(i + 2)];
    if (mid == lo) at(mid, i) = 1;
    for (int64_t j = lo; mid > lo && j <= mid; ++j)
      at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; j < hi; ++j) at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  return store_values(ctx, dt, {spec_bins, a.bins}, w);
}

}  // namespace
}  // namespace signal

void register_signal_kernels(runtime::KernelRegistry& r) {
  r.add("DFT", signal::dft_kernel);
  r.add("STFT", signal::stft_kernel);
  r.add("HannWindow", signal::window_kernel<signal::Window::Hann>);
  r.add("HammingWindow", signal::window_kernel<signal::Window::Hamming>);
  r.add("BlackmanWindow", signal::window_kernel<signal::Window::Blackman>);
  r.add("MelWeightMatrix", signal::mel_weight_matrix_kernel);
}

}  // namespace ms::cpu
