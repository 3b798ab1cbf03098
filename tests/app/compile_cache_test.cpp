// The app's compiled graphs kept between runs (app/session/compile_cache.h) through run_mode, as the
// Run panel's jobs call it: the same request twice compiles once, another option or backend compiles
// again, another batch adds a bucket, another graph never finds the first one's graphs, and the cache
// stays within its bound and empties when the model goes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/session/compile_cache.h"
#include "app/session/mode_run.h"
#include "engine/backends/select.h"
#include "engine/compiler/pipeline.h"
#include "tests/profiler/test_util.h"

namespace ms::session {
namespace {

// small_net with a symbolic leading dim named "batch": x[batch, 8] -> ... -> y.
std::shared_ptr<const ir::Graph> batched_net() {
  ir::Graph g = prof::test::small_net();
  ir::Value* x = g.value("x");
  x->type = ir::ValueType{DType::F32, std::vector<int64_t>{-1, 8}, {"batch", ""}};
  return std::make_shared<const ir::Graph>(std::move(g));
}

// Counts the backends made: a run that reuses a compiled graph reuses its backend too.
struct Made {
  int backends = 0;
};

ModeRun graph_request(Made& made) {
  ModeRun req;
  req.mode = "graph";
  req.threads = 1;
  req.iterations = 2;
  req.warmup = 1;
  req.make_backend = [&made](const std::string& device, int threads) {
    ++made.backends;
    return backends::create_backend(device, threads);
  };
  return req;
}

// The open model, its cache and a request: what a window with a model holds.
struct Window {
  std::shared_ptr<const ir::Graph> g = batched_net();
  CompileCache cache;
  Made made;
  ModeRun req;
  RunCallbacks job;
  explicit Window(size_t max_graphs = 8) : cache(max_graphs), req(graph_request(made)) { cache.set_model(g); }
  Expected<ModeRunOutcome> run(const ModeRun& r) { return run_mode(*g, r, job, &cache); }
};

struct Progress final : RunCallbacks {
  std::vector<std::string> texts;
  void progress(double, const std::string& what) override { texts.push_back(what); }
};

TEST(CompileCache, SecondRunOfTheSameRequestCompilesNothing) {
  auto g = batched_net();
  CompileCache cache;
  cache.set_model(g);
  Made made;
  const ModeRun req = graph_request(made);
  Progress first_job, second_job;
  auto first = run_mode(*g, req, first_job, &cache);
  ASSERT_TRUE(first) << first.status().message();
  EXPECT_EQ(first->compiles, 1);
  EXPECT_EQ(first->cache_hits, 2);  // 3 iterations, the first compiled
  EXPECT_FALSE(first->cached);
  EXPECT_GT(first->compile_ms, 0.0);
  EXPECT_EQ(first->bucket, "batch<=1");
  EXPECT_EQ(first_job.texts.front(), "Compiling");

  auto second = run_mode(*g, req, second_job, &cache);
  ASSERT_TRUE(second) << second.status().message();
  EXPECT_EQ(second->compiles, 1);
  EXPECT_EQ(second->cache_hits, 5);
  EXPECT_TRUE(second->cached);
  EXPECT_EQ(second->compile_ms, 0.0);
  EXPECT_EQ(second_job.texts.front(), "Compiled graph cached");
  EXPECT_EQ(made.backends, 1);
  EXPECT_EQ(second->outputs, first->outputs);
  ASSERT_FALSE(second->outputs.empty());
  // The pass stepper and the heatmap still get the compiled graph's snapshots and plan.
  EXPECT_EQ(second->passes.size(), first->passes.size());
  EXPECT_FALSE(second->passes.empty());
  ASSERT_TRUE(second->plan);
  EXPECT_EQ(second->plan->arena_bytes, first->plan->arena_bytes);
  ASSERT_TRUE(second->trace);
  // The same work, recorded the same way, as when it compiled.
  EXPECT_EQ(second->peak_bytes, first->peak_bytes);
  EXPECT_EQ(second->kernels, first->kernels);
  EXPECT_EQ(second->trace->events.size(), first->trace->events.size());
  EXPECT_EQ(second->trace->blocks.size(), first->trace->blocks.size());
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.graphs(), 1u);
  // Both traces carry the compiled graph's compile time, for the comparison's break-even (the first
  // run paid it, the second found it cached); it used to read 0 for every run through the cache.
  ASSERT_TRUE(first->trace);
  EXPECT_GT(first->trace->meta_number("compile_ms"), 0.0);
  EXPECT_EQ(first->trace->meta("compile_cached"), "false");
  EXPECT_EQ(second->trace->meta_number("compile_ms"), first->trace->meta_number("compile_ms"));
  EXPECT_EQ(second->trace->meta("compile_cached"), "true");
}

TEST(CompileCache, AnotherOptionOrDeviceCompilesAgain) {
  Window w;
  auto& [g, cache, made, base, job] = w;
  ASSERT_TRUE(run_mode(*g, base, job, &cache));

  ModeRun o0 = base;
  o0.jit_level = "O0";
  ModeRun without = base;
  const auto pipeline = compiler::describe_pipeline(*compiler::parse_jit_level(base.jit_level));
  ASSERT_FALSE(pipeline.empty());
  without.disabled_passes = {pipeline.back().argument};
  ModeRun threads = base;
  threads.threads = 2;
  int backends = made.backends;
  for (const ModeRun* other : {&o0, &without, &threads}) {
    auto r = run_mode(*g, *other, job, &cache);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_FALSE(r->cached);
    EXPECT_GT(r->compile_ms, 0.0);
    EXPECT_EQ(r->compiles, 1);
    EXPECT_EQ(made.backends, ++backends);  // each compiled for a backend of its own
  }
  EXPECT_EQ(cache.entries(), 4u);
  // The first options again: still kept.
  auto again = run_mode(*g, base, job, &cache);
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(made.backends, backends);
}

TEST(CompileCache, AnotherBatchCompilesANewBucketOrFindsOne) {
  Window w;
  auto& [g, cache, made, req, job] = w;
  ASSERT_TRUE(run_mode(*g, req, job, &cache));
  req.batch = 3;
  auto three = run_mode(*g, req, job, &cache);
  ASSERT_TRUE(three) << three.status().message();
  EXPECT_FALSE(three->cached);
  EXPECT_EQ(three->compiles, 2);
  EXPECT_EQ(three->bucket, "batch<=4");
  EXPECT_EQ(three->buckets, (std::vector<std::string>{"batch<=4", "batch<=1"}));
  req.batch = 4;
  auto four = run_mode(*g, req, job, &cache);
  ASSERT_TRUE(four) << four.status().message();
  EXPECT_TRUE(four->cached);
  EXPECT_EQ(four->compiles, 2);
  EXPECT_EQ(four->bucket, "batch<=4");
  // The run's own shapes, not the bucket's bound: 4 rows of 8 in the output's summary.
  ASSERT_FALSE(four->outputs.empty());
  EXPECT_NE(four->outputs[0].find("f32[4,8]"), std::string::npos) << four->outputs[0];
  EXPECT_NE(three->outputs[0].find("f32[3,8]"), std::string::npos) << three->outputs[0];
  req.batch = 1;
  auto one = run_mode(*g, req, job, &cache);
  ASSERT_TRUE(one) << one.status().message();
  EXPECT_TRUE(one->cached);
  EXPECT_EQ(one->buckets, (std::vector<std::string>{"batch<=1", "batch<=4"}));
  EXPECT_EQ(made.backends, 1);
}

TEST(CompileCache, AnotherGraphNeverFindsTheFirstGraphsEntries) {
  auto g = batched_net();
  auto other = batched_net();  // the same text, another model
  CompileCache cache;
  cache.set_model(g);
  Made made;
  const ModeRun req = graph_request(made);
  RunCallbacks job;
  ASSERT_TRUE(run_mode(*g, req, job, &cache));
  auto r = run_mode(*other, req, job, &cache);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_FALSE(r->cached);
  EXPECT_GT(r->compile_ms, 0.0);
  EXPECT_EQ(cache.entries(), 1u);  // not kept: the cache serves the open model only
  // Opening the other model frees the first one's graphs; its runs are then the ones kept.
  cache.set_model(other);
  EXPECT_EQ(cache.entries(), 0u);
  auto first_again = run_mode(*g, req, job, &cache);
  ASSERT_TRUE(first_again) << first_again.status().message();
  EXPECT_FALSE(first_again->cached);
  auto other_twice = run_mode(*other, req, job, &cache);
  ASSERT_TRUE(other_twice && run_mode(*other, req, job, &cache).value().cached);
  cache.set_model(nullptr);  // the model closes
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.graphs(), 0u);
}

TEST(CompileCache, KeepsAtMostItsBoundLeastRecentlyUsedFirst) {
  Window w(2);
  auto& [g, cache, made, req, job] = w;
  for (int batch : {1, 2, 4}) {
    req.batch = batch;
    auto r = run_mode(*g, req, job, &cache);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_LE(r->buckets.size(), 2u);
  }
  EXPECT_EQ(cache.graphs(), 2u);
  req.batch = 1;  // evicted: compiles again
  auto one = run_mode(*g, req, job, &cache);
  ASSERT_TRUE(one) << one.status().message();
  EXPECT_FALSE(one->cached);
  EXPECT_EQ(one->buckets, (std::vector<std::string>{"batch<=1", "batch<=4"}));
  // Another entry over the bound drops the least recently used entry.
  ModeRun o0 = req;
  o0.jit_level = "O0";
  ASSERT_TRUE(run_mode(*g, o0, job, &cache));
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.graphs(), 1u);
  auto base = run_mode(*g, req, job, &cache);
  ASSERT_TRUE(base) << base.status().message();
  EXPECT_FALSE(base->cached);
}

// Room reserved beside the bound (Pass Effect's graphs) is kept, grows, never passes kMaxGraphs and
// goes with the model.
TEST(CompileCache, ReservedRoomIsBoundedAndGoesWithTheModel) {
  Window w(2);
  EXPECT_EQ(w.cache.max_graphs(), 2u);
  w.cache.reserve(5);
  EXPECT_EQ(w.cache.max_graphs(), 7u);
  w.cache.reserve(1);  // less than reserved: the room stays
  EXPECT_EQ(w.cache.max_graphs(), 7u);
  w.cache.reserve(100000);
  EXPECT_EQ(w.cache.max_graphs(), CompileCache::kMaxGraphs);
  for (int batch : {1, 2, 4, 8}) {
    w.req.batch = batch;
    ASSERT_TRUE(w.run(w.req));
  }
  EXPECT_EQ(w.cache.graphs(), 4u);  // past the bound of 2: kept in the room
  w.cache.set_model(batched_net());
  EXPECT_EQ(w.cache.max_graphs(), 2u);
  EXPECT_EQ(w.cache.entries(), 0u);
  // A bound over kMaxGraphs stays as given.
  CompileCache big(CompileCache::kMaxGraphs + 10);
  big.reserve(5);
  EXPECT_EQ(big.max_graphs(), CompileCache::kMaxGraphs + 10);
}

// Runs are jobs on worker threads: two at once with the same request each get an executor of their
// own (one of them compiles its own), and one entry is kept.
TEST(CompileCache, RunsAtOnceShareNoExecutor) {
  auto g = batched_net();
  CompileCache cache;
  cache.set_model(g);
  Made made;
  ModeRun req = graph_request(made);
  req.make_backend = nullptr;
  req.iterations = 20;
  RunCallbacks job;
  ASSERT_TRUE(run_mode(*g, req, job, &cache));
  std::vector<Expected<ModeRunOutcome>> results(4, Status::error(ErrorCode::Internal, "not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      RunCallbacks own;
      results[i] = run_mode(*g, req, own, &cache);
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r) << r.status().message();
    ASSERT_FALSE(r->outputs.empty());
  }
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_GE(cache.graphs(), 1u);
}

}  // namespace
}  // namespace ms::session
