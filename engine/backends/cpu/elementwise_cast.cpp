// Cast and CastLike between every numeric and bool dtype. Float -> integer truncates toward zero as
// numpy's astype (out-of-range and NaN give numpy's x86 values, never UB); f16/bf16 round to
// nearest even; anything -> bool is "!= 0". Narrow types (float8, e8m0, float4, int4/uint4/int2/uint2)
// go through engine/core/narrow.h as ml_dtypes' astype does: float8 targets honour `saturate` (opset
// 19+), e8m0 targets `round_mode` (opset 24+), integer sources wrap into int4/int2, float sources
// truncate and give 0 when out of range.
#include <algorithm>
#include <cstring>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/narrow_io.h"

namespace ms::cpu {
// Casts between string tensors and numbers (string.cpp).
Status cast_string(runtime::KernelContext& ctx, const Tensor& x, Tensor& y);
}  // namespace ms::cpu

namespace ms::cpu::elementwise {
namespace {

template <class From, class To> void cast_range(const From* x, To* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = convert<To>(x[i]);
}

// Before opset 19 the ONNX reference casts f32 -> bf16 by dropping the low 16 bits (the node tests
// are generated that way); Cast-19 specifies round-to-nearest-even, which convert<bf16> does, and
// so do the casts a compiler pass makes (mixed precision: round_mode "nearest") at any opset.
template <class From> void cast_to_bf16_truncating(const From* x, bf16* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(x[i]);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    y[i] = Eigen::numext::bit_cast<bf16>(static_cast<uint16_t>(bits >> 16));
  }
}

using narrow_io::kBlock;

struct NarrowOptions {
  bool saturate = true;
  narrow::Round round = narrow::Round::Up;
};

Expected<NarrowOptions> narrow_options(const runtime::KernelContext& ctx) {
  NarrowOptions o;
  o.saturate = ctx.node().attr_int("saturate", 1) != 0;
  const std::string mode = ctx.node().attr_string("round_mode", "up");
  if (mode == "up")
    o.round = narrow::Round::Up;
  else if (mode == "down")
    o.round = narrow::Round::Down;
  else if (mode == "nearest")
    o.round = narrow::Round::Nearest;
  else
    return ctx.fail("attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"" + mode + "\"");
  return o;
}

// n (<= kBlock) elements of x from element b, as codes of the narrow type `to`.
void encode_narrow_block(DType to, const Tensor& x, int64_t b, int64_t n, uint8_t* y, const NarrowOptions& o) {
  if (narrow::is_narrow_int(to) && narrow_io::is_integer_like(x.dtype())) {
    int64_t buf[kBlock];
    narrow_io::load_int(x.dtype(), x.raw(), b, n, buf);
    for (int64_t i = 0; i < n; ++i) y[i] = narrow::from_int(to, buf[i]);
    return;
  }
  double buf[kBlock];
  narrow_io::load_real(x.dtype(), x.raw(), b, n, buf);
  if (narrow::is_narrow_int(to)) {
    for (int64_t i = 0; i < n; ++i) y[i] = narrow_io::narrow_int_from_real(to, buf[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = narrow::from_float(to, static_cast<float>(buf[i]), o.saturate, o.round);
}

// n (<= kBlock) elements of the narrow tensor x from element b, converted to To.
template <class To> void decode_narrow_block(const Tensor& x, int64_t b, int64_t n, To* y) {
  if (narrow::is_narrow_int(x.dtype())) {
    int64_t buf[kBlock];
    narrow_io::load_int(x.dtype(), x.raw(), b, n, buf);
    for (int64_t i = 0; i < n; ++i) y[i] = convert<To>(buf[i]);
    return;
  }
  double buf[kBlock];
  narrow_io::load_real(x.dtype(), x.raw(), b, n, buf);
  for (int64_t i = 0; i < n; ++i) y[i] = convert<To>(static_cast<float>(buf[i]));
}

// Runs f(begin, count) over [0, n) in blocks of at most kBlock, chunked across threads.
template <class F> bool for_blocks(int64_t n, F&& f) {
  return parallel_chunks(n, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; s += kBlock) f(s, std::min(kBlock, e - s));
  });
}

// Casts where the source or the target is a narrow type (the other one may be narrow too).
Status cast_narrow(runtime::KernelContext& ctx, const Tensor& x, Tensor& y, DType to) {
  MS_ASSIGN_OR_RETURN(const NarrowOptions o, narrow_options(ctx));
  const int64_t n = x.numel();
  bool par = false;
  if (is_narrow(to)) {
    uint8_t* yp = y.data<uint8_t>();
    par = for_blocks(n, [&](int64_t b, int64_t len) { encode_narrow_block(to, x, b, len, yp + b, o); });
  } else {
    const bool ran = visit_dtype(to, [&](auto tag) {
      using To = typename decltype(tag)::type;
      To* yp = y.data<To>();
      par = for_blocks(n, [&](int64_t b, int64_t len) { decode_narrow_block<To>(x, b, len, yp + b); });
    });
    if (!ran)
      return ctx.unsupported_case("cannot cast " + std::string(dtype_name(x.dtype())) + " to " +
                                  std::string(dtype_name(to)));
  }
  ctx.set_impl(par ? "loop:omp" : "loop");
  return Status::ok();
}

Status cast_to(runtime::KernelContext& ctx, DType to) {
  const Tensor& x = ctx.input(0);
  Tensor* y = nullptr;
  MS_RETURN_IF_ERROR(prepare_output(ctx, 0, to, x.shape(), y));
  const int64_t n = x.numel();
  if (x.dtype() == to) {
    if (y->nbytes() && y->raw() != x.raw()) std::memcpy(y->raw(), x.raw(), y->nbytes());
    ctx.set_impl("copy");
    return Status::ok();
  }
  if (is_narrow(x.dtype()) || is_narrow(to)) return cast_narrow(ctx, x, *y, to);
  if (x.dtype() == DType::String || to == DType::String) return cast_string(ctx, x, *y);
  bool ran = false, par = false;
  visit_dtype(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visit_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* xp = x.data<From>();
      To* yp = y->data<To>();
      if constexpr (std::is_same_v<To, bf16> && std::is_floating_point_v<From>) {
        if (ctx.opset() < 19 && ctx.node().attr_string("round_mode", "") != "nearest") {
          par = parallel_chunks(n, [&](int64_t b, int64_t e) { cast_to_bf16_truncating(xp + b, yp + b, e - b); });
          ran = true;
          return;
        }
      }
      // f32 <-> bf16, the casts of a mixed-precision graph: the vectorized row converters (the same
      // rounding, nearest even with NaN kept quiet; 8M values 10.8 -> 0.95 ms on two threads).
      if constexpr (std::is_same_v<From, float> && std::is_same_v<To, bf16>) {
        par = parallel_chunks(n, [&](int64_t b, int64_t e) { round_to_bf16(xp + b, yp + b, e - b); });
        ran = true;
        return;
      }
      if constexpr (std::is_same_v<From, bf16> && std::is_same_v<To, float>) {
        par = parallel_chunks(n, [&](int64_t b, int64_t e) { widen_bf16(xp + b, yp + b, e - b); });
        ran = true;
        return;
      }
      par = parallel_chunks(n, [&](int64_t b, int64_t e) { cast_range(xp + b, yp + b, e - b); });
      ran = true;
    });
  });
  if (!ran)
    return ctx.unsupported_case("cannot cast " + std::string(dtype_name(x.dtype())) + " to " +
                                std::string(dtype_name(to)));
  ctx.set_impl(par ? "loop:omp" : "loop");
  return Status::ok();
}

Status cast_kernel(runtime::KernelContext& ctx) {
  const std::optional<DType> to = dtype_from_onnx(static_cast<int>(ctx.node().attr_int("to", 0)));
  if (!to) return ctx.unsupported_case("unknown target type");
  return cast_to(ctx, *to);
}

Status cast_like_kernel(runtime::KernelContext& ctx) { return cast_to(ctx, ctx.input(1).dtype()); }

}  // namespace

void register_cast_kernels(runtime::KernelRegistry& r) {
  r.add("Cast", cast_kernel);
  r.add("CastLike", cast_like_kernel);
}

}  // namespace ms::cpu::elementwise
