// Data parallel without MPI: the gradient buckets, the one-rank communicator, the data-parallel
// passes on a traced training step, the data loader's shards, and single-rank data-parallel
// training giving the same weights as plain training.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/compiler/pipeline.h"
#include "engine/dist/nccl_communicator.h"
#include "engine/dist/world.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/train/data.h"
#include "engine/frontend/train/run.h"

namespace ms {
namespace {

using nn::train::GradBucket;
using nn::train::plan_grad_buckets;

constexpr int64_t kMiB = 1024 * 1024;

TEST(GradBuckets, ReverseParameterOrderSmallFirstBucketThenCap) {
  // Four 0.6 MiB parameters, first bucket 1 MiB, then 2 MiB.
  const std::vector<int64_t> bytes(4, kMiB * 6 / 10);
  const std::vector<DType> dtypes(4, DType::F32);
  const std::vector<GradBucket> b = plan_grad_buckets(bytes, dtypes, 1, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].params, (std::vector<size_t>{3}));
  EXPECT_EQ(b[1].params, (std::vector<size_t>{2, 1, 0}));
  EXPECT_EQ(b[1].bytes, 3 * (kMiB * 6 / 10));
}

TEST(GradBuckets, LargeParameterGetsItsOwnBucketAndDtypesSplit) {
  const std::vector<int64_t> bytes{100, 10 * kMiB, 100, 100};
  const std::vector<DType> dtypes{DType::F32, DType::F32, DType::F64, DType::F64};
  const std::vector<GradBucket> b = plan_grad_buckets(bytes, dtypes, 1, 1);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].params, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(b[0].dtype, DType::F64);
  EXPECT_EQ(b[1].params, (std::vector<size_t>{1}));
  EXPECT_EQ(b[2].params, (std::vector<size_t>{0}));
}

TEST(LocalCommunicator, CollectivesAreTheIdentityOnOneRank) {
  dist::LocalCommunicator c;
  Tensor t = Tensor::from_vector<float>({1, 2, 3}, {3});
  auto w = c.all_reduce_async(t, dist::ReduceOp::Mean);
  ASSERT_TRUE(w->wait().is_ok());
  EXPECT_FLOAT_EQ(t.data<float>()[2], 3.0f);
  auto g = c.all_gather(t);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->numel(), 3);
  EXPECT_TRUE(c.broadcast(t, 0).is_ok());
  EXPECT_FALSE(c.broadcast(t, 1).is_ok());
  Tensor ints = Tensor::from_vector<int64_t>({1, 2}, {2});
  Status mean_of_ints = c.all_reduce(ints, dist::ReduceOp::Mean);
  ASSERT_FALSE(mean_of_ints.is_ok());
  EXPECT_NE(mean_of_ints.message().find("floats only"), std::string::npos) << mean_of_ints.message();
}

TEST(NcclCommunicator, OneRankNeedsNoMpiAndWithoutADeviceSaysWhy) {
  auto nccl = dist::create_nccl_communicator(nullptr);
  if (!nccl) {
    const std::string m = nccl.status().message();
    EXPECT_TRUE(m.find("NCCL needs a CUDA device") != std::string::npos || m.find("no NCCL") != std::string::npos) << m;
    EXPECT_EQ(dist::nccl_built(), m.find("no NCCL") == std::string::npos);
    return;
  }
  // A device: one rank, collectives through the device staging buffer.
  EXPECT_EQ((*nccl)->size(), 1);
  Tensor t = Tensor::from_vector<float>({1, 2, 3}, {3});
  ASSERT_TRUE((*nccl)->all_reduce(t, dist::ReduceOp::Sum).is_ok());
  EXPECT_FLOAT_EQ(t.data<float>()[2], 3.0f);
  auto g = (*nccl)->all_gather(t);
  ASSERT_TRUE(g);
  EXPECT_FLOAT_EQ(g->data<float>()[1], 2.0f);
}

TEST(DataLoaderShards, EachRankTakesItsSliceOfTheGlobalBatch) {
  nn::train::Dataset ds;
  ds.name = "rows";
  std::vector<float> xs(8);
  for (int i = 0; i < 8; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i);
  ds.x = Tensor::from_vector<float>(xs, {8, 1});
  ds.y = Tensor::from_vector<int64_t>({0, 1, 0, 1, 0, 1, 0, 1}, {8});
  nn::train::DataLoader whole(ds, 4, /*shuffle=*/true, 3);
  nn::train::DataLoader r0(ds, 4, true, 3), r1(ds, 4, true, 3);
  r0.shard(0, 2);
  r1.shard(1, 2);
  ASSERT_TRUE(r1.check().is_ok());
  const nn::train::Batch b = whole.next(), b0 = r0.next(), b1 = r1.next();
  ASSERT_EQ(b0.x.dim(0), 2);
  EXPECT_EQ(b0.x.data<float>()[1], b.x.data<float>()[1]);
  EXPECT_EQ(b1.x.data<float>()[0], b.x.data<float>()[2]);
  nn::train::DataLoader odd(ds, 3, true, 3);
  odd.shard(0, 2);
  EXPECT_FALSE(odd.check().is_ok());
}

TEST(DataParallelPasses, ListedOnlyWhenDataParallelIsOn) {
  auto has = [](const std::vector<compiler::PipelineEntry>& es, const std::string& arg) {
    for (const auto& e : es)
      if (e.argument == arg) return true;
    return false;
  };
  EXPECT_FALSE(has(compiler::describe_pipeline(compiler::JitLevel::O1), "insert-allreduce"));
  const auto dp = compiler::describe_pipeline(compiler::JitLevel::O1, compiler::AmpLevel::O0, true);
  EXPECT_TRUE(has(dp, "insert-allreduce"));
  EXPECT_TRUE(has(dp, "fuse-allreduce"));
  EXPECT_TRUE(compiler::check_pass_names({"fuse-allreduce"}).is_ok());
}

nn::train::RunOptions one_rank_options(nn::Mode mode) {
  nn::train::RunOptions o;
  o.model = "zoo:mnist_mlp?batch=8&hidden=16";
  o.mode = mode;
  o.optimizer = "adam";
  o.steps = 2;
  o.evaluate = false;
  o.keep_parameters = true;
  o.data_dir = MODESCOPE_SOURCE_DIR "/samples/data";
  return o;
}

// The nodes of this op (AllReduce, AllReduceStart, AllReduceWait) in the last compiled training
// step of a one-rank data-parallel run.
std::vector<ir::Node> allreduce_nodes(const nn::train::RunResult& r, const std::string& op = "AllReduce") {
  std::vector<ir::Node> out;
  if (!r.observed_graph) return out;
  for (const ir::Node& n : r.observed_graph->nodes())
    if (n.op_type == op && n.domain == "ai.modescope") out.push_back(n);
  return out;
}

struct NullObserver final : runtime::RunObserver {};

Expected<nn::train::RunResult> graph_run(const nn::train::DataParallelConfig& cfg,
                                         std::vector<std::string> disabled = {}) {
  nn::set_context(nn::Mode::Graph);
  nn::train::RunOptions o = one_rank_options(nn::Mode::Graph);
  o.data_parallel = cfg;
  o.disabled_passes = std::move(disabled);
  static NullObserver observer;
  o.observe_last_step = &observer;
  return nn::train::run_training(o);
}

TEST(DataParallelPasses, InsertOnePerGradientThenFuseBySplitIndicesOrSize) {
  ASSERT_TRUE(dist::init({"local", 10}));
  nn::train::DataParallelConfig cfg;
  auto singles = graph_run(cfg, {"fuse-allreduce"});
  ASSERT_TRUE(singles) << singles.status().message();
  const auto s = allreduce_nodes(*singles);
  ASSERT_EQ(s.size(), 6u);  // 3 Dense layers: weight and bias each
  for (const ir::Node& n : s) {
    EXPECT_EQ(n.inputs.size(), 1u);
    EXPECT_FALSE(n.origins.empty()) << "an AllReduce without origins";
    EXPECT_EQ(n.attr_int("mean", 0), 1);
  }
  cfg.fusion_split = {2, 5};
  auto split = graph_run(cfg);
  ASSERT_TRUE(split) << split.status().message();
  EXPECT_TRUE(allreduce_nodes(*split).empty());
  const auto f = allreduce_nodes(*split, "AllReduceStart");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].inputs.size(), 2u);
  EXPECT_EQ(f[1].inputs.size(), 3u);
  EXPECT_EQ(f[2].inputs.size(), 1u);
  const auto waits = allreduce_nodes(*split, "AllReduceWait");
  ASSERT_EQ(waits.size(), 3u);
  EXPECT_EQ(waits[0].outputs.size() + waits[1].outputs.size() + waits[2].outputs.size(), 6u);
  // Every Start runs before any Wait: the collectives overlap the rest of the backward.
  size_t last_start = 0, first_wait = SIZE_MAX;
  const auto& nodes = split->observed_graph->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op_type == "AllReduceStart") last_start = i;
    if (nodes[i].op_type == "AllReduceWait") first_wait = std::min(first_wait, i);
  }
  EXPECT_LT(last_start, first_wait);
  EXPECT_FALSE(f[0].origins.empty());
  cfg.fusion_split.clear();
  auto all = graph_run(cfg);
  ASSERT_TRUE(all) << all.status().message();
  ASSERT_EQ(allreduce_nodes(*all, "AllReduceStart").size(), 1u);
  EXPECT_EQ(allreduce_nodes(*all, "AllReduceStart")[0].inputs.size(), 6u);
  bool listed = false;
  for (const auto& p : all->passes) listed = listed || p.pass == "fuse-allreduce";
  EXPECT_TRUE(listed);
  auto refused = graph_run(cfg, {"insert-allreduce"});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("needs the insert-allreduce pass"), std::string::npos)
      << refused.status().message();
}

TEST(DataParallelOneRank, SameWeightsAsPlainTrainingInBothModes) {
  ASSERT_TRUE(dist::init({"local", 10}));
  for (nn::Mode mode : {nn::Mode::PyNative, nn::Mode::Graph}) {
    nn::set_context(mode);
    auto plain = nn::train::run_training(one_rank_options(mode));
    nn::train::RunOptions o = one_rank_options(mode);
    o.data_parallel = nn::train::DataParallelConfig{};
    auto dp = nn::train::run_training(o);
    ASSERT_TRUE(plain && dp) << (plain ? dp.status().message() : plain.status().message());
    EXPECT_EQ(dp->world_size, 1);
    ASSERT_EQ(dp->allreduce_ms.size(), 2u);
    ASSERT_EQ(plain->final_parameters.size(), dp->final_parameters.size());
    for (size_t i = 0; i < dp->final_parameters.size(); ++i) {
      const Tensor &a = plain->final_parameters[i].second, &b = dp->final_parameters[i].second;
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << dp->final_parameters[i].first;
    }
  }
  nn::set_context(nn::Mode::PyNative);
}

TEST(AutoParallelContext, DataParallelModeMakesRunsDataParallelAndDeviceNumMustMatch) {
  ASSERT_TRUE(dist::init({"local", 10}));
  nn::set_context(nn::Mode::PyNative);
  nn::AutoParallelContext pc;
  pc.parallel_mode = nn::ParallelMode::DataParallel;
  pc.device_num = 2;  // the world has one rank
  nn::set_auto_parallel_context(pc);
  auto wrong = nn::train::run_training(one_rank_options(nn::Mode::PyNative));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.status().message().find("device_num is 2 but the communicator has 1 ranks"), std::string::npos)
      << wrong.status().message();
  pc.device_num = 0;
  nn::set_auto_parallel_context(pc);
  auto r = nn::train::run_training(one_rank_options(nn::Mode::PyNative));
  nn::reset_auto_parallel_context();
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->communicator, "local");
  EXPECT_EQ(r->allreduce_ms.size(), 2u);
  EXPECT_EQ(nn::get_auto_parallel_context().parallel_mode, nn::ParallelMode::StandAlone);
}

}  // namespace
}  // namespace ms
