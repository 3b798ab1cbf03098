// Data-parallel training across real ranks: run by ctest under scripts/mpirun-local -np 2 (every
// rank runs every test; a failure on any rank fails the job). After K steps, 2 ranks x batch B/2
// hold the same weights as 1 rank x batch B (within fp32 rounding of the summation order) and
// exactly the same weights on every rank, in both modes, with SGD and with Adam.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "engine/dist/world.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/train/run.h"

namespace ms {
namespace {

struct DpCase {
  const char* model;
  const char* optimizer;
  nn::Mode mode;
};

nn::train::RunOptions dp_case_options(const DpCase& c) {
  nn::train::RunOptions o;
  o.model = c.model;
  o.mode = c.mode;
  o.optimizer = c.optimizer;
  o.steps = 3;
  o.evaluate = false;
  o.keep_parameters = true;
  o.data_dir = MODESCOPE_SOURCE_DIR "/samples/data";
  o.seed = 7;
  return o;
}

// The parameters of a run, flattened into one f32 tensor.
Tensor flat_parameters(const nn::train::RunResult& r) {
  int64_t n = 0;
  for (const auto& [name, t] : r.final_parameters) n += t.numel();
  Tensor out = Tensor::empty(DType::F32, {n});
  size_t off = 0;
  for (const auto& [name, t] : r.final_parameters) {
    std::memcpy(static_cast<char*>(out.raw()) + off, t.raw(), t.nbytes());
    off += t.nbytes();
  }
  return out;
}

void check_data_parallel_case(const DpCase& c) {
  std::shared_ptr<dist::Communicator> comm = dist::world();
  ASSERT_TRUE(comm);
  ASSERT_EQ(comm->size(), 2) << "run under scripts/mpirun-local -np 2";
  nn::Context ctx;
  ctx.mode = c.mode;
  ctx.threads = 1;
  nn::set_context(ctx);
  nn::train::RunOptions single = dp_case_options(c);
  auto ref = nn::train::run_training(single);
  ASSERT_TRUE(ref) << ref.status().message();
  nn::train::RunOptions parallel = dp_case_options(c);
  parallel.data_parallel = nn::train::DataParallelConfig{};
  parallel.data_parallel->first_bucket_mb = 0.05;  // several buckets even for small models
  parallel.data_parallel->bucket_mb = 0.1;
  parallel.data_parallel->fusion_split = {2};  // Graph: two fused AllReduce nodes
  auto dp = nn::train::run_training(parallel);
  ASSERT_TRUE(dp) << dp.status().message();
  EXPECT_EQ(dp->world_size, 2);
  EXPECT_EQ(dp->rank, comm->rank());
  ASSERT_EQ(dp->allreduce_ms.size(), 3u);
  for (double ms : dp->allreduce_ms) EXPECT_GT(ms, 0.0) << "no collective ran in a step";
  const Tensor a = flat_parameters(*ref), b = flat_parameters(*dp);
  ASSERT_EQ(a.numel(), b.numel());
  int64_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    const double tol = 1e-5 * std::abs(x) + 1e-6;
    worst = std::max(worst, std::abs(x - y));
    if (std::abs(x - y) > tol) ++bad;
  }
  // Adam divides each gradient by its own running magnitude: where a gradient is rounding noise
  // (about 0), the step is lr-sized either way and its size depends on the summation order, so a
  // few such weights (< 1e-4 of them) may move by up to lr/10 more or less. SGD has no such case.
  const bool adam = std::string(c.optimizer) == "adam";
  const auto allowed = adam ? a.numel() / 10000 : 0;
  EXPECT_LE(bad, allowed) << "rank " << comm->rank() << ": " << bad << " of " << a.numel()
                          << " weights differ from the 1-rank run by more than rtol 1e-5 (max |diff| " << worst << ")";
  EXPECT_LE(worst, adam ? 1e-4 : 1e-5) << "rank " << comm->rank();
  auto all = comm->all_gather(b);
  ASSERT_TRUE(all) << all.status().message();
  EXPECT_EQ(std::memcmp(all->raw(), static_cast<const char*>(all->raw()) + b.nbytes(), b.nbytes()), 0)
      << "the ranks hold different weights";
}

constexpr const char* kMlp = "zoo:mnist_mlp?batch=16&hidden=64";
constexpr const char* kEncoder = "zoo:transformer_encoder?batch=8&seq=8&layers=1&hidden=32&heads=2&classes=4";

TEST(DataParallelRanks, MlpSgdPyNative) { check_data_parallel_case({kMlp, "sgd", nn::Mode::PyNative}); }
TEST(DataParallelRanks, MlpAdamPyNative) { check_data_parallel_case({kMlp, "adam", nn::Mode::PyNative}); }
TEST(DataParallelRanks, MlpSgdGraph) { check_data_parallel_case({kMlp, "sgd", nn::Mode::Graph}); }
TEST(DataParallelRanks, MlpAdamGraph) { check_data_parallel_case({kMlp, "adam", nn::Mode::Graph}); }
TEST(DataParallelRanks, EncoderSgdPyNative) { check_data_parallel_case({kEncoder, "sgd", nn::Mode::PyNative}); }
TEST(DataParallelRanks, EncoderAdamPyNative) { check_data_parallel_case({kEncoder, "adam", nn::Mode::PyNative}); }
TEST(DataParallelRanks, EncoderSgdGraph) { check_data_parallel_case({kEncoder, "sgd", nn::Mode::Graph}); }
TEST(DataParallelRanks, EncoderAdamGraph) { check_data_parallel_case({kEncoder, "adam", nn::Mode::Graph}); }

TEST(DataParallelRanks, MismatchedModelsAreRefusedNamingTheRank) {
  std::shared_ptr<dist::Communicator> comm = dist::world();
  ASSERT_TRUE(comm);
  nn::set_context(nn::Mode::PyNative);
  nn::train::RunOptions o = dp_case_options({kMlp, "sgd", nn::Mode::PyNative});
  o.model = comm->rank() == 1 ? "zoo:mnist_mlp?batch=16&hidden=32" : kMlp;
  o.data_parallel = nn::train::DataParallelConfig{};
  auto r = nn::train::run_training(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("rank(s) 1 built a different model"), std::string::npos) << r.status().message();
}

TEST(DataParallelRanks, CollectivesCarryEveryRanksValues) {
  std::shared_ptr<dist::Communicator> comm = dist::world();
  ASSERT_TRUE(comm);
  const float me = static_cast<float>(comm->rank() + 1);
  Tensor t = Tensor::from_vector<float>({me, 2 * me, 3 * me, 4 * me}, {4});
  ASSERT_TRUE(comm->all_reduce(t, dist::ReduceOp::Sum).is_ok());
  EXPECT_FLOAT_EQ(t.data<float>()[3], 12.0f);  // 4*1 + 4*2
  Tensor m = Tensor::from_vector<float>({me, me}, {2});
  ASSERT_TRUE(comm->all_reduce(m, dist::ReduceOp::Mean).is_ok());
  EXPECT_FLOAT_EQ(m.data<float>()[0], 1.5f);
  auto rs = comm->reduce_scatter(Tensor::from_vector<float>({me, 10 * me}, {2}), dist::ReduceOp::Sum);
  ASSERT_TRUE(rs);
  EXPECT_FLOAT_EQ(rs->data<float>()[0], comm->rank() == 0 ? 3.0f : 30.0f);
  Tensor b = Tensor::scalar<int64_t>(comm->rank() == 0 ? 42 : -1);
  ASSERT_TRUE(comm->broadcast(b, 0).is_ok());
  EXPECT_EQ(b.data<int64_t>()[0], 42);
  EXPECT_TRUE(comm->barrier().is_ok());
}

// A rank that reaches a large all-reduce late is awaited by sleeping, not polling: rank 1 starts
// 400 ms after rank 0, whose process spends well under half of that wait on a CPU (Open MPI's own
// wait in a blocking collective polls through all of it), and the sum is every rank's.
TEST(DataParallelRanks, ALateRankIsAwaitedWithoutSpinning) {
  std::shared_ptr<dist::Communicator> comm = dist::world();
  ASSERT_TRUE(comm);
  const int64_t n = int64_t{2} << 20;  // 8 MiB of f32
  std::vector<float> v(static_cast<size_t>(n), static_cast<float>(comm->rank() + 1));
  Tensor t = Tensor::from_vector<float>(v, {n});
  ASSERT_TRUE(comm->barrier().is_ok());
  if (comm->rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto cpu_s = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  const double cpu0 = cpu_s();
  const auto wall0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(comm->all_reduce(t, dist::ReduceOp::Sum).is_ok());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = cpu_s() - cpu0;
  const float want = static_cast<float>(comm->size() * (comm->size() + 1) / 2);
  EXPECT_EQ(t.data<float>()[0], want);
  EXPECT_EQ(t.data<float>()[n - 1], want);
  if (comm->rank() == 0) {
    EXPECT_GT(wall, 0.3) << "rank 0 did not wait for rank 1";
    EXPECT_LT(cpu, 0.5 * wall) << "rank 0 spent " << cpu << " s of CPU in a " << wall << " s wait";
  }
}

}  // namespace
}  // namespace ms

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::vector<std::string> notes;
  auto world = ms::dist::init({"mpi", 30}, &notes);
  if (!world) {
    std::fprintf(stderr, "%s\n", world.status().message().c_str());
    return 1;
  }
  if ((*world)->rank() != 0) ::testing::GTEST_FLAG(print_time) = false;
  const int rc = RUN_ALL_TESTS();
  // Every rank's verdict: the job fails when any rank failed.
  ms::Tensor verdict = ms::Tensor::scalar<int32_t>(rc != 0 ? 1 : 0);
  const bool ok = (*world)->all_reduce(verdict, ms::dist::ReduceOp::Sum).is_ok();
  world->reset();
  ms::dist::finalize();
  return ok && verdict.data<int32_t>()[0] == 0 ? 0 : 1;
}
