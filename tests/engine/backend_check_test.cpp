// The backend-check harness and the CUDA backend. Without a CUDA device (or without the toolkit at
// build time) the CUDA tests skip and say why; the harness is checked CPU against CPU, and against a
// backend with a deliberately wrong kernel.
#include "engine/runtime/backend_check.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"
#ifdef MODESCOPE_HAVE_CUDA
#include <fstream>

#include "engine/backends/cuda/cublaslt_library.h"
#include "engine/backends/cuda/cuda_backend.h"
#endif

namespace ms::runtime {
namespace {

using backends::create_backend;
using backends::create_cpu_backend;
using compiler::CompileOptions;
using compiler::JitLevel;

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
    if (c.op_type != "Add" || c.inputs[0].dtype() != DType::F32) continue;  // the wrong kernel writes f32
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

TEST(CudaFallback, WithoutADeviceCudaFallsBackToTheCpuWithOneLine) {
  if (cuda_unavailable().empty()) GTEST_SKIP() << "a CUDA device is present: nothing falls back";
  auto choice = create_backend("cuda", 1);
  ASSERT_TRUE(choice.has_value()) << choice.status().message();
  EXPECT_EQ(choice->backend->name(), "cpu");
  EXPECT_FALSE(choice->note.empty());
  EXPECT_EQ(choice->note.find('\n'), std::string::npos) << choice->note;
  EXPECT_NE(choice->note.find("using the CPU"), std::string::npos) << choice->note;
}

#ifdef MODESCOPE_HAVE_CUDA
bool process_maps(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(library) != std::string::npos) return true;
  return false;
}

// cuBLASLt (about 150 MB resident once loaded) is opened by the first CUDA backend, not at start-up:
// a fresh process maps it only once a CUDA backend exists (never where "cuda" falls back to the CPU).
TEST(CublasLtLibrary, OnlyACudaBackendOpensIt) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";  // a fresh process: other tests may have opened it
  EXPECT_EXIT(
      {
        bool ok = !process_maps("libcublasLt");
        auto choice = create_backend("cuda", 1);
        ok = ok && choice.has_value() && process_maps("libcublasLt") == (choice->backend->name() == "cuda");
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The toolkit's library opens, with every entry point the backend calls, with or without a device.
TEST(CublasLtLibrary, OpensFromTheToolkitWithEveryEntryPoint) {
  std::string why;
  const cuda::CublasLt* api = cuda::open_cublaslt(&why);
  ASSERT_NE(api, nullptr) << why;
  for (const void* fn :
       {reinterpret_cast<const void*>(api->create), reinterpret_cast<const void*>(api->destroy),
        reinterpret_cast<const void*>(api->matmul), reinterpret_cast<const void*>(api->algo_get_heuristic),
        reinterpret_cast<const void*>(api->desc_create), reinterpret_cast<const void*>(api->desc_set_attribute),
        reinterpret_cast<const void*>(api->desc_destroy), reinterpret_cast<const void*>(api->layout_destroy),
        reinterpret_cast<const void*>(api->preference_create), reinterpret_cast<const void*>(api->preference_destroy),
        reinterpret_cast<const void*>(api->preference_set_attribute), reinterpret_cast<const void*>(api->layout_create),
        reinterpret_cast<const void*>(api->layout_set_attribute)})
    EXPECT_NE(fn, nullptr);
  EXPECT_TRUE(process_maps("libcublasLt"));
  EXPECT_EQ(cuda::open_cublaslt(nullptr), api);  // opened once
}
#endif

// The CUDA tests: each skips with the reason when no CUDA device is usable; `cpu` is the reference.
class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = cuda_unavailable(); !why.empty()) GTEST_SKIP() << why;
    auto choice = create_backend("cuda", 0);
    ASSERT_TRUE(choice.has_value()) << choice.status().message();
    ASSERT_EQ(choice->backend->name(), "cuda") << choice->note;
    dev = std::move(choice->backend);
  }
  std::unique_ptr<Backend> cpu = create_cpu_backend(0);
  std::unique_ptr<Backend> dev;
};

TEST_F(CudaBackend, EveryOpCaseMatchesTheCpu) {
  int native = 0;
  for (const auto& c : backend_check_cases()) {
    const OpCaseResult r = run_op_case(*cpu, *dev, c);
    EXPECT_TRUE(r.passed) << c.name << " (" << r.impl << "): " << r.message;
    if (r.impl.rfind("cpu-fallback", 0) != 0) ++native;
    if (c.name == "Hardmax/fallback") {
      EXPECT_EQ(r.impl.rfind("cpu-fallback", 0), 0u) << r.impl;
    }
    // Data movement, Where, inference Dropout, the variadic Max/Min, the pools' gradients and the
    // bf16 ops of a mixed-precision graph run on the device.
    for (const char* op : {"Slice/",
                           "Split/",
                           "Expand/",
                           "Pad/",
                           "Where/",
                           "Dropout/",
                           "Max/",
                           "Min/",
                           "MaxPoolGrad/",
                           "AveragePoolGrad/",
                           "bf16/",
                           "Equal/",
                           "Less/",
                           "GreaterOrEqual/",
                           "ScatterND/",
                           "OneHot/",
                           "ConstantOfShape/",
                           "Constant/",
                           "Cast/i64",
                           "ReduceSum/axes",
                           "ReduceMean/axes"})
      if (c.name.rfind(op, 0) == 0) {
        EXPECT_TRUE(r.impl.rfind("cuda:", 0) == 0 || r.impl.rfind("cudnn:", 0) == 0) << c.name << ": " << r.impl;
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

// Runs the compiled graph `runs` times, a different input each run, against the CPU; from the
// second run on it must replay its recording.
void expect_replays_match_cpu(const ir::Graph& g, compiler::CompiledExecutor& exe, Backend& cpu, int runs) {
  const ir::ValueType& t = g.value(g.inputs[0])->type;
  EagerExecutor cpu_exe(g, cpu);
  for (int run = 0; run < runs; ++run) {
    Tensor x = Tensor::zeros(t.dtype, *t.dims);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = static_cast<float>((i * (37 + 6 * run)) % 101) / 101.f - 0.5f;
    auto want = cpu_exe.run({{g.inputs[0], x}});
    ASSERT_TRUE(want.has_value()) << want.status().message();
    auto got = exe.run({{g.inputs[0], x}});
    ASSERT_TRUE(got.has_value()) << "run " << run << ": " << got.status().message();
    expect_close(*got, *want, "run " + std::to_string(run));
    EXPECT_EQ(exe.replayed(), run >= 1) << "run " << run << ": " << exe.replay_note();
  }
}

TEST_F(CudaBackend, ZooModelsMatchTheCpuInBothModes) {
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
    EagerExecutor cpu_exe(g, *cpu);
    auto want = cpu_exe.run(feeds);
    ASSERT_TRUE(want.has_value()) << want.status().message();
    EagerExecutor eager(g, *dev);
    auto got = eager.run(feeds);
    ASSERT_TRUE(got.has_value()) << uri << ": " << got.status().message();
    for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
      CompileOptions opts;
      opts.jit_level = level;
      auto exe = compiler::compile_executor(g, *dev, signature, opts);
      ASSERT_TRUE(exe.has_value()) << uri << ": " << exe.status().message();
      auto out = (*exe)->run(feeds);
      ASSERT_TRUE(out.has_value()) << uri << ": " << out.status().message();
      expect_close(*out, *want, std::string(uri) + (level == JitLevel::O1 ? " (O1)" : " (O2)"));
    }
    expect_close(*got, *want, std::string(uri) + " (eager)");
  }
}

// O2 on CUDA records the whole graph once (second run) and replays it: every run, with fresh inputs
// each time, matches the CPU for those inputs.
TEST_F(CudaBackend, O2ReplaysOneCudaGraphWithFreshInputs) {
  auto built = zoo::build_graph(std::string_view("zoo:resnet18?batch=2&size=64"));
  ASSERT_TRUE(built.has_value()) << built.status().message();
  const ir::Graph& g = *built;
  ASSERT_EQ(g.inputs.size(), 1u);
  const ir::ValueType& t = g.value(g.inputs[0])->type;
  CompileOptions opts;
  opts.jit_level = JitLevel::O2;
  auto exe = compiler::compile_executor(g, *dev, {{g.inputs[0], t}}, opts);
  ASSERT_TRUE(exe.has_value()) << exe.status().message();
  EXPECT_EQ((*exe)->replay_note(), "");
  expect_replays_match_cpu(g, **exe, *cpu, 4);
  EXPECT_GT((*exe)->last_stats().kernels, 20);
}

#ifdef MODESCOPE_HAVE_CUDA
// Device copies of constants (and their NHWC filters) last as long as the host buffer: once a model
// is gone, the next upload gives its device memory back, whatever the count.
TEST_F(CudaBackend, DeviceCopiesOfGoneConstantsAreGivenBack) {
  auto& be = static_cast<cuda::CudaBackend&>(*dev);
  const size_t before = be.cached_uploads();
  {
    auto built = zoo::build_graph(std::string_view("zoo:resnet18?batch=1&size=64"));
    ASSERT_TRUE(built.has_value()) << built.status().message();
    const ir::Graph& g = *built;
    CompileOptions opts;
    opts.jit_level = JitLevel::O1;
    auto exe = compiler::compile_executor(g, *dev, {{g.inputs[0], g.value(g.inputs[0])->type}}, opts);
    ASSERT_TRUE(exe.has_value()) << exe.status().message();
    const ir::ValueType& t = g.value(g.inputs[0])->type;
    auto y = (*exe)->run({{g.inputs[0], Tensor::zeros(t.dtype, *t.dims)}});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    EXPECT_GT(be.cached_uploads(), before + 20);  // the convs' weights at least
  }
  Tensor w = Tensor::zeros(DType::F32, {8, 4, 3, 3});
  auto on_device = be.to_device(w);
  ASSERT_TRUE(on_device.has_value()) << on_device.status().message();
  EXPECT_EQ(be.cached_uploads(), before + 1);  // the model's copies went before this one was made
  auto again = be.to_device(w);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->raw(), on_device->raw());  // a live buffer's copy is kept
  auto filter = be.filter_nhwc(*on_device);
  ASSERT_TRUE(filter.has_value()) << filter.status().message();
  EXPECT_EQ(be.cached_uploads(), before + 2);
  w = Tensor();
  on_device = Tensor(), again = Tensor(), filter = Tensor();
  ASSERT_TRUE(be.to_device(Tensor::zeros(DType::F32, {4})).has_value());
  EXPECT_EQ(be.cached_uploads(), before + 1);  // the copy and its filter went with the buffer
}
#endif

// bf16 (and fp16) Graph O2 on the device keeps the convs' activations channels-last (NHWC) between them: the
// result matches the same graph compiled without the channels-last pass (NCHW, cuDNN's own
// transposes) to bf16's precision, in the first (eager) run and in the replays after it, and the
// f32 CPU result to AMP's.
TEST_F(CudaBackend, LowPrecisionChannelsLastMatchesTheNchwGraph) {
  if (!dev->native_bf16()) GTEST_SKIP() << "no native bf16 on this device (sm_80 and later)";
  // bf16 and fp16 (--precision fp16: the same lists in f16).
  for (DType low : {DType::BF16, DType::F16})
    for (const char* uri : {"zoo:resnet18?batch=2&size=64", "zoo:mobilenet_v2?batch=2&size=64&width=16"}) {
      auto built = zoo::build_graph(std::string_view(uri));
      ASSERT_TRUE(built.has_value()) << uri << ": " << built.status().message();
      const ir::Graph& g = *built;
      const ir::ValueType& t = g.value(g.inputs[0])->type;
      CompileOptions opts;
      opts.jit_level = JitLevel::O2;
      opts.amp = compiler::AmpLevel::O2;
      opts.amp_input_layers_f32 = true;
      opts.amp_type = low;
      auto nhwc = compiler::compile_executor(g, *dev, {{g.inputs[0], t}}, opts);
      ASSERT_TRUE(nhwc.has_value()) << uri << ": " << nhwc.status().message();
      int marked = 0;
      for (const auto& n : (*nhwc)->graph().nodes()) marked += n.attr_int("layout_block", -1) == 0 ? 1 : 0;
      EXPECT_GE(marked, 10) << uri;
      opts.disabled_passes = {"channels-last"};
      auto nchw = compiler::compile_executor(g, *dev, {{g.inputs[0], t}}, opts);
      ASSERT_TRUE(nchw.has_value()) << uri << ": " << nchw.status().message();
      EagerExecutor cpu_exe(g, *cpu);
      for (int run = 0; run < 3; ++run) {
        Tensor x = Tensor::zeros(t.dtype, *t.dims);
        for (int64_t i = 0; i < x.numel(); ++i)
          x.data<float>()[i] = static_cast<float>((i * (37 + 6 * run)) % 101) / 101.f - 0.5f;
        auto a = (*nhwc)->run({{g.inputs[0], x}});
        auto b = (*nchw)->run({{g.inputs[0], x}});
        auto want = cpu_exe.run({{g.inputs[0], x}});
        ASSERT_TRUE(a.has_value() && b.has_value() && want.has_value())
            << uri << " " << dtype_name(low) << " run " << run;
        const Tensor& ya = (*a)[0];
        const Tensor& yb = (*b)[0];
        const Tensor& yw = (*want)[0];
        ASSERT_EQ(ya.shape(), yw.shape());
        float scale = 0.f, d_nchw = 0.f, d_cpu = 0.f;
        for (int64_t i = 0; i < yw.numel(); ++i) scale = std::max(scale, std::abs(yw.data<float>()[i]));
        for (int64_t i = 0; i < yw.numel(); ++i) {
          d_nchw = std::max(d_nchw, std::abs(ya.data<float>()[i] - yb.data<float>()[i]));
          d_cpu = std::max(d_cpu, std::abs(ya.data<float>()[i] - yw.data<float>()[i]));
        }
        EXPECT_LE(d_nchw, 0.03f * scale + 1e-4f)
            << uri << " " << dtype_name(low) << " run " << run << " (vs NCHW bf16)";
        EXPECT_LE(d_cpu, 0.08f * scale + 1e-4f) << uri << " " << dtype_name(low) << " run " << run << " (vs f32 CPU)";
      }
      if (std::string(uri).find("resnet") != std::string::npos) {
        EXPECT_EQ((*nhwc)->replay_note(), "") << uri;
      }
    }
}

// O2 with MODESCOPE_CUDA_STREAMS=4: the Inception block's branches go to separate streams (joined by
// events, also inside the recorded graph); every run matches the CPU.
TEST_F(CudaBackend, O2BranchesOnStreamsMatchTheCpu) {
  auto built = zoo::build_graph(std::string_view("zoo:inception_block?batch=2"));
  ASSERT_TRUE(built.has_value()) << built.status().message();
  const ir::Graph& g = *built;
  const ir::ValueType& t = g.value(g.inputs[0])->type;
  CompileOptions opts;
  opts.jit_level = JitLevel::O2;
  setenv("MODESCOPE_CUDA_STREAMS", "4", 1);
  auto exe = compiler::compile_executor(g, *dev, {{g.inputs[0], t}}, opts);
  unsetenv("MODESCOPE_CUDA_STREAMS");
  ASSERT_TRUE(exe.has_value()) << exe.status().message();
  // Without the setting: one stream.
  auto single = compiler::compile_executor(g, *dev, {{g.inputs[0], t}}, opts);
  ASSERT_TRUE(single.has_value()) << single.status().message();
  for (int k : (*single)->step_threads()) EXPECT_EQ(k, 0);
  int streams = 1;
  for (int k : (*exe)->step_threads()) streams = std::max(streams, k + 1);
  EXPECT_GE(streams, 2);
  expect_replays_match_cpu(g, **exe, *cpu, 3);
}

// The encoder's attention heads on streams: its matmuls read operands at whatever offsets the
// widened plan gives them (cuBLASLt is told their alignment).
TEST_F(CudaBackend, TransformerOnStreamsMatchesTheCpu) {
  auto built = zoo::build_graph(std::string_view("zoo:transformer_encoder?batch=2"));
  ASSERT_TRUE(built.has_value()) << built.status().message();
  const ir::Graph& g = *built;
  TensorMap feeds;
  std::map<std::string, ir::ValueType> signature;
  for (const auto& name : g.inputs) {
    const ir::ValueType& t = g.value(name)->type;
    signature[name] = t;
    Tensor x = Tensor::zeros(t.dtype, *t.dims);
    if (t.dtype == DType::F32)
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 29) % 89) / 89.f - 0.5f;
    feeds[name] = x;
  }
  EagerExecutor cpu_exe(g, *cpu);
  auto want = cpu_exe.run(feeds);
  ASSERT_TRUE(want.has_value()) << want.status().message();
  CompileOptions opts;
  opts.jit_level = JitLevel::O2;
  setenv("MODESCOPE_CUDA_STREAMS", "4", 1);
  auto exe = compiler::compile_executor(g, *dev, signature, opts);
  unsetenv("MODESCOPE_CUDA_STREAMS");
  ASSERT_TRUE(exe.has_value()) << exe.status().message();
  for (int run = 0; run < 3; ++run) {
    auto got = (*exe)->run(feeds);
    ASSERT_TRUE(got.has_value()) << "run " << run << ": " << got.status().message();
    expect_close(*got, *want, "transformer on streams, run " + std::to_string(run));
  }
}

// One node `op` (x [4,3], constant indices {2, 0}) compiled at O2 on the device.
Expected<std::unique_ptr<compiler::CompiledExecutor>> one_node_o2(Backend& dev, const char* op) {
  ir::Graph g;
  g.inputs = {"x"};
  const ir::ValueType xt{DType::F32, std::vector<int64_t>{4, 3}, {"", ""}};
  g.add_value(ir::Value{"x", xt, {}, std::nullopt});
  g.add_value(ir::Value{
      "idx", ir::ValueType{DType::I64, std::vector<int64_t>{2}, {""}}, {}, Tensor::from_vector<int64_t>({2, 0}, {2})});
  ir::Node n;
  n.op_type = op;
  n.name = "pick";
  n.inputs = {"x"};
  if (std::string(op) == "Gather") n.inputs.push_back("idx");
  n.outputs = {"y"};
  g.add_node(n);
  g.outputs = {"y"};
  CompileOptions opts;
  opts.jit_level = JitLevel::O2;
  return compiler::compile_executor(g, dev, {{"x", xt}}, opts);
}

// A Gather with constant indices checks them on the host before it launches: it is recorded and
// replayed. A step that cannot be recorded (an op without a CUDA kernel) keeps the runs step by
// step, and the note names it.
TEST_F(CudaBackend, ReplayNoteNamesTheStepThatCannotBeRecorded) {
  Tensor x = Tensor::zeros(DType::F32, {4, 3});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i);
  auto gather = one_node_o2(*dev, "Gather");
  ASSERT_TRUE(gather.has_value()) << gather.status().message();
  for (int run = 0; run < 3; ++run) {
    auto y = (*gather)->run({{"x", x}});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    EXPECT_EQ((*gather)->replayed(), run >= 1) << (*gather)->replay_note();
    EXPECT_FLOAT_EQ((*y)[0].data<float>()[0], 6.f);
    EXPECT_FLOAT_EQ((*y)[0].data<float>()[3], 0.f);
  }
  auto hardmax = one_node_o2(*dev, "Hardmax");
  ASSERT_TRUE(hardmax.has_value()) << hardmax.status().message();
  EXPECT_NE((*hardmax)->replay_note().find("node 'pick' (Hardmax #1) runs on the CPU"), std::string::npos)
      << (*hardmax)->replay_note();
  for (int run = 0; run < 2; ++run) {
    auto y = (*hardmax)->run({{"x", x}});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    EXPECT_FALSE((*hardmax)->replayed());
    EXPECT_FLOAT_EQ((*y)[0].data<float>()[2], 1.f);  // each row's maximum is its last element
    EXPECT_FLOAT_EQ((*y)[0].data<float>()[0], 0.f);
  }
}

// The CPU backend has nothing to record: O2 runs step by step, with no note.
TEST(GraphReplay, CpuRunsStepByStepWithoutANote) {
  auto cpu = create_cpu_backend(1);
  auto built = zoo::build_graph(std::string_view("zoo:mnist_mlp?batch=2"));
  ASSERT_TRUE(built.has_value()) << built.status().message();
  const ir::Graph& g = *built;
  CompileOptions opts;
  opts.jit_level = JitLevel::O2;
  auto exe = compiler::compile_executor(g, *cpu, {{g.inputs[0], g.value(g.inputs[0])->type}}, opts);
  ASSERT_TRUE(exe.has_value()) << exe.status().message();
  const ir::ValueType& t = g.value(g.inputs[0])->type;
  for (int run = 0; run < 3; ++run) {
    auto y = (*exe)->run({{g.inputs[0], Tensor::zeros(t.dtype, *t.dims)}});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    EXPECT_FALSE((*exe)->replayed());
  }
  EXPECT_EQ((*exe)->replay_note(), "");
}

}  // namespace
}  // namespace ms::runtime
