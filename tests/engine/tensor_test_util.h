// Helpers shared by the tensor/shape op tests.
#pragma once

#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {

template <class E> Tensor T(std::vector<E> values, Shape shape) {
  return Tensor::from_vector<E>(values, std::move(shape));
}

// Runs the kernel with no preallocated outputs, as a graph executor does when a shape was unknown
// before the run: the kernel allocates its outputs or returns views.
inline Expected<std::vector<Tensor>> run_unallocated(const ir::Node& node, const std::vector<Tensor>& inputs,
                                                     int64_t opset = 17) {
  class PlainAllocator final : public runtime::OutputAllocator {
   public:
    Expected<Tensor> allocate(size_t, DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
    Expected<Tensor> scratch(DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
  };
  static cpu::CpuBackend* backend = new cpu::CpuBackend(1);
  runtime::KernelFn fn = cpu::CpuBackend::kernels().find(node.op_type, node.domain);
  if (!fn) return unsupported("no kernel for " + node.op_type);
  std::vector<const Tensor*> in_ptrs;
  for (const Tensor& t : inputs) in_ptrs.push_back(t.defined() ? &t : nullptr);
  std::vector<Tensor> outputs(node.outputs.size());
  PlainAllocator alloc;
  runtime::KernelContext ctx(node, opset, *backend, in_ptrs, outputs, alloc, nullptr);
  MS_RETURN_IF_ERROR(fn(ctx));
  return outputs;
}

}  // namespace ms::test
