// Masks and constants on CUDA: comparisons of float tensors (bool results in device memory), Not on
// a device mask, ScatterND into float data, OneHot, ConstantOfShape and Constant with float values.
// The same ops on host integer and bool values (shape arithmetic) run their CPU kernels where the
// values are (cpu_fallback's host path: nothing copied, no fallback).
#include <cstring>

#include "engine/backends/cuda/ops_util.h"

namespace ms::cuda {
namespace {

// Output i in device memory: the preallocated tensor when the executor put it there (a compiled
// graph's arena), else a new device buffer in place of the host slot eager mode gives integer and
// bool values.
Expected<Tensor*> device_output(runtime::KernelContext& ctx, size_t i, DType dtype, const Shape& shape) {
  Tensor& y = ctx.outputs()[i];
  if (y.defined() && !y.device().is_cpu()) {
    if (y.dtype() != dtype || y.shape() != shape)
      return ctx.fail("output " + std::to_string(i) + " is " + shape_to_string(y.shape()) + ", expected " +
                      shape_to_string(shape));
    return &y;
  }
  const size_t bytes = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
  auto buf = cuda_backend(ctx).allocator().make_buffer(std::max<size_t>(bytes, 1));
  if (!buf) return Status::error(ErrorCode::OutOfMemory, ctx.node().label() + ": out of device memory for its output");
  y = Tensor(std::move(buf), dtype, shape);
  return &y;
}

template <CompareOp kOp> Status compare(runtime::KernelContext& ctx) {
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  if (!is_device_float(a0.dtype()) || b0.dtype() != a0.dtype()) return cpu_fallback(ctx);
  Shape shape;
  if (!broadcast_shapes(a0.shape(), b0.shape(), shape))
    return ctx.fail("cannot broadcast " + shape_to_string(a0.shape()) + " with " + shape_to_string(b0.shape()));
  StridedDesc d;
  if (!broadcast_desc(shape, a0.shape(), b0.shape(), d)) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* a, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(1));
  MS_ASSIGN_OR_RETURN(Tensor * y, device_output(ctx, 0, DType::Bool, shape));
  ctx.set_impl("cuda:compare");
  return launched(ctx,
                  cuda::compare(kOp, *scalar_type(a0.dtype()), a->raw(), b->raw(), static_cast<uint8_t*>(y->raw()),
                                y->numel(), d, cuda_backend(ctx).stream()),
                  "compare");
}

// Not of a device mask (a comparison's); host masks are host values.
Status logical_not(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Bool || x.device().is_cpu()) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(Tensor * y, device_output(ctx, 0, DType::Bool, x.shape()));
  ctx.set_impl("cuda:not");
  return launched(ctx,
                  cuda::logical_not(static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(y->raw()), x.numel(),
                                    cuda_backend(ctx).stream()),
                  "not");
}

Status scatter_nd(runtime::KernelContext& ctx) {
  const Tensor& data0 = ctx.input(0);
  const Tensor& idx0 = ctx.input(1);
  const Tensor& upd0 = ctx.input(2);
  Tensor& y = ctx.output(0);
  const int64_t depth = idx0.rank() ? idx0.shape().back() : 0;
  if (!is_device_float(data0.dtype()) || upd0.dtype() != data0.dtype() || idx0.dtype() != DType::I64 || !y.defined() ||
      ctx.node().attr_string("reduction", "none") != "none" || depth < 1 || depth > static_cast<int64_t>(data0.rank()))
    return cpu_fallback(ctx);
  int64_t slice = 1;
  for (int64_t k = depth; k < data0.rank(); ++k) slice *= data0.shape()[static_cast<size_t>(k)];
  const int64_t rows = idx0.numel() / depth;
  if (upd0.numel() != rows * slice)
    return ctx.fail("updates have " + std::to_string(upd0.numel()) + " elements, expected " +
                    std::to_string(rows * slice));
  CudaBackend& be = cuda_backend(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* data, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* idx, in.get(1));
  MS_ASSIGN_OR_RETURN(const Tensor* upd, in.get(2));
  if (y.raw() != data->raw() && y.nbytes())
    MS_CUDA_CHECK(cudaMemcpyAsync(y.raw(), data->raw(), y.nbytes(), cudaMemcpyDefault, be.stream()));
  MS_ASSIGN_OR_RETURN(Tensor flag, device_scratch(ctx, sizeof(int)));
  MS_CUDA_CHECK(cudaMemsetAsync(flag.raw(), 0, sizeof(int), be.stream()));
  MS_RETURN_IF_ERROR(launched(
      ctx,
      cuda::scatter_nd(idx->data<int64_t>(), upd->raw(), y.raw(), rows, static_cast<int>(depth), data0.shape().data(),
                       slice, static_cast<int>(dtype_size(y.dtype())), static_cast<int*>(flag.raw()), be.stream()),
      "scatter_nd"));
  int bad = 0;
  MS_CUDA_CHECK(cudaMemcpyAsync(&bad, flag.raw(), sizeof(int), cudaMemcpyDefault, be.stream()));
  MS_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  if (bad) return ctx.fail("an index is out of range of data " + shape_to_string(data0.shape()));
  ctx.set_impl("cuda:scatter_nd");
  return Status::ok();
}

// OneHot with float values (a loss's targets): indices and depth read where they are.
Status one_hot(runtime::KernelContext& ctx) {
  const Tensor& idx0 = ctx.input(0);
  const Tensor& values0 = ctx.input(2);
  if (idx0.dtype() != DType::I64 || values0.dtype() != DType::F32 || values0.numel() != 2) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(Tensor depth_h, host_copy(ctx, ctx.input(1)));
  MS_ASSIGN_OR_RETURN(Tensor values_h, host_copy(ctx, values0));
  const int64_t depth = static_cast<int64_t>(depth_h.at_double(0));
  if (depth < 1) return ctx.fail("depth must be positive");
  const int64_t r = static_cast<int64_t>(idx0.rank()) + 1;
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), r);
  if (axis < 0 || axis >= r) return ctx.fail("axis out of range");
  Shape shape = idx0.shape();
  shape.insert(shape.begin() + axis, depth);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < static_cast<int64_t>(idx0.rank()); ++k)
    (k < axis ? outer : inner) *= idx0.shape()[static_cast<size_t>(k)];
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, DType::F32, shape));
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* idx, in.get(0));
  ctx.set_impl("cuda:one_hot");
  return launched(ctx,
                  cuda::one_hot(idx->data<int64_t>(), y->data<float>(), outer, depth, inner, values_h.data<float>()[0],
                                values_h.data<float>()[1], cuda_backend(ctx).stream()),
                  "one_hot");
}

// A float value of `dtype` (1 to 8 bytes) as the fill kernel's bit pattern.
uint64_t bits_of(const Tensor& v) {
  uint64_t bits = 0;
  std::memcpy(&bits, v.raw(), std::min<size_t>(dtype_size(v.dtype()), sizeof(bits)));
  return bits;
}

Status constant_of_shape(runtime::KernelContext& ctx) {
  const Tensor* value = ctx.node().attr_tensor("value");
  const DType dtype = value ? value->dtype() : DType::F32;
  if (!is_device_float(dtype) || (value && value->numel() != 1)) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(Tensor dims, host_copy(ctx, ctx.input(0)));
  Shape shape = dims.to_int_vector();
  for (int64_t d : shape)
    if (d < 0) return ctx.fail("negative dimension in " + shape_to_string(shape));
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, dtype, shape));
  ctx.set_impl("cuda:fill");
  return launched(ctx,
                  fill(y->raw(), y->numel(), static_cast<int>(dtype_size(dtype)), value ? bits_of(*value) : 0,
                       cuda_backend(ctx).stream()),
                  "fill");
}

// A float constant's device copy: the backend uploads the attribute's tensor once (its upload cache
// is keyed by the buffer) and each run copies it on the device.
Status constant(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  Tensor host;
  if (const Tensor* t = n.attr_tensor("value")) {
    host = *t;
  } else if (n.has_attr("value_float")) {
    host = Tensor::scalar<float>(n.attr_float("value_float", 0));
  } else if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    host = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
  }
  if (!host.defined() || !is_device_float(host.dtype())) return cpu_fallback(ctx);  // integers: host values
  CudaBackend& be = cuda_backend(ctx);
  MS_ASSIGN_OR_RETURN(Tensor d, be.to_device(host));
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, host.dtype(), host.shape()));
  if (y->raw() != d.raw() && d.nbytes())
    MS_CUDA_CHECK(cudaMemcpyAsync(y->raw(), d.raw(), d.nbytes(), cudaMemcpyDefault, be.stream()));
  ctx.set_impl("cuda:constant");
  return Status::ok();
}

}  // namespace

void register_logic_ops(runtime::KernelRegistry& r) {
  r.add("Equal", &compare<CompareOp::Equal>);
  r.add("Less", &compare<CompareOp::Less>);
  r.add("Greater", &compare<CompareOp::Greater>);
  r.add("LessOrEqual", &compare<CompareOp::LessOrEqual>);
  r.add("GreaterOrEqual", &compare<CompareOp::GreaterOrEqual>);
  r.add("Not", &logical_not);
  r.add("ScatterND", &scatter_nd);
  r.add("OneHot", &one_hot);
  r.add("ConstantOfShape", &constant_of_shape);
  r.add("Constant", &constant);
}

}  // namespace ms::cuda
