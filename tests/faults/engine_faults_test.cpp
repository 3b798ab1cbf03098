// Faults around runs: an allocation that fails at any point of a run in either mode (the engine's
// allocation fault hook), a 0-byte model, a model file deleted while it is open, a cancel in the
// middle of a compile, a run, a profiled run and a training run, no GPU driver. Each ends in one
// clear error (or a clean fallback) and the next run gives the same results as before.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "app/session/mode_run.h"
#include "app/session/model_inputs.h"
#include "engine/core/alloc_error.h"
#include "engine/core/atomic_file.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/frontend/train/run.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

using test::kSmallModel;
using test::TempDir;

const ir::Graph& small_graph() {
  static const ir::Graph g = [] {
    auto loaded = load_model_arg(kSmallModel);
    EXPECT_TRUE(loaded.has_value()) << loaded.status().message();
    return loaded ? *loaded : ir::Graph{};
  }();
  return g;
}

ModeRun one_iteration(const std::string& mode) {
  ModeRun r;
  r.mode = mode;
  r.threads = 1;
  r.iterations = 1;
  r.warmup = 0;
  return r;
}

// A run whose failure is reported (a status or the allocation error a job's catch turns into its
// message), never a crash: "" when it succeeded, else the message.
std::string run_reporting(const ir::Graph& g, const ModeRun& req, RunCallbacks& cb, ModeRunOutcome* out = nullptr) {
  try {
    auto r = run_mode(g, req, cb);
    if (!r) return r.status().message().empty() ? "error without a message" : r.status().message();
    if (out) *out = std::move(*r);
    return "";
  } catch (const AllocationFailed& a) {
    return a.what();
  }
}

class AllocationFault : public ::testing::TestWithParam<const char*> {};

// Every allocation of a run fails in turn (the 1st, the 2nd, ... until the run makes no more): the
// run stops with one line saying "out of memory" and how much, or recovers (the caching allocator
// gives its cache back and retries) with the right outputs; either way the next run, fault
// disarmed, gives the outputs of a run that never failed.
TEST_P(AllocationFault, EachAllocationOfARunFailsInTurn) {
  const std::string mode = GetParam();
  RunCallbacks none;
  ModeRunOutcome clean;
  ASSERT_EQ(run_reporting(small_graph(), one_iteration(mode), none, &clean), "");
  int failed = 0, recovered = 0, nth = 1;
  for (; nth < 400; ++nth) {
    arm_allocation_fault(nth);
    ModeRunOutcome faulted;
    const std::string err = run_reporting(small_graph(), one_iteration(mode), none, &faulted);
    const bool fired = allocation_fault_fired();
    arm_allocation_fault(0);
    if (!fired) break;  // the run makes fewer than nth allocations
    if (err.empty()) {
      ++recovered;
      EXPECT_EQ(faulted.outputs, clean.outputs) << "allocation " << nth << " failed and the run went on";
    } else {
      ++failed;
      EXPECT_NE(err.find("out of memory"), std::string::npos) << "allocation " << nth << ": " << err;
      EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    }
    ModeRunOutcome after;
    ASSERT_EQ(run_reporting(small_graph(), one_iteration(mode), none, &after), "") << "after allocation " << nth;
    EXPECT_EQ(after.outputs, clean.outputs) << "after allocation " << nth;
  }
  EXPECT_GT(failed, 0) << mode << ": no allocation failure reached the user";
  EXPECT_LT(nth, 400) << mode << ": the fault kept firing";
  std::cout << "[ faults   ] " << mode << ": " << nth - 1 << " allocations failed in turn, " << failed
            << " ended the run with an error, " << recovered << " were recovered from\n";
}

INSTANTIATE_TEST_SUITE_P(BothModes, AllocationFault, ::testing::Values("pynative", "graph"));

TEST(EngineFaults, ZeroByteModelNamesTheFile) {
  TempDir dir("zero_model");
  const std::string path = dir.file("empty.onnx");
  std::ofstream(path, std::ios::binary).flush();
  auto g = load_model_arg(path);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.status().message().find("empty.onnx"), std::string::npos) << g.status().message();
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos) << g.status().message();
}

// The graph is in memory once opened: deleting its file changes nothing for runs in either mode;
// opening the path again says the file is gone.
TEST(EngineFaults, ModelFileDeletedWhileOpen) {
  TempDir dir("deleted_model");
  const std::string path = dir.file("mlp.onnx");
  ASSERT_TRUE(onnx_io::save_model(small_graph(), path).is_ok());
  auto g = load_model_arg(path);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  std::filesystem::remove(path);
  RunCallbacks none;
  for (const char* mode : {"pynative", "graph"}) EXPECT_EQ(run_reporting(*g, one_iteration(mode), none), "") << mode;
  auto again = load_model_arg(path);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.status().message().find("mlp.onnx"), std::string::npos) << again.status().message();
}

// A model is serialized straight into its file: a write that fails leaves the earlier file as it
// was (and no temporary file), with one line naming the path and the error.
TEST(EngineFaults, ModelExportThatFailsToWriteLeavesTheEarlierFile) {
  TempDir dir("export_fault");
  const std::string path = dir.file("mlp.onnx");
  ASSERT_TRUE(onnx_io::save_model(small_graph(), path).is_ok());
  const auto size = std::filesystem::file_size(path);
  for (const WriteFault f : {WriteFault{WriteStep::Write, 1, ENOSPC}, WriteFault{WriteStep::Fsync, 1, EIO},
                             WriteFault{WriteStep::Rename, 1, EACCES}}) {
    ScopedWriteFault fault(f);
    const Status st = onnx_io::save_model(small_graph(), path);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.message().rfind(path + ": ", 0), 0u) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
    EXPECT_EQ(std::filesystem::file_size(path), size);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 1) << "a temporary file was left";
  }
  auto again = onnx_io::load_model(path);
  EXPECT_TRUE(again.has_value()) << again.status().message();
}

// Cancelled after `polls` checks.
class CancelAfter : public RunCallbacks {
 public:
  explicit CancelAfter(int polls) : left_(polls) {}
  bool cancelled() const override { return left_.fetch_sub(1) <= 0; }

 private:
  mutable std::atomic<int> left_;
};

void expect_cancelled(const std::string& err) {
  EXPECT_FALSE(err.empty());
  EXPECT_NE(err.find("ancel"), std::string::npos) << err;
}

TEST(EngineFaults, CancelInTheMiddleOfACompile) {
  auto be = backends::create_cpu_backend(1);
  std::atomic<int> polls{3};
  compiler::CompileOptions o;
  o.cancelled = [&] { return polls.fetch_sub(1) <= 0; };
  std::map<std::string, ir::ValueType> sig;
  for (const auto& in : small_graph().inputs) sig[in] = small_graph().value(in)->type;
  auto c = compiler::compile(small_graph(), *be, sig, o);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.status().code(), ErrorCode::Cancelled) << c.status().message();
  o.cancelled = {};
  EXPECT_TRUE(compiler::compile(small_graph(), *be, sig, o).has_value());
}

TEST(EngineFaults, CancelInTheMiddleOfARunInEitherMode) {
  for (const char* mode : {"pynative", "graph"}) {
    ModeRun req = one_iteration(mode);
    req.iterations = 50;
    CancelAfter cancel(6);
    expect_cancelled(run_reporting(small_graph(), req, cancel));
    RunCallbacks none;
    EXPECT_EQ(run_reporting(small_graph(), one_iteration(mode), none), "") << mode;
  }
}

TEST(EngineFaults, CancelInTheMiddleOfAProfiledRun) {
  auto be = backends::create_cpu_backend(1);
  auto inputs = make_inputs(small_graph(), {}, {}, 0);
  ASSERT_TRUE(inputs.has_value()) << inputs.status().message();
  RunRequest req;
  req.mode = runtime::ExecMode::Graph;
  req.iters = 50;
  req.warmup = 0;
  req.profile = true;
  CancelAfter cancel(10);
  auto r = run_model(small_graph(), *inputs, *be, req, cancel);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::Cancelled) << r.status().message();
  req.iters = 2;
  EXPECT_TRUE(run_model(small_graph(), *inputs, *be, req).has_value());
}

TEST(EngineFaults, CancelInTheMiddleOfTraining) {
  nn::train::RunOptions o;
  o.model = "zoo:mnist_mlp?hidden=16";
  o.steps = 40;
  o.data = "synthetic";
  o.evaluate = false;
  std::atomic<int> polls{5};
  o.cancelled = [&] { return polls.fetch_sub(1) <= 0; };
  auto r = nn::train::run_training(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::Cancelled) << r.status().message();
}

// Without a GPU or driver a CUDA run falls back to the CPU, and says why in one line.
TEST(EngineFaults, NoGpuFallsBackWithANote) {
  auto direct = backends::create_cuda_backend(1);
  if (direct.has_value()) GTEST_SKIP() << "a CUDA device is present, so there is no fallback to see";
  EXPECT_FALSE(direct.status().message().empty());
  EXPECT_EQ(direct.status().message().find('\n'), std::string::npos) << direct.status().message();
  ModeRun req = one_iteration("graph");
  req.device = "cuda";
  RunCallbacks none;
  ModeRunOutcome out;
  ASSERT_EQ(run_reporting(small_graph(), req, none, &out), "");
  EXPECT_EQ(out.backend.rfind("cpu", 0), 0u) << out.backend;
  EXPECT_FALSE(out.note.empty());
}

}  // namespace
}  // namespace ms::session

namespace ms::nn {
namespace {

// Jobs read and set the builder API's context on their own threads: a backend replaced by another
// thread's set_context stays alive for whoever still holds it, and reads never tear.
TEST(EngineFaults, ContextSetWhileAnotherThreadUsesTheBackend) {
  const Context saved = get_context();
  std::atomic<bool> stop{false};
  std::thread setter([&] {
    for (int i = 0; i < 200 && !stop; ++i) set_context(Context{i % 2 ? Mode::Graph : Mode::PyNative, "cpu", 1 + i % 2});
  });
  for (int i = 0; i < 200; ++i) {
    runtime::Backend& be = backend();
    std::this_thread::yield();
    EXPECT_EQ(be.name(), "cpu");
    void* p = be.allocator().allocate(256);
    ASSERT_NE(p, nullptr);
    be.allocator().deallocate(p, 256);
    const Context c = get_context();
    EXPECT_EQ(c.device, "cpu");
    EXPECT_TRUE(c.threads == 1 || c.threads == 2 || c.threads == saved.threads) << c.threads;
  }
  stop = true;
  setter.join();
  set_context(saved);
}

}  // namespace
}  // namespace ms::nn

namespace ms {
namespace {

// Element counts past int64 saturate and byte counts past size_t are refused: a huge declared shape
// asks for more memory than exists (a clear error), never for a wrapped-around small buffer.
TEST(EngineFaults, ShapesWhoseSizeOverflowsAreRefusedNotWrapped) {
  const Shape huge{int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(numel(huge), INT64_MAX);
  EXPECT_EQ(numel(Shape{-1, int64_t{1} << 62, 8}), -1);
  EXPECT_EQ(numel(Shape{2, 3, 4}), 24);
  size_t bytes = 0;
  EXPECT_FALSE(byte_size(huge, 4, bytes));
  EXPECT_FALSE(byte_size(Shape{int64_t{1} << 62, 1}, 8, bytes));
  EXPECT_TRUE(byte_size(Shape{1024, 1024}, 4, bytes));
  EXPECT_EQ(bytes, size_t{4} << 20);
  try {
    (void)Tensor::empty(DType::F32, huge);
    ADD_FAILURE() << "a tensor of 2^80 elements was allocated";
  } catch (const AllocationFailed& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1099511627776,1099511627776]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ms
