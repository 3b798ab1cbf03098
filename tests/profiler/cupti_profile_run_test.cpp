// profile_run's GPU path without a GPU: a CPU backend that reports a CUDA device drives the CUPTI
// wiring (a scripted collector stands in for CUPTI, or the real one fails to start here), and a
// plain CPU run is unaffected.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "engine/backends/select.h"
#include "profiler/record/cupti_collector.h"
#include "profiler/record/profile_run.h"
#include "test_util.h"

namespace ms::prof {
namespace {

// The CPU backend under a CUDA device id: runs the same kernels, makes profile_run take its GPU path.
class CudaLabelledBackend final : public runtime::Backend {
 public:
  CudaLabelledBackend() : cpu_(backends::create_cpu_backend(1)) {}
  std::string name() const override { return "cuda"; }
  Device device() const override { return {DeviceType::CUDA, 0}; }
  runtime::Allocator& allocator() override { return cpu_->allocator(); }
  runtime::Allocator& arena_allocator() override { return cpu_->arena_allocator(); }
  runtime::KernelFn find_kernel(const ir::Node& node) const override { return cpu_->find_kernel(node); }
  void set_threads(int n) override { cpu_->set_threads(n); }
  int threads() const override { return cpu_->threads(); }
  void synchronize() override { ++syncs; }
  Status copy_to_host(const Tensor& src, Tensor& dst) override { return cpu_->copy_to_host(src, dst); }
  Status copy_from_host(const Tensor& src, Tensor& dst) override { return cpu_->copy_from_host(src, dst); }
  int syncs = 0;

 private:
  std::unique_ptr<runtime::Backend> cpu_;
};

CudaLabelledBackend& cuda_backend() {
  static CudaLabelledBackend be;  // outlives every trace and output of the tests
  return be;
}

// What the scripted collector saw; owned by the test, since profile_run destroys the collector.
struct Script {
  int starts = 0, depth = 0;
  std::vector<std::pair<uint64_t, int64_t>> pushed;
};

// Answers each pushed external id with one kernel on stream 1 (GPU clock = host clock), the way
// CUPTI reports the work launched inside the op.
struct ScriptedCollector final : CuptiCollector {
  explicit ScriptedCollector(Script& script) : s(script) {}
  Status start() override {
    active_ = true;
    ++s.starts;
    return Status::ok();
  }
  Expected<GpuActivity> stop() override {
    active_ = false;
    GpuActivity a;
    uint32_t corr = 0;
    for (const auto& [node, ts] : s.pushed) {
      GpuKernelRecord k;
      k.correlation = ++corr;
      k.stream = 1;
      k.start_gpu = static_cast<uint64_t>(ts);
      k.end_gpu = static_cast<uint64_t>(ts) + 1000;
      k.name = "gpu_kernel";
      k.node = node;
      a.kernels.push_back(k);
    }
    a.dropped_records = 1;
    return a;
  }
  bool active() const override { return active_; }
  void push_external(uint64_t id) override {
    s.pushed.emplace_back(id, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count());
    ++s.depth;
  }
  void pop_external() override { --s.depth; }
  bool active_ = false;
  Script& s;
};

ProfileOptions options(runtime::ExecMode mode) {
  ProfileOptions po;
  po.mode = mode;
  po.iters = 2;
  po.warmup = 1;
  return po;
}

TEST(CuptiProfileRun, OpsPushTheirNodeAndKernelsLandOnStreamTracks) {
  for (runtime::ExecMode mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    SCOPED_TRACE(runtime::exec_mode_name(mode));
    Script script;
    bool created = false;
    ProfileOptions po = options(mode);
    po.gpu_collector = [&]() -> Expected<std::unique_ptr<CuptiCollector>> {
      auto c = std::make_unique<ScriptedCollector>(script);
      created = true;
      return std::unique_ptr<CuptiCollector>(std::move(c));
    };
    const int syncs0 = cuda_backend().syncs;
    auto run = profile_run(test::small_net(), test::small_inputs(), cuda_backend(), po);
    ASSERT_TRUE(run) << run.status().message();
    ASSERT_TRUE(created);
    EXPECT_EQ(script.starts, 1);
    EXPECT_EQ(script.depth, 0);               // every push popped
    EXPECT_GE(cuda_backend().syncs - syncs0, 2);  // before start and before stop
    EXPECT_TRUE(run->gpu_note.empty()) << run->gpu_note;
    const Trace& t = *run->trace;
    size_t ops = 0;
    for (const Event& e : t.events) ops += e.kind == EventKind::Op;
    EXPECT_GE(ops, 2u);
    EXPECT_EQ(script.pushed.size(), ops);  // timed iterations only: warm-up is not collected
    EXPECT_EQ(run->gpu_records, ops);
    EXPECT_EQ(t.meta("gpu_activity"), "cupti");
    EXPECT_EQ(t.meta("gpu_dropped_records"), "1");
    size_t gpu_kernels = 0;
    std::set<int32_t> iterations;
    for (const Event& e : t.events) {
      if (t.tracks[e.track].kind != TrackKind::GpuStream) continue;
      ++gpu_kernels;
      const NodeInfo* n = t.node_of(e);
      ASSERT_NE(n, nullptr);
      EXPECT_FALSE(n->name.empty());  // a node of the graph that ran
      iterations.insert(e.iteration);
    }
    EXPECT_EQ(gpu_kernels, ops);
    EXPECT_EQ(iterations, (std::set<int32_t>{0, 1}));
    EXPECT_FALSE(t.meta("clock_origin_ns").empty());
    for (const Event& e : t.events) EXPECT_GE(e.ts_ns, 0);  // GPU events share the host origin
  }
}

TEST(CuptiProfileRun, CollectorThatCannotStartLeavesTheHostProfileAndSaysWhy) {
  // The real collector: on this machine (no device or driver, or a build without CUDA) it fails.
  auto probe = create_cupti_collector();
  if (probe) {
    const Status s = (*probe)->start();
    if (s.is_ok()) {
      (void)(*probe)->stop();
      GTEST_SKIP() << "CUPTI starts here: the failure path is not reachable";
    }
  }
  auto run = profile_run(test::small_net(), test::small_inputs(), cuda_backend(), options(runtime::ExecMode::PyNative));
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_NE(run->gpu_note.find("CUPTI"), std::string::npos) << run->gpu_note;
  EXPECT_EQ(run->gpu_note.find('\n'), std::string::npos);
  const Trace& t = *run->trace;
  EXPECT_EQ(t.meta("gpu_activity"), "none");
  EXPECT_EQ(t.meta("gpu_note"), "GPU kernels missing: " + run->gpu_note);
  size_t ops = 0;
  for (const Event& e : t.events) {
    ops += e.kind == EventKind::Op;
    EXPECT_NE(t.tracks[e.track].kind, TrackKind::GpuStream);
  }
  EXPECT_EQ(ops, 8u);  // host ops of both timed iterations
}

TEST(CuptiProfileRun, CpuRunsNeverTouchCupti) {
  static std::unique_ptr<runtime::Backend> cpu = backends::create_cpu_backend(1);
  bool asked = false;
  ProfileOptions po = options(runtime::ExecMode::Graph);
  po.gpu_collector = [&]() -> Expected<std::unique_ptr<CuptiCollector>> {
    asked = true;
    return unsupported("not for CPU runs");
  };
  auto run = profile_run(test::small_net(), test::small_inputs(), *cpu, po);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_FALSE(asked);
  EXPECT_TRUE(run->gpu_note.empty());
  EXPECT_EQ(run->trace->meta("gpu_activity"), "");
  EXPECT_EQ(run->trace->meta("gpu_note"), "");
  for (const Track& tr : run->trace->tracks) EXPECT_NE(tr.kind, TrackKind::GpuStream);
}

TEST(CuptiProfileRun, FactoryWithoutCudaSaysSo) {
#if MODESCOPE_HAVE_CUDA
  auto c = create_cupti_collector();
  EXPECT_TRUE(c) << c.status().message();
#else
  auto c = create_cupti_collector();
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), ErrorCode::Unsupported);
  EXPECT_NE(c.status().message().find("built without CUDA"), std::string::npos);
#endif
}

}  // namespace
}  // namespace ms::prof
