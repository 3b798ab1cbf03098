// The one run loop (app/session/run_loop.h) as the CLI calls it (run_model with a RunRequest) and as
// the app's jobs call it (run_mode with names), driven without a GPU: a CPU backend that reports a
// CUDA device makes the loop take its CUPTI path, a scripted collector stands in for CUPTI, and a
// counting observer stands in for a caller's own. Plain CPU runs, cancellation, progress and
// interleaving are checked on the same loop.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "app/session/mode_run.h"
#include "app/session/run_loop.h"
#include "engine/backends/select.h"
#include "engine/core/cpu_wait.h"
#include "profiler/analysis/compare.h"
#include "profiler/record/cupti_collector.h"
#include "profiler/record/profiling_session.h"
#include "tests/app/forwarding_backend.h"
#include "tests/profiler/test_util.h"

namespace ms::session {
namespace {

using prof::test::small_net;  // x[2,8] -> Add(b) -> Relu -> Add(x) -> Sigmoid -> y

runtime::TensorMap small_inputs() { return {{"x", Tensor::from_vector<float>(std::vector<float>(16, 0.5f), {2, 8})}}; }

// What the fakes saw; owned by the test, since the loop destroys the collector (and run_mode the backend).
struct Script {
  int made = 0, starts = 0, stops = 0, depth = 0, syncs = 0;
  int syncs_at_start = -1, syncs_at_stop = -1;
  bool fail_start = false;
  std::vector<std::pair<uint64_t, int64_t>> pushed;
};

// The CPU backend under a CUDA device id: runs the same kernels, makes the loop take its GPU path.
class CudaLabelledBackend final : public testing::ForwardingBackend {
 public:
  explicit CudaLabelledBackend(Script& s) : s_(s) {}
  std::string name() const override { return "cuda"; }
  Device device() const override { return {DeviceType::CUDA, 0}; }
  void synchronize() override { ++s_.syncs; }

 private:
  Script& s_;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Answers each pushed external id with one kernel on stream 1 (GPU clock = host clock), the way
// CUPTI reports the work launched inside the op.
struct ScriptedCollector final : prof::CuptiCollector {
  explicit ScriptedCollector(Script& script) : s(script) {}
  Status start() override {
    ++s.starts;
    s.syncs_at_start = s.syncs;
    if (s.fail_start) return internal_error("CUPTI: cuptiActivityEnable failed (scripted)");
    active_ = true;
    return Status::ok();
  }
  Expected<prof::GpuActivity> stop() override {
    active_ = false;
    ++s.stops;
    s.syncs_at_stop = s.syncs;
    prof::GpuActivity a;
    uint32_t corr = 0;
    for (const auto& [node, ts] : s.pushed) {
      prof::GpuKernelRecord k;
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
    s.pushed.emplace_back(id, now_ns());
    ++s.depth;
  }
  void pop_external() override { --s.depth; }
  bool active_ = false;
  Script& s;
};

prof::GpuCollectorFactory scripted(Script& s) {
  return [&s]() -> Expected<std::unique_ptr<prof::CuptiCollector>> {
    ++s.made;
    return std::unique_ptr<prof::CuptiCollector>(std::make_unique<ScriptedCollector>(s));
  };
}

// A caller's own observer: counts runs (with their iteration numbers and modes) and ops.
struct CountingObserver final : runtime::RunObserver {
  void on_run_begin(const runtime::RunInfo& i) override {
    iterations.push_back(i.iteration);
    modes.push_back(i.mode);
  }
  void on_op_begin(const ir::Node&) override { ++ops; }
  std::vector<int> iterations;
  std::vector<runtime::ExecMode> modes;
  int ops = 0;
};

// Progress and cancellation as a job gives them: cancels once `cancel_after` progress reports came.
struct RecordingCallbacks final : RunCallbacks {
  bool cancelled() const override { return cancel_after >= 0 && static_cast<int>(reports.size()) >= cancel_after; }
  void progress(double fraction, const std::string& what) override { reports.emplace_back(fraction, what); }
  int cancel_after = -1;
  std::vector<std::pair<double, std::string>> reports;
};

size_t count_ops(const prof::Trace& t) {
  size_t n = 0;
  for (const prof::Event& e : t.events) n += e.kind == prof::EventKind::Op;
  return n;
}

// What both callers must see from a CUDA run: CUPTI started once after the warm-up (behind a
// synchronize), stopped once before the trace was built, every op's NodeId pushed and popped, and
// one GPU kernel per op merged onto a stream track, naming its node, in the timed iterations.
// Returns the number of op events (both timed iterations).
size_t expect_gpu_run(const Script& s, const prof::Trace& t, uint64_t gpu_records, const std::string& gpu_note) {
  EXPECT_EQ(s.made, 1);
  EXPECT_EQ(s.starts, 1);
  EXPECT_EQ(s.stops, 1);
  EXPECT_EQ(s.depth, 0);
  EXPECT_GE(s.syncs_at_start, 1);                // synchronized before start
  EXPECT_GT(s.syncs_at_stop, s.syncs_at_start);  // and before stop
  EXPECT_TRUE(gpu_note.empty()) << gpu_note;
  const size_t ops = count_ops(t);
  // 2 timed iterations of 4 ops (PyNative) or of the fused graph's fewer; the warm-up is neither
  // recorded nor collected.
  EXPECT_GE(ops, 2u);
  EXPECT_LE(ops, 8u);
  EXPECT_EQ(ops % 2, 0u);
  EXPECT_EQ(s.pushed.size(), ops);
  EXPECT_EQ(gpu_records, ops);
  EXPECT_EQ(t.meta("gpu_activity"), "cupti");
  EXPECT_EQ(t.meta("gpu_dropped_records"), "1");
  size_t gpu_kernels = 0;
  std::set<int32_t> iterations;
  for (const prof::Event& e : t.events) {
    if (t.tracks[e.track].kind != prof::TrackKind::GpuStream) continue;
    ++gpu_kernels;
    const prof::NodeInfo* n = t.node_of(e);
    EXPECT_NE(n, nullptr);
    if (n) {
      EXPECT_FALSE(n->name.empty());
    }
    iterations.insert(e.iteration);
  }
  EXPECT_EQ(gpu_kernels, ops);
  EXPECT_EQ(iterations, (std::set<int32_t>{0, 1}));
  for (const prof::Event& e : t.events) EXPECT_GE(e.ts_ns, 0);  // GPU events share the host origin
  return ops;
}

TEST(RunLoop, CliAndAppRunsShareTheLoopAndItsCuptiPath) {
  for (runtime::ExecMode mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    SCOPED_TRACE(runtime::exec_mode_name(mode));
    // The CLI's `profile`: a RunRequest straight into run_model.
    {
      Script s;
      CudaLabelledBackend backend(s);
      CountingObserver seen;
      RunRequest req;
      req.mode = mode;
      req.iters = 2;
      req.warmup = 1;
      req.profile = true;
      req.profiling.gpu_collector = scripted(s);
      req.observer = &seen;
      auto r = run_model(small_net(), small_inputs(), backend, req);
      ASSERT_TRUE(r) << r.status().message();
      ASSERT_TRUE(r->trace);
      const size_t ops = expect_gpu_run(s, *r->trace, r->gpu_records, r->gpu_note);
      EXPECT_EQ(seen.iterations, (std::vector<int>{0, 1}));
      EXPECT_EQ(static_cast<size_t>(seen.ops), ops);
      if (mode == runtime::ExecMode::PyNative) {
        EXPECT_EQ(ops, 8u);
      }
      EXPECT_EQ(r->latencies_ms.size(), 2u);
      ASSERT_EQ(r->outputs.size(), 1u);
      EXPECT_EQ(r->compiled != nullptr, mode == runtime::ExecMode::Graph);
    }
    // The app's run job: names in, the backend made by run_mode, progress to the job.
    {
      Script s;
      CountingObserver seen;
      ModeRun req;
      req.mode = mode == runtime::ExecMode::Graph ? "graph" : "pynative";
      req.device = "cuda";
      req.iterations = 2;
      req.warmup = 1;
      req.make_backend = [&s](const std::string& device, int) -> Expected<backends::BackendChoice> {
        EXPECT_EQ(device, "cuda");
        return backends::BackendChoice{std::make_unique<CudaLabelledBackend>(s), ""};
      };
      req.gpu_collector = scripted(s);
      req.observer = &seen;
      RecordingCallbacks job;
      auto r = run_mode(small_net(), req, job);
      ASSERT_TRUE(r) << r.status().message();
      ASSERT_TRUE(r->trace);
      const size_t ops = expect_gpu_run(s, *r->trace, r->gpu_records, r->gpu_note);
      EXPECT_EQ(seen.iterations, (std::vector<int>{0, 1}));
      EXPECT_EQ(static_cast<size_t>(seen.ops), ops);
      EXPECT_EQ(r->backend, "cuda");
      ASSERT_EQ(r->outputs.size(), 1u);
      EXPECT_EQ(r->outputs[0].rfind("y = ", 0), 0u) << r->outputs[0];
      EXPECT_EQ(!r->passes.empty(), mode == runtime::ExecMode::Graph);
      EXPECT_EQ(r->plan != nullptr, mode == runtime::ExecMode::Graph);
      // Progress: compiling first in Graph mode, then one report per iteration, rising.
      const std::string name = runtime::exec_mode_name(mode);
      std::vector<std::string> texts;
      for (const auto& [f, what] : job.reports) texts.push_back(what);
      std::vector<std::string> expected;
      if (mode == runtime::ExecMode::Graph) expected.push_back("Compiling");
      for (int i = 1; i <= 3; ++i) expected.push_back(name + " iteration " + std::to_string(i) + " of 3");
      EXPECT_EQ(texts, expected);
      for (size_t i = 1; i < job.reports.size(); ++i) EXPECT_GT(job.reports[i].first, job.reports[i - 1].first);
    }
  }
}

TEST(RunLoop, CollectorThatCannotStartLeavesTheHostProfileAndSaysWhy) {
  Script s;
  s.fail_start = true;
  CudaLabelledBackend backend(s);
  RunRequest req;
  req.iters = 2;
  req.warmup = 1;
  req.profile = true;
  req.profiling.gpu_collector = scripted(s);
  auto r = run_model(small_net(), small_inputs(), backend, req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(s.starts, 1);
  EXPECT_EQ(s.stops, 0);
  EXPECT_TRUE(s.pushed.empty());
  EXPECT_NE(r->gpu_note.find("CUPTI"), std::string::npos) << r->gpu_note;
  const prof::Trace& t = *r->trace;
  EXPECT_EQ(t.meta("gpu_activity"), "none");
  EXPECT_EQ(t.meta("gpu_note"), "GPU kernels missing: " + r->gpu_note);
  EXPECT_EQ(count_ops(t), 8u);  // host ops of both timed iterations
  for (const prof::Event& e : t.events) EXPECT_NE(t.tracks[e.track].kind, prof::TrackKind::GpuStream);
}

TEST(RunLoop, RealCollectorOnAMachineWithoutCuptiSaysWhy) {
  auto probe = prof::create_cupti_collector();
  if (probe) {
    const Status st = (*probe)->start();
    if (st.is_ok()) {
      (void)(*probe)->stop();
      GTEST_SKIP() << "CUPTI starts here: the failure path is not reachable";
    }
  }
  Script s;
  CudaLabelledBackend backend(s);
  RunRequest req;
  req.iters = 2;
  req.warmup = 1;
  req.profile = true;
  auto r = run_model(small_net(), small_inputs(), backend, req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_NE(r->gpu_note.find("CUPTI"), std::string::npos) << r->gpu_note;
  EXPECT_EQ(r->gpu_note.find('\n'), std::string::npos);
  EXPECT_EQ(r->trace->meta("gpu_activity"), "none");
}

TEST(RunLoop, CpuRunsNeverTouchCupti) {
  Script s;
  auto cpu = backends::create_cpu_backend(1);
  RunRequest req;
  req.mode = runtime::ExecMode::Graph;
  req.iters = 2;
  req.warmup = 1;
  req.profile = true;
  req.profiling.gpu_collector = scripted(s);
  auto r = run_model(small_net(), small_inputs(), *cpu, req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(s.made, 0);
  EXPECT_TRUE(r->gpu_note.empty());
  EXPECT_EQ(r->trace->meta("gpu_activity"), "");
  EXPECT_EQ(r->trace->meta("mode"), "graph");
  EXPECT_FALSE(r->trace->meta("compile_ms").empty());
  for (const prof::Track& tr : r->trace->tracks) EXPECT_NE(tr.kind, prof::TrackKind::GpuStream);
}

TEST(RunLoop, UnprofiledRunTimesAndObservesOnlyTheTimedIterations) {
  Script s;
  CudaLabelledBackend backend(s);
  CountingObserver seen;
  RunRequest req;  // the CLI's `run`: no profile
  req.iters = 3;
  req.warmup = 2;
  req.profiling.gpu_collector = scripted(s);
  req.observer = &seen;
  auto r = run_model(small_net(), small_inputs(), backend, req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(s.made, 0);  // no profile, no CUPTI, even on a CUDA backend
  EXPECT_FALSE(r->trace);
  EXPECT_EQ(r->latencies_ms.size(), 3u);
  EXPECT_EQ(seen.iterations, (std::vector<int>{0, 1, 2}));
  EXPECT_GT(r->latency.median, 0);
  EXPECT_EQ(r->nodes, 4u);
  EXPECT_EQ(r->kernels_per_iter, 4);
  ASSERT_EQ(r->outputs.size(), 1u);
  // sigmoid(relu(0.5 + 0) + 0.5) = sigmoid(1)
  EXPECT_NEAR(r->outputs[0].at_double(0), 0.7310586, 1e-5);
}

TEST(RunLoop, CancellationStopsBetweenIterations) {
  auto cpu = backends::create_cpu_backend(1);
  CountingObserver seen;
  RunRequest req;
  req.iters = 10;
  req.warmup = 0;
  req.observer = &seen;
  RecordingCallbacks job;
  job.cancel_after = 3;  // three iterations start, the fourth is never run
  auto r = run_model(small_net(), small_inputs(), *cpu, req, job);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
  EXPECT_EQ(seen.iterations.size(), 3u);
}

TEST(RunLoop, InterleavedRunsAlternateIterations) {
  auto cpu = backends::create_cpu_backend(1);
  const ir::Graph g = small_net();
  const runtime::TensorMap in = small_inputs();
  CountingObserver seen;  // both runs report to one observer: the order of their runs shows
  std::vector<InterleavedRun> runs(2);
  for (int m = 0; m < 2; ++m) {
    runs[m] = InterleavedRun{&g, &in, cpu.get(), {}};
    runs[m].request.mode = m == 0 ? runtime::ExecMode::PyNative : runtime::ExecMode::Graph;
    runs[m].request.iters = 2;
    runs[m].request.warmup = 1;
    runs[m].request.observer = &seen;
  }
  RunCallbacks none;
  auto r = run_interleaved(runs, none);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  using M = runtime::ExecMode;
  EXPECT_EQ(seen.modes, (std::vector<M>{M::PyNative, M::Graph, M::PyNative, M::Graph}));
  EXPECT_EQ((*r)[0].latencies_ms.size(), 2u);
  EXPECT_TRUE((*r)[1].compiled);
  for (auto& run : runs) run.request.profile = true;
  EXPECT_FALSE(run_interleaved(runs, none));  // two profiled runs would need two collectors at once
}

// In turns of two: each mode's timed iterations two at a time (the untimed iteration that opens
// a later turn is not observed), the last turn shorter.
TEST(RunLoop, InterleavedRunsTakeTurns) {
  auto cpu = backends::create_cpu_backend(1);
  const ir::Graph g = small_net();
  const runtime::TensorMap in = small_inputs();
  CountingObserver seen;
  std::vector<InterleavedRun> runs(2);
  for (int m = 0; m < 2; ++m) {
    runs[m] = InterleavedRun{&g, &in, cpu.get(), {}};
    runs[m].request.mode = m == 0 ? runtime::ExecMode::PyNative : runtime::ExecMode::Graph;
    runs[m].request.iters = 5;
    runs[m].request.warmup = 1;
    runs[m].request.observer = &seen;
  }
  RunCallbacks none;
  auto r = run_interleaved(runs, none, /*turn=*/2);
  ASSERT_TRUE(r) << r.status().message();
  using M = runtime::ExecMode;
  // Iterations 0-1 (the warm-up and the first timed), 2-3, 4-5 of each mode.
  EXPECT_EQ(seen.modes, (std::vector<M>{M::PyNative, M::Graph, M::PyNative, M::PyNative, M::Graph, M::Graph,
                                        M::PyNative, M::PyNative, M::Graph, M::Graph}));
  EXPECT_EQ((*r)[0].latencies_ms.size(), 5u);
  EXPECT_EQ((*r)[1].latencies_ms.size(), 5u);
}

// A run observed elsewhere (a training step) through the same profiling: GPU activity brackets
// exactly that run.
TEST(RunLoop, OneRunObservationBracketsTheGpuActivity) {
  Script s;
  CudaLabelledBackend backend(s);
  const ir::Graph g = small_net();
  prof::ProfilingOptions po;
  po.gpu_collector = scripted(s);
  prof::ProfilingSession session(backend, po);
  runtime::EagerExecutor eager(g, backend);
  ASSERT_TRUE(eager.run(small_inputs()));  // not observed: not collected
  runtime::RunOptions ro;
  ro.observer = &session.observer_for_one_run();
  ASSERT_TRUE(eager.run(small_inputs(), ro));
  EXPECT_EQ(s.starts, 1);
  EXPECT_EQ(s.stops, 1);  // at the run's end, before anything else runs
  EXPECT_FALSE(session.gpu_active());
  ASSERT_TRUE(eager.run(small_inputs()));
  prof::BuildContext ctx;
  ctx.graph = &g;
  auto t = session.build(ctx);
  EXPECT_EQ(count_ops(*t), 4u);
  EXPECT_EQ(session.gpu_records(), 4u);
  EXPECT_EQ(t->meta("gpu_activity"), "cupti");
}

// The CPU backend, saying it has native bf16 arithmetic or not as told.
class Bf16Backend final : public testing::ForwardingBackend {
 public:
  explicit Bf16Backend(bool native) : native_(native) {}
  std::string description() const override { return native_ ? "bf16 cpu" : "f32-only cpu"; }
  bool native_bf16() const override { return native_; }

 private:
  bool native_;
};

// The Run panel's bf16 precision: a Graph run in bf16 reports its outputs' distance from an f32
// pass (above zero: the values were rounded; small: it is the same function); a backend without
// native bf16 refuses in one line naming itself; PyNative ignores it.
TEST(RunLoop, Bf16GraphRunReportsItsDeviationFromF32) {
  for (const bool native : {true, false}) {
    ModeRun req;
    req.mode = "graph";
    req.precision = "bf16";
    req.iterations = 1;
    req.warmup = 0;
    req.make_backend = [native](const std::string&, int) -> Expected<backends::BackendChoice> {
      return backends::BackendChoice{std::make_unique<Bf16Backend>(native), ""};
    };
    RunCallbacks job;
    auto r = run_mode(small_net(), req, job);
    if (!native) {
      ASSERT_FALSE(r.has_value());
      EXPECT_NE(r.status().message().find("bf16 precision: f32-only cpu has no native bf16"), std::string::npos)
          << r.status().message();
      req.mode = "pynative";
      auto eager = run_mode(small_net(), req, job);
      ASSERT_TRUE(eager.has_value()) << eager.status().message();
      EXPECT_EQ(eager->precision, "f32");
      continue;
    }
    ASSERT_TRUE(r.has_value()) << r.status().message();
    EXPECT_EQ(r->precision, "bf16");
    EXPECT_EQ(r->deviation.compared, 1u);
    EXPECT_GT(r->deviation.max_rel, 0.0);
    EXPECT_LT(r->deviation.max_rel, 0.02);
    EXPECT_TRUE(r->deviation.argmax_equal);
  }
}

TEST(RunLoop, CuptiFactoryWithoutCudaSaysSo) {
  auto c = prof::create_cupti_collector();
#if MODESCOPE_HAVE_CUDA
  EXPECT_TRUE(c) << c.status().message();
#else
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), ErrorCode::Unsupported);
  EXPECT_NE(c.status().message().find("built without CUDA"), std::string::npos);
#endif
}

// The note says nothing below its threshold or where the system does not say, and the share in
// percent above it.
TEST(RunLoop, CpuWaitNoteOnlyAboveItsThreshold) {
  EXPECT_EQ(cpu_wait_note(-1), "");
  EXPECT_EQ(cpu_wait_note(0), "");
  EXPECT_EQ(cpu_wait_note(kCpuWaitNoted * 0.99), "");
  const std::string note = cpu_wait_note(0.38);
  EXPECT_NE(note.find("waited for a CPU 38% of the time"), std::string::npos) << note;
}

// A run sharing its one CPU with a process that never sleeps waits for it about half the time, and
// the result says so; the same run with the CPU to itself barely waits.
TEST(RunLoop, RunSharingItsCpuWithABusyProcessReportsTheWait) {
  if (process_cpu_wait_ns() < 0) GTEST_SKIP() << "this system reports no run-queue wait (/proc/self/task/*/schedstat)";
  // The test process and the busy child on one CPU (the first this process may use).
  cpu_set_t allowed, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  // x[64,256] @ W[256,256]: about a tenth of a millisecond an iteration.
  ir::Graph g;
  g.inputs.push_back("x");
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{64, 256}, {"", ""}}, {}, std::nullopt});
  g.add_initializer("w", Tensor::from_vector<float>(std::vector<float>(256 * 256, 0.01f), {256, 256}));
  g.add_node(prof::test::make_node("MatMul", {"x", "w"}, {"y"}, "matmul"));
  g.outputs = {"y"};
  const runtime::TensorMap in = {{"x", Tensor::from_vector<float>(std::vector<float>(64 * 256, 1.0f), {64, 256})}};
  auto cpu_backend = backends::create_cpu_backend(1);
  RunRequest req;
  req.iters = 400;
  req.warmup = 5;
  auto alone = run_model(g, in, *cpu_backend, req);
  ASSERT_TRUE(alone) << alone.status().message();
  const pid_t busy = fork();
  ASSERT_GE(busy, 0);
  if (busy == 0) {
    for (;;) asm volatile("" ::: "memory");  // spins until killed
  }
  req.profile = true;  // the trace carries the share, and the comparison's verdict says so
  auto shared = run_model(g, in, *cpu_backend, req);
  kill(busy, SIGKILL);
  waitpid(busy, nullptr, 0);
  sched_setaffinity(0, sizeof allowed, &allowed);
  ASSERT_TRUE(shared) << shared.status().message();
  ASSERT_GE(alone->cpu_wait_share, 0.0);
  ASSERT_GE(shared->cpu_wait_share, 0.0);
  EXPECT_GT(shared->cpu_wait_share, 0.2) << "alone " << alone->cpu_wait_share;
  std::printf("cpu wait share: alone %.3f, beside a busy process %.3f (median %.3f against %.3f ms)\n",
              alone->cpu_wait_share, shared->cpu_wait_share, alone->latency.median, shared->latency.median);
  EXPECT_FALSE(cpu_wait_note(shared->cpu_wait_share).empty());
  EXPECT_LT(alone->cpu_wait_share, shared->cpu_wait_share);
  ASSERT_TRUE(shared->trace);
  EXPECT_NEAR(shared->trace->meta_number("cpu_wait_share", -1), shared->cpu_wait_share, 1e-6);
  // Compared with itself as the PyNative side: both runs' shares are named after the verdict.
  const prof::Comparison c = prof::compare_runs(*shared->trace, *shared->trace);
  EXPECT_TRUE(c.verdict.disturbed);
  EXPECT_NE(c.verdict.text.find("the PyNative and Graph-mode runs' threads waited for a CPU"), std::string::npos)
      << c.verdict.text;
}

}  // namespace
}  // namespace ms::session
