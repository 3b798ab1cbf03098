// CPU fallback for ops without a CUDA kernel (or a case the CUDA kernel does not cover): the node's
// CPU kernel runs on host copies. The move is explicit and visible: device inputs are copied to the
// host (after the stream drains), the kernel writes host outputs, and those are copied back into the
// device outputs; the implementation string says "cpu-fallback" and how many bytes moved, so the
// profiler shows every such step. Integer and bool outputs that were not preallocated stay on the
// host, where later shape inference and CPU kernels read them.
#include <cuda_runtime.h>

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_common.h"
#include "engine/runtime/custom_kernels.h"
#include "engine/runtime/fallback.h"

namespace ms::cuda {

namespace {

// Outputs and scratch of the CPU kernel: host memory.
class HostOutputs final : public runtime::OutputAllocator {
 public:
  Expected<Tensor> allocate(size_t, DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
};

// Why `ctx`'s node runs here: no CUDA kernel at all, or a case the CUDA kernel hands back (a dtype
// it does not compute, an attribute combination it does not cover).
std::string fallback_reason(runtime::KernelContext& ctx, const CudaBackend& be) {
  const ir::Node& node = ctx.node();
  if (!CudaBackend::kernels().find(node.op_type, node.domain)) return runtime::no_kernel_reason(be);
  std::string dtypes;
  for (const Tensor* t : ctx.input_ptrs())
    if (t && t->defined() && dtypes.find(dtype_name(t->dtype())) == std::string::npos)
      dtypes += (dtypes.empty() ? "" : ", ") + std::string(dtype_name(t->dtype()));
  return "case the cuda kernel does not cover (inputs " + dtypes + "): runs on the CPU";
}

// The node's CPU kernel on host copies of its device inputs, or, for a `metadata` op (Shape, Size:
// the kernel reads only dims), on the inputs as they are; its outputs go where the executor placed
// them.
Status run_cpu_kernel(runtime::KernelContext& ctx, bool metadata) {
  CudaBackend& be = cuda_backend(ctx);
  const ir::Node& node = ctx.node();
  runtime::KernelFn kernel = cpu::CpuBackend::kernels().find(node.op_type, node.domain);
  if (!kernel) kernel = runtime::find_custom_kernel(node.op_type, node.domain, DeviceType::CPU);
  if (!kernel) return ctx.unsupported_case("no CUDA or CPU kernel for op '" + node.op_type + "'");
  size_t to_host = 0, to_device = 0;
  // Shape arithmetic: integer and bool tensors live on the host, so an op with no float input or
  // output runs its CPU kernel where its data already is, with nothing copied. Not a fallback.
  bool host_values = true;

  // Inputs: host copies of the device ones.
  const auto in = ctx.input_ptrs();
  std::vector<Tensor> host_in(in.size());
  std::vector<const Tensor*> host_ptrs(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i] || !in[i]->defined()) continue;
    host_values = host_values && (metadata || (in[i]->device().is_cpu() && !is_float(in[i]->dtype())));
    if (metadata || in[i]->device().is_cpu()) {
      host_ptrs[i] = in[i];
      continue;
    }
    host_in[i] = Tensor::empty(in[i]->dtype(), in[i]->shape());
    if (in[i]->nbytes())
      MS_CUDA_CHECK(
          cudaMemcpyAsync(host_in[i].raw(), in[i]->raw(), in[i]->nbytes(), cudaMemcpyDeviceToHost, be.stream()));
    to_host += in[i]->nbytes();
    host_ptrs[i] = &host_in[i];
  }
  if (!metadata) MS_CUDA_CHECK(cudaStreamSynchronize(be.stream()));

  // Outputs: host tensors of the preallocated shapes (or none, for the kernel to allocate).
  auto outs = ctx.outputs();
  std::vector<Tensor> host_out(outs.size());
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].defined())
      host_out[i] = outs[i].device().is_cpu() ? outs[i] : Tensor::empty(outs[i].dtype(), outs[i].shape());

  HostOutputs host_alloc;
  runtime::KernelContext cpu_ctx(node, ctx.opset(), be.cpu(),
                                 std::span<const Tensor* const>(host_ptrs.data(), host_ptrs.size()),
                                 std::span<Tensor>(host_out.data(), host_out.size()), host_alloc, ctx.subgraphs());
  MS_RETURN_IF_ERROR(kernel(cpu_ctx));

  // Results back where the executor expects them.
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& h = host_out[i];
    if (!h.defined() || (outs[i].defined() && outs[i].raw() == h.raw())) continue;
    // Control-flow kernels (If, Loop) may hand back device tensors their subgraph produced.
    const bool from_host = h.device().is_cpu();
    if (outs[i].defined() && !outs[i].device().is_cpu()) {
      if (h.nbytes())
        MS_CUDA_CHECK(cudaMemcpyAsync(outs[i].raw(), h.raw(), h.nbytes(), cudaMemcpyDefault, be.stream()));
      if (from_host) to_device += h.nbytes();
    } else if (!outs[i].defined() && from_host && is_float(h.dtype())) {
      MS_ASSIGN_OR_RETURN(Tensor * d, ctx.allocate_output(i, h.dtype(), h.shape()));
      if (h.nbytes()) MS_CUDA_CHECK(cudaMemcpyAsync(d->raw(), h.raw(), h.nbytes(), cudaMemcpyDefault, be.stream()));
      to_device += h.nbytes();
    } else {
      outs[i] = h;  // integer/bool host values, device tensors of subgraphs, host output slots
    }
  }
  // Host temporaries must outlive the asynchronous copies.
  if (to_device) MS_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  for (const Tensor& h : host_out) host_values = host_values && (!h.defined() || !is_float(h.dtype()));
  const std::string impl = cpu_ctx.impl().empty() ? std::string("cpu") : cpu_ctx.impl();
  if (host_values && to_host == 0 && to_device == 0) {
    ctx.set_impl("host:" + impl);
    return Status::ok();
  }
  runtime::note_fallback(node, fallback_reason(ctx, be));
  ctx.set_impl("cpu-fallback:" + impl + " (" + std::to_string(to_host) + " B to host, " + std::to_string(to_device) +
               " B to device)");
  return Status::ok();
}

}  // namespace

Status cpu_fallback(runtime::KernelContext& ctx) { return run_cpu_kernel(ctx, false); }

Status host_op(runtime::KernelContext& ctx) { return cpu_fallback(ctx); }

Status metadata_op(runtime::KernelContext& ctx) { return run_cpu_kernel(ctx, true); }

}  // namespace ms::cuda
