// Reshape-like kernels (views when the executor left the output free, else a copy into the arena
// slot), and the shape producers: Shape, Size, ConstantOfShape, Range.
#include <algorithm>

#include "engine/backends/cpu/tensor_internal.h"

namespace ms::cpu::tensor {
namespace {

Status view_kernel(runtime::KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.defined()) {
    if (out.nbytes() != in.nbytes())
      return ctx.fail("output " + shape_to_string(out.shape()) + " does not hold input " + shape_to_string(in.shape()));
    copy_if_distinct(in, out);
    return Status::ok();
  }
  MS_ASSIGN_OR_RETURN(auto specs, infer_concrete(ctx));
  if (numel(specs[0].shape) != in.numel())
    return ctx.fail("cannot view " + shape_to_string(in.shape()) + " as " + shape_to_string(specs[0].shape));
  ctx.set_output(0, in.reshaped(specs[0].shape));
  return Status::ok();
}

Status shape_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Shape& s = ctx.input(0).shape();
  const auto rank = static_cast<int64_t>(s.size());
  int64_t start = ctx.opset() >= 15 ? ctx.node().attr_int("start", 0) : 0;
  if (start < 0) start += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  Tensor& out = ctx.output(0);
  auto* o = out.data<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = s[static_cast<size_t>(start + i)];
  return Status::ok();
}

Status size_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  ctx.output(0).data<int64_t>()[0] = ctx.input(0).numel();
  return Status::ok();
}

Status constant_of_shape_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  Tensor& out = ctx.output(0);
  const Tensor* v = ctx.node().attr_tensor("value");
  if (!v || v->numel() == 0) {
    std::memset(out.raw(), 0, out.nbytes());
    return Status::ok();
  }
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, v->dtype()));
  if (!v->device().is_cpu()) return ctx.unsupported_case("value attribute is not on the host");
  bool zero = true;
  const auto* vb = static_cast<const unsigned char*>(v->raw());
  for (size_t i = 0; i < es; ++i) zero &= vb[i] == 0;
  if (zero) {
    std::memset(out.raw(), 0, out.nbytes());
    return Status::ok();
  }
  char* o = static_cast<char*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(o + static_cast<size_t>(i) * es, vb, es);
  return Status::ok();
}

Status range_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  Tensor& out = ctx.output(0);
  const Tensor& s = ctx.input(0);
  const Tensor& d = ctx.input(2);
  if (s.numel() != 1 || ctx.input(1).numel() != 1 || d.numel() != 1)
    return ctx.fail("start, limit and delta must have one element each");
  const bool ok = visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < out.numel(); ++i) o[i] = false;
    } else if constexpr (std::is_integral_v<T>) {
      // Unsigned arithmetic: wraps where a signed intermediate could overflow (huge deltas).
      const auto start = static_cast<uint64_t>(s.data<T>()[0]), delta = static_cast<uint64_t>(d.data<T>()[0]);
      for (int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<T>(start + static_cast<uint64_t>(i) * delta);
    } else {
      // Accumulate like the reference (start + i * delta in the input's precision).
      const double start = s.at_double(0), delta = d.at_double(0);
      for (int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<T>(start + static_cast<double>(i) * delta);
    }
  });
  if (!ok) return ctx.unsupported_case("Range does not support " + std::string(dtype_name(out.dtype())));
  return Status::ok();
}

}  // namespace

void register_shape_kernels(runtime::KernelRegistry& r) {
  r.add("Reshape", view_kernel);
  r.add("Flatten", view_kernel);
  r.add("Squeeze", view_kernel);
  r.add("Unsqueeze", view_kernel);
  r.add("Shape", shape_kernel);
  r.add("Size", size_kernel);
  r.add("ConstantOfShape", constant_of_shape_kernel);
  r.add("Range", range_kernel);
}

}  // namespace ms::cpu::tensor
