// A compiled graph on a device keeps integer values (shape arithmetic) in host memory, out of its
// device arena, where the host kernels that compute and read them are; float values live in the
// device's memory. Checked with a backend that labels its memory as a device's (host memory under
// the label, so the CPU kernels still run) and records, for every kernel call, where its inputs are.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/compiler/compile.h"
#include "tests/app/forwarding_backend.h"
#include "tests/profiler/test_util.h"

namespace ms::session {
namespace {

// Host memory labelled as the device's.
class LabelledAllocator final : public runtime::Allocator {
 public:
  Device device() const override { return {DeviceType::CUDA, 0}; }
  void* allocate(size_t bytes) override { return host_.allocate(bytes); }
  void deallocate(void* p, size_t bytes) override { host_.deallocate(p, bytes); }
  runtime::AllocatorStats stats() const override { return {}; }

 private:
  runtime::HostAllocator host_;
};

struct Seen {
  std::string op;
  DType dtype;
  DeviceType device;
};
std::vector<Seen> seen;

class DeviceLabelledBackend final : public testing::ForwardingBackend {
 public:
  Device device() const override { return {DeviceType::CUDA, 0}; }
  runtime::Allocator& allocator() override { return device_; }
  runtime::Allocator& arena_allocator() override { return device_; }
  // As the CUDA backend: integer and bool values on the host.
  runtime::Allocator& allocator_for(DType t) override {
    return is_float(t) ? static_cast<runtime::Allocator&>(device_) : host_;
  }
  runtime::KernelFn find_kernel(const ir::Node&) const override { return &recording_kernel; }
  runtime::Backend* folding_backend() override { return &cpu(); }

 private:
  static Status recording_kernel(runtime::KernelContext& ctx) {
    for (const Tensor* t : ctx.input_ptrs())
      if (t && t->defined()) seen.push_back({ctx.node().op_type, t->dtype(), t->device().type});
    auto& self = static_cast<DeviceLabelledBackend&>(ctx.backend());
    runtime::KernelFn k = self.cpu().find_kernel(ctx.node());
    if (!k) return ctx.unsupported_case("no kernel");
    return k(ctx);
  }
  LabelledAllocator device_;
  runtime::HostAllocator host_;
};

// x [N,3,4] -> Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) -> Reshape(x) -> Relu: [N, 12]. The
// batch is symbolic, so the shape arithmetic cannot fold and runs each time.
ir::Graph reshape_by_batch() {
  using prof::test::make_node;
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"x"};
  g.add_value(
      ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{-1, 3, 4}, {"N", "", ""}}, {}, std::nullopt});
  auto constant = [&](const std::string& name, std::vector<int64_t> v, Shape shape) {
    g.add_value(ir::Value{name,
                          ir::ValueType{DType::I64, shape, std::vector<std::string>(shape.size())},
                          {},
                          Tensor::from_vector<int64_t>(v, shape)});
  };
  constant("zero", {0}, {});
  constant("axis0", {0}, {1});
  constant("rest", {-1}, {1});
  g.add_node(make_node("Shape", {"x"}, {"s"}));
  g.add_node(make_node("Gather", {"s", "zero"}, {"n"}));
  g.add_node(make_node("Unsqueeze", {"n", "axis0"}, {"n1"}));
  g.add_node(make_node("Concat", {"n1", "rest"}, {"shape"})).attrs["axis"] = ir::Attribute(int64_t{0});
  g.add_node(make_node("Reshape", {"x", "shape"}, {"flat"}));
  g.add_node(make_node("Relu", {"flat"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

TEST(DeviceValues, CompiledGraphKeepsIntegersOnTheHostAndFloatsOnTheDevice) {
  DeviceLabelledBackend backend;
  const ir::Graph g = reshape_by_batch();
  for (auto level : {compiler::JitLevel::O1, compiler::JitLevel::O2}) {
    compiler::CompileOptions opts;
    opts.jit_level = level;
    auto exe = compiler::compile_executor(g, backend, {{"x", g.value("x")->type}}, opts);
    ASSERT_TRUE(exe.has_value()) << exe.status().message();
    Tensor x = Tensor::zeros(DType::F32, {2, 3, 4});
    for (int i = 0; i < 24; ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2.f;
    seen.clear();
    auto y = (*exe)->run({{"x", x}});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    ASSERT_EQ((*y)[0].shape(), (Shape{2, 12}));
    for (int i = 0; i < 24; ++i) EXPECT_EQ((*y)[0].data<float>()[i], std::max(0.f, x.data<float>()[i]));
    int ints = 0, floats = 0;
    for (const Seen& s : seen) {
      if (s.dtype == DType::I64) {
        ++ints;
        EXPECT_EQ(s.device, DeviceType::CPU) << s.op << " read an integer value from device memory";
      } else if (s.op == "Relu") {
        ++floats;
        EXPECT_EQ(s.device, DeviceType::CUDA) << "Relu's input is not in the device's memory";
      }
    }
    EXPECT_GE(ints, 4);  // the shape arithmetic ran (it cannot fold with a symbolic batch)
    EXPECT_EQ(floats, 1);
  }
}

}  // namespace
}  // namespace ms::session
