// Per-call cost of elementwise kernels on tiny tensors: the eager executor runs chains of
// thousands of such ops, so a kernel must add only ~100-200 ns beyond the arithmetic. Reports the
// figures and fails only far above the target (shared CI machines are noisy).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "engine/backends/cpu/cpu_backend.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

class NullAllocator final : public runtime::OutputAllocator {
 public:
  Expected<Tensor> allocate(size_t, DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
};

// Best-of-batches nanoseconds per call of the node's kernel, KernelContext built per call as the
// executor does; outputs preallocated.
double ns_per_call(const ir::Node& node, const std::vector<Tensor>& inputs, DType out_dtype, const Shape& out_shape) {
  static cpu::CpuBackend backend(1);
  runtime::KernelFn fn = cpu::CpuBackend::kernels().find(node.op_type);
  EXPECT_NE(fn, nullptr);
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  std::vector<Tensor> out = {Tensor::empty(out_dtype, out_shape)};
  NullAllocator alloc;
  constexpr int kCalls = 20000;
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      runtime::KernelContext ctx(node, 17, backend, in, out, alloc, nullptr);
      Status s = fn(ctx);
      if (!s.is_ok()) {
        ADD_FAILURE() << s.message();
        return 0;
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls);
  }
  return best;
}

TEST(ElementwisePerf, TinyTensorKernelOverhead) {
  std::vector<float> v(16, 1.5f);
  const Tensor a = Tensor::from_vector(v, {16});
  const Tensor b = Tensor::from_vector(v, {16});
  const Tensor row = Tensor::from_vector(std::vector<float>(4, 2.0f), {4});
  const Tensor m = Tensor::from_vector(v, {4, 4});
  const double add = ns_per_call(test::make_node("Add", 2), {a, b}, DType::F32, {16});
  const double relu = ns_per_call(test::make_node("Relu", 1), {a}, DType::F32, {16});
  const double bcast = ns_per_call(test::make_node("Add", 2), {m, row}, DType::F32, {4, 4});
  const double leaky = ns_per_call(test::make_node("LeakyRelu", 1, 1, {{"alpha", 0.1f}}), {a}, DType::F32, {16});
  std::cout << "[ per call ] Add " << add << " ns, Relu " << relu << " ns, Add[4,4]+[4] " << bcast
            << " ns, LeakyRelu " << leaky << " ns\n";
  EXPECT_LT(add, 1000);
  EXPECT_LT(relu, 1000);
  EXPECT_LT(bcast, 1500);
  EXPECT_LT(leaky, 1500);
}

}  // namespace
}  // namespace ms
