// Data movement on CUDA: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity), Transpose, Concat,
// Gather and Cast for floating-point data. Integer tensors (shapes, indices) stay with the CPU
// kernels, which run synchronised, so host code that reads them never races a device kernel.
#include "engine/backends/cuda/ops_util.h"

namespace ms::cuda {
namespace {

bool is_device_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

Expected<ScalarType> scalar_type(DType t) {
  switch (t) {
    case DType::F32: return ScalarType::F32;
    case DType::F16: return ScalarType::F16;
    case DType::BF16: return ScalarType::BF16;
    case DType::I32: return ScalarType::I32;
    case DType::I64: return ScalarType::I64;
    default: return Status::error(ErrorCode::Unsupported, "dtype");
  }
}

// A view shares its input's buffer; the CPU kernel only sets the output's shape (it reads the
// shape input, an integer tensor, never the data). A preallocated output (Graph-mode arena) is a
// device copy instead.
Status view(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.defined() && y.raw() != x.raw()) {
    DeviceInputs in(ctx);
    MS_ASSIGN_OR_RETURN(const Tensor* dx, in.get(0));
    ctx.set_impl("cuda:copy");
    MS_CUDA_CHECK(cudaMemcpyAsync(y.raw(), dx->raw(), y.nbytes(), cudaMemcpyDefault, cuda_backend(ctx).stream()));
    return Status::ok();
  }
  // The CPU kernel reads the shape input: it must be in host memory (else the fallback copies it).
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && !ctx.input(i).device().is_cpu()) return cpu_fallback(ctx);
  const ir::Node& node = ctx.node();
  runtime::KernelFn k = cpu::CpuBackend::kernels().find(node.op_type, node.domain);
  if (!k) return ctx.unsupported_case("no kernel for view op '" + node.op_type + "'");
  runtime::KernelContext cpu_ctx(node, ctx.opset(), cuda_backend(ctx).cpu(), ctx.input_ptrs(), ctx.outputs(),
                                 ctx.output_allocator(), ctx.subgraphs());
  ctx.set_impl("view");
  return k(cpu_ctx);
}

Status transpose(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t r = static_cast<int64_t>(x0.shape().size());
  if (!is_device_float(x0.dtype()) || !y.defined() || r > kMaxRank) return cpu_fallback(ctx);
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (int64_t k = r - 1; k >= 0; --k) perm.push_back(k);
  const Shape xs = row_major_strides(x0.shape());
  CopyDesc d;
  d.rank = static_cast<int>(r);
  const Shape ys = row_major_strides(y.shape());
  for (int64_t k = 0; k < r; ++k) {
    const int64_t p = normalize_axis(perm[static_cast<size_t>(k)], r);
    if (p < 0 || p >= r) return ctx.fail("perm out of range");
    d.dims[k] = y.shape()[static_cast<size_t>(k)];
    d.src_stride[k] = xs[static_cast<size_t>(p)];
    d.dst_stride[k] = ys[static_cast<size_t>(k)];
  }
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:transpose");
  return launched(ctx,
                  strided_copy(x->raw(), y.raw(), y.numel(), d, static_cast<int>(dtype_size(y.dtype())),
                               cuda_backend(ctx).stream()),
                  "transpose");
}

Status concat(runtime::KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  if (!y.defined() || !is_device_float(y.dtype()) || y.shape().size() > kMaxRank) return cpu_fallback(ctx);
  const int64_t r = static_cast<int64_t>(y.shape().size());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  const Shape ys = row_major_strides(y.shape());
  DeviceInputs in(ctx);
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(i));
    CopyDesc d;
    d.rank = static_cast<int>(r);
    const Shape xs = row_major_strides(x->shape());
    for (int64_t k = 0; k < r; ++k) {
      d.dims[k] = x->shape()[static_cast<size_t>(k)];
      d.src_stride[k] = xs[static_cast<size_t>(k)];
      d.dst_stride[k] = ys[static_cast<size_t>(k)];
    }
    char* dst = static_cast<char*>(y.raw()) +
                offset * ys[static_cast<size_t>(axis)] * static_cast<int64_t>(dtype_size(y.dtype()));
    MS_RETURN_IF_ERROR(launched(
        ctx,
        strided_copy(x->raw(), dst, x->numel(), d, static_cast<int>(dtype_size(y.dtype())), cuda_backend(ctx).stream()),
        "concat"));
    offset += x->shape()[static_cast<size_t>(axis)];
  }
  ctx.set_impl("cuda:concat");
  return Status::ok();
}

Status gather(runtime::KernelContext& ctx) {
  const Tensor& data0 = ctx.input(0);
  const Tensor& idx0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (!y.defined() || !is_device_float(data0.dtype()) || idx0.dtype() != DType::I64) return cpu_fallback(ctx);
  const int64_t r = static_cast<int64_t>(data0.shape().size());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= data0.shape()[static_cast<size_t>(k)];
  for (int64_t k = axis + 1; k < r; ++k) inner *= data0.shape()[static_cast<size_t>(k)];
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* data, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* idx, in.get(1));
  MS_ASSIGN_OR_RETURN(Tensor flag, device_scratch(ctx, sizeof(int)));
  CudaBackend& be = cuda_backend(ctx);
  MS_CUDA_CHECK(cudaMemsetAsync(flag.raw(), 0, sizeof(int), be.stream()));
  MS_RETURN_IF_ERROR(
      launched(ctx,
               cuda::gather(data->raw(), idx->data<int64_t>(), y.raw(), outer, data0.shape()[static_cast<size_t>(axis)],
                            idx0.numel(), inner, static_cast<int>(dtype_size(y.dtype())), static_cast<int*>(flag.raw()),
                            be.stream()),
               "gather"));
  int bad = 0;
  MS_CUDA_CHECK(cudaMemcpyAsync(&bad, flag.raw(), sizeof(int), cudaMemcpyDefault, be.stream()));
  MS_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  if (bad) return ctx.fail("index out of range for axis " + std::to_string(axis));
  ctx.set_impl("cuda:gather");
  return Status::ok();
}

Status cast(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  // Only float -> float on the device: integer results (shapes, indices) are read by host code.
  if (!y.defined() || !is_device_float(x0.dtype()) || !is_device_float(y.dtype())) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(ScalarType from, scalar_type(x0.dtype()));
  MS_ASSIGN_OR_RETURN(ScalarType to, scalar_type(y.dtype()));
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:cast");
  return launched(ctx, cuda::cast(x->raw(), from, y.raw(), to, y.numel(), cuda_backend(ctx).stream()), "cast");
}

}  // namespace

void register_data_ops(runtime::KernelRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) r.add(op, &view);
  r.add("Transpose", &transpose);
  r.add("Concat", &concat);
  r.add("Gather", &gather);
  r.add("Cast", &cast);
}

}  // namespace ms::cuda
