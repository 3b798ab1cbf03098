// Cast and CastLike between every numeric and bool dtype. Float -> integer truncates toward zero as
// numpy's astype (out-of-range and NaN give numpy's x86 values, never UB); f16/bf16 round to
// nearest even; anything -> bool is "!= 0".
#include <cstring>

#include "engine/backends/cpu/elementwise_internal.h"

namespace ms::cpu::elementwise {
namespace {

template <class From, class To> void cast_range(const From* x, To* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = convert<To>(x[i]);
}

// Before opset 19 the ONNX reference casts f32 -> bf16 by dropping the low 16 bits (the node tests
// are generated that way); Cast-19 specifies round-to-nearest-even, which convert<bf16> does.
template <class From> void cast_to_bf16_truncating(const From* x, bf16* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(x[i]);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    y[i] = Eigen::numext::bit_cast<bf16>(static_cast<uint16_t>(bits >> 16));
  }
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
  bool ran = false, par = false;
  visit_dtype(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visit_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* xp = x.data<From>();
      To* yp = y->data<To>();
      if constexpr (std::is_same_v<To, bf16> && std::is_floating_point_v<From>) {
        if (ctx.opset() < 19) {
          par = parallel_chunks(n, [&](int64_t b, int64_t e) { cast_to_bf16_truncating(xp + b, yp + b, e - b); });
          ran = true;
          return;
        }
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
