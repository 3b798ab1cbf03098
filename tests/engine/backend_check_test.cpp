// The backend-check harness and the CUDA backend. Without a CUDA device (or without the toolkit at
// build time) the CUDA tests skip and say why; the harness is checked CPU against CPU, and against a
// backend with a deliberately wrong kernel.
#include "engine/runtime/backend_check.h"

#include <gtest/gtest.h>

#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"
#ifdef MODESCOPE_HAVE_CUDA
#include "engine/backends/cuda/cuda_backend.h"
#endif

namespace ms::runtime {
namespace {

// The CPU backend, except that Add adds one too many.
class WrongAddBackend final : public Backend {
 public:
  WrongAddBackend() : cpu_(create_cpu_backend(1)) {}
  std::string name() const override { return "wrong-add"; }
  Device device() const override { return {}; }
  Allocator& allocator() override { return cpu_->allocator(); }
  Allocator& arena_allocator() override { return cpu_->arena_allocator(); }
  KernelFn find_kernel(const ir::Node& node) const override {
    if (node.op_type == "Add") return &wrong_add;
    return cpu_->find_kernel(node);
  }
  void set_threads(int n) override { cpu_->set_threads(n); }
  int threads() const override { return cpu_->threads(); }
  Status copy_to_host(const Tensor& s, Tensor& d) override { return cpu_->copy_to_host(s, d); }
  Status copy_from_host(const Tensor& s, Tensor& d) override { return cpu_->copy_from_host(s, d); }

 private:
  static Status wrong_add(KernelContext& ctx) {
    Tensor& y = ctx.output(0);
    const Tensor& a = ctx.input(0);
    for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = a.data<float>()[i % a.numel()] + 1.f;
    ctx.set_impl("wrong");
    return Status::ok();
  }
  std::unique_ptr<Backend> cpu_;
};

TEST(BackendCheck, CpuAgainstCpuPassesEveryCase) {
  auto ref = create_cpu_backend(1);
  auto dut = create_cpu_backend(2);
  const auto cases = backend_check_cases();
  ASSERT_GE(cases.size(), 50u);
  for (const auto& c : cases) {
    const OpCaseResult r = run_op_case(*ref, *dut, c);
    EXPECT_TRUE(r.passed) << c.name << ": " << r.message;
    EXPECT_EQ(r.max_abs_error, 0.0) << c.name;  // same kernels, same answers
  }
}

TEST(BackendCheck, AWrongKernelFailsWithTheElement) {
  auto ref = create_cpu_backend(1);
  WrongAddBackend wrong;
  int add_cases = 0;
  for (const auto& c : backend_check_cases()) {
    if (c.op_type != "Add") continue;
    ++add_cases;
    const OpCaseResult r = run_op_case(*ref, wrong, c, /*perf_iters=*/2);
    EXPECT_FALSE(r.passed) << c.name;
    EXPECT_NE(r.message.find("element "), std::string::npos) << r.message;
    EXPECT_GT(r.max_abs_error, 0.5);
    EXPECT_EQ(r.impl, "wrong");
    EXPECT_GT(r.device_ms, 0.0);
  }
  EXPECT_EQ(add_cases, 2);
}

// Why the CUDA tests cannot run here ("" when they can).
std::string cuda_unavailable() {
#ifdef MODESCOPE_HAVE_CUDA
  const std::string why = cuda::probe_device();
  return why.empty() ? "" : "no CUDA device: " + why;
#else
  return "built without the CUDA toolkit";
#endif
}

TEST(CudaBackend, WithoutADeviceCudaFallsBackToTheCpuWithOneLine) {
  if (cuda_unavailable().empty()) GTEST_SKIP() << "a CUDA device is present: nothing falls back";
  auto choice = create_backend("cuda", 1);
  ASSERT_TRUE(choice.has_value()) << choice.status().message();
  EXPECT_EQ(choice->backend->name(), "cpu");
  EXPECT_FALSE(choice->note.empty());
  EXPECT_EQ(choice->note.find('\n'), std::string::npos) << choice->note;
  EXPECT_NE(choice->note.find("using the CPU"), std::string::npos) << choice->note;
}

TEST(CudaBackend, EveryOpCaseMatchesTheCpu) {
  if (const std::string why = cuda_unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto ref = create_cpu_backend(0);
  auto dev = create_backend("cuda", 0);
  ASSERT_TRUE(dev.has_value());
  ASSERT_EQ(dev->backend->name(), "cuda") << dev->note;
  int native = 0;
  for (const auto& c : backend_check_cases()) {
    const OpCaseResult r = run_op_case(*ref, *dev->backend, c);
    EXPECT_TRUE(r.passed) << c.name << " (" << r.impl << "): " << r.message;
    if (r.impl.rfind("cpu-fallback", 0) != 0) ++native;
    if (c.name == "Where/fallback") {
      EXPECT_EQ(r.impl.rfind("cpu-fallback", 0), 0u) << r.impl;
    }
  }
  EXPECT_GE(native, 40);
}

// Executors return host tensors; every element within 1e-3 relative of the CPU's.
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_TRUE(got[k].device().is_cpu()) << what;
    ASSERT_EQ(got[k].shape(), want[k].shape()) << what;
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      const float w = want[k].data<float>()[i];
      ASSERT_NEAR(got[k].data<float>()[i], w, 1e-3 + 1e-3 * std::abs(w)) << what << " output " << k << " element " << i;
    }
  }
}

TEST(CudaBackend, ZooModelsMatchTheCpuInBothModes) {
  if (const std::string why = cuda_unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto ref = create_cpu_backend(0);
  auto dev = create_backend("cuda", 0);
  ASSERT_TRUE(dev.has_value());
  ASSERT_EQ(dev->backend->name(), "cuda") << dev->note;
  for (const char* uri : {"zoo:mnist_mlp?batch=4", "zoo:resnet18?batch=2&size=64", "zoo:transformer_encoder?batch=2"}) {
    auto built = zoo::build_graph(std::string_view(uri));
    ASSERT_TRUE(built.has_value()) << uri << ": " << built.status().message();
    const ir::Graph& g = *built;
    TensorMap feeds;
    std::map<std::string, ir::ValueType> signature;
    for (const auto& name : g.inputs) {
      const ir::ValueType& t = g.value(name)->type;
      ASSERT_TRUE(t.is_static()) << uri << " input " << name;
      signature[name] = t;
      Tensor x = Tensor::zeros(t.dtype, *t.dims);
      if (t.dtype == DType::F32)
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 101) / 101.f - 0.5f;
      feeds[name] = x;
    }
    EagerExecutor cpu_exe(g, *ref);
    auto want = cpu_exe.run(feeds);
    ASSERT_TRUE(want.has_value()) << want.status().message();
    EagerExecutor eager(g, *dev->backend);
    auto got = eager.run(feeds);
    ASSERT_TRUE(got.has_value()) << uri << ": " << got.status().message();
    for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
      CompileOptions opts;
      opts.jit_level = level;
      auto exe = GraphExecutor::compile(g, *dev->backend, signature, opts);
      ASSERT_TRUE(exe.has_value()) << uri << ": " << exe.status().message();
      auto out = (*exe)->run(feeds);
      ASSERT_TRUE(out.has_value()) << uri << ": " << out.status().message();
      expect_close(*out, *want, std::string(uri) + (level == JitLevel::O1 ? " (O1)" : " (O2)"));
    }
    expect_close(*got, *want, std::string(uri) + " (eager)");
  }
}

}  // namespace
}  // namespace ms::runtime
