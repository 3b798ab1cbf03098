// The app's Pass Effect and Numerics work through its compile cache (session/pass_effect.h,
// run_numerics with a cache): measuring again, or after a Run with the same options, compiles
// nothing; another jit level or pass list compiles; the counts follow the run report's `compiles`
// and `cache_hits`, and the figures and values are those of compiling runs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "app/session/compile_cache.h"
#include "app/session/mode_run.h"
#include "app/session/numerics.h"
#include "app/session/pass_effect.h"
#include "engine/backends/select.h"
#include "engine/compiler/pipeline.h"
#include "tests/profiler/test_util.h"

namespace ms::session {
namespace {

// The open model, the window's cache and the Run panel's Graph-mode request; counts the backends
// made (each compiled entry makes one).
struct PassEffectWindow {
  std::shared_ptr<const ir::Graph> g = std::make_shared<const ir::Graph>(prof::test::small_net());
  CompileCache cache;
  int backends = 0;
  ModeRun req;
  RunCallbacks job;
  PassEffectWindow() {
    cache.set_model(g);
    req.mode = "graph";
    req.threads = 1;
    req.iterations = 2;
    req.warmup = 1;
    req.make_backend = [this](const std::string& device, int threads) {
      ++backends;
      return backends::create_backend(device, threads);
    };
  }
  // Two passes of the request's pipeline, as the dock would leave them out.
  std::vector<std::string> two_passes(const std::string& level) const {
    const auto pipeline = compiler::describe_pipeline(*compiler::parse_jit_level(level));
    EXPECT_GE(pipeline.size(), 2u);
    return {pipeline.front().argument, pipeline.back().argument};
  }
  Expected<PassEffects> measure(const ModeRun& r, CompileCache* c) {
    return measure_pass_effects(*g, r, two_passes(r.jit_level), job, c);
  }
  Expected<NumericsOutcome> numerics(NumericsJob::Kind kind, const ModeRun& r, double tol = 1e-4) {
    NumericsJob j;
    j.kind = kind;
    j.run = r;
    j.tol = tol;
    return run_numerics(*g, j, job, &cache);
  }
};

// Iterations of one measurement: the whole pipeline twice and each pass left out once.
int64_t measured_iterations(const ModeRun& r, size_t passes) {
  return static_cast<int64_t>(passes + 2) * (r.warmup + r.iterations);
}

TEST(PassEffectCache, MeasuringTwiceCompilesOnce) {
  PassEffectWindow w;
  auto first = w.measure(w.req, &w.cache);
  ASSERT_TRUE(first) << first.status().message();
  // The whole pipeline and each pass left out compile; the whole pipeline's second run finds it.
  EXPECT_EQ(first->counts.compiles, 3);
  EXPECT_EQ(first->counts.cache_hits, measured_iterations(w.req, 2) - 3);
  EXPECT_EQ(w.backends, 3);
  ASSERT_EQ(first->without.size(), 2u);
  EXPECT_TRUE(first->full.error.empty()) << first->full.error;
  for (const auto& [pass, run] : first->without) EXPECT_TRUE(run.error.empty()) << pass << ": " << run.error;

  auto second = w.measure(w.req, &w.cache);
  ASSERT_TRUE(second) << second.status().message();
  EXPECT_EQ(second->counts.compiles, 0);
  EXPECT_EQ(second->counts.cache_hits, measured_iterations(w.req, 2));
  EXPECT_EQ(w.backends, 3);
  EXPECT_TRUE(second->full.cached);
  // The figures of the cached graphs: the same graphs, and the compile time they took.
  EXPECT_EQ(second->full.nodes, first->full.nodes);
  EXPECT_EQ(second->full.kernels, first->full.kernels);
  EXPECT_EQ(second->full.arena_bytes, first->full.arena_bytes);
  EXPECT_GT(second->full.compile_ms, 0.0);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(second->without[i].first, first->without[i].first);
    EXPECT_TRUE(second->without[i].second.cached);
    EXPECT_EQ(second->without[i].second.compile_ms, first->without[i].second.compile_ms);
    EXPECT_EQ(second->without[i].second.nodes, first->without[i].second.nodes);
  }
}

TEST(PassEffectCache, AnotherJitLevelCompilesAgainAndTheFirstStaysKept) {
  PassEffectWindow w;
  ASSERT_TRUE(w.measure(w.req, &w.cache));
  ModeRun o0 = w.req;
  o0.jit_level = "O0";
  auto other = w.measure(o0, &w.cache);
  ASSERT_TRUE(other) << other.status().message();
  EXPECT_EQ(other->counts.compiles, 3);
  EXPECT_TRUE(other->full.error.empty()) << other->full.error;
  for (const auto& [pass, run] : other->without) EXPECT_TRUE(run.error.empty()) << pass << ": " << run.error;
  auto back = w.measure(w.req, &w.cache);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->counts.compiles, 0);
}

TEST(PassEffectCache, TheRunPanelsGraphIsTheWholePipeline) {
  PassEffectWindow w;
  auto run = run_mode(*w.g, w.req, w.job, &w.cache);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_EQ(run->this_run.compiles, 1);
  auto m = w.measure(w.req, &w.cache);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->counts.compiles, 2);  // only the two pipelines without a pass
  EXPECT_TRUE(m->full.cached);
  // A pass left out in the Run panel is not the baseline: the measurement's whole pipeline is.
  ModeRun without = w.req;
  without.disabled_passes = {w.two_passes(w.req.jit_level).front()};
  auto again = w.measure(without, &w.cache);
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ(again->counts.compiles, 0);
}

// Every pass of the pipeline left out: more graphs than the cache's default bound of 8. The
// measurement reserves room for them, so the second compiles nothing, and the Run panel's graph (at
// another jit level) stays kept through both.
TEST(PassEffectCache, MoreThanEightPassesMeasuredTwiceCompileNothingTheSecondTime) {
  PassEffectWindow w;
  std::vector<std::string> passes;
  for (const auto& p : compiler::describe_pipeline(*compiler::parse_jit_level(w.req.jit_level)))
    passes.push_back(p.argument);
  ASSERT_GT(passes.size() + 1, w.cache.max_graphs());
  ModeRun o0 = w.req;
  o0.jit_level = "O0";
  ASSERT_TRUE(run_mode(*w.g, o0, w.job, &w.cache));
  auto first = measure_pass_effects(*w.g, w.req, passes, w.job, &w.cache);
  ASSERT_TRUE(first) << first.status().message();
  EXPECT_TRUE(first->full.error.empty()) << first->full.error;
  for (const auto& [pass, run] : first->without) EXPECT_TRUE(run.error.empty()) << pass << ": " << run.error;
  EXPECT_EQ(first->counts.compiles, static_cast<int64_t>(passes.size()) + 1);
  EXPECT_GE(w.cache.max_graphs(), passes.size() + 2);
  EXPECT_LE(w.cache.max_graphs(), CompileCache::kMaxGraphs);
  const int made = w.backends;

  auto second = measure_pass_effects(*w.g, w.req, passes, w.job, &w.cache);
  ASSERT_TRUE(second) << second.status().message();
  EXPECT_EQ(second->counts.compiles, 0);
  EXPECT_EQ(second->counts.cache_hits, measured_iterations(w.req, passes.size()));
  EXPECT_EQ(w.backends, made);
  for (const auto& [pass, run] : second->without) EXPECT_TRUE(run.cached) << pass;
  auto run = run_mode(*w.g, o0, w.job, &w.cache);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_TRUE(run->cached);
  EXPECT_EQ(run->this_run.compiles, 0);
  EXPECT_EQ(w.cache.graphs(), passes.size() + 2);
}

TEST(PassEffectCache, WithoutACacheEveryRunCompiles) {
  PassEffectWindow w;
  for (int i = 0; i < 2; ++i) {
    auto m = w.measure(w.req, nullptr);
    ASSERT_TRUE(m) << m.status().message();
    EXPECT_EQ(m->counts.compiles, 4);
  }
  EXPECT_EQ(w.cache.entries(), 0u);
}

TEST(NumericsCache, ComparingValuesAfterARunCompilesNothing) {
  PassEffectWindow w;
  ASSERT_TRUE(run_mode(*w.g, w.req, w.job, &w.cache));
  const int made = w.backends;
  for (int i = 0; i < 2; ++i) {
    auto d = w.numerics(NumericsJob::Kind::Diff, w.req);
    ASSERT_TRUE(d) << d.status().message();
    ASSERT_TRUE(d->graphs);
    EXPECT_EQ(d->graphs->compiles, 0);
    EXPECT_EQ(d->graphs->cache_hits, 1);  // the one captured iteration
    ASSERT_TRUE(d->diff);
    EXPECT_FALSE(d->diff->diff.values.empty());
    EXPECT_EQ(w.backends, made);
  }
  // Another jit level is another graph: one compile, then kept.
  ModeRun o0 = w.req;
  o0.jit_level = "O0";
  auto d0 = w.numerics(NumericsJob::Kind::Diff, o0);
  ASSERT_TRUE(d0) << d0.status().message();
  EXPECT_EQ(d0->graphs->compiles, 1);
  EXPECT_EQ(d0->graphs->cache_hits, 0);
  auto d0_again = w.numerics(NumericsJob::Kind::Diff, o0);
  ASSERT_TRUE(d0_again) << d0_again.status().message();
  EXPECT_EQ(d0_again->graphs->compiles, 0);
}

TEST(NumericsCache, CachedValuesAreThoseOfACompilingRun) {
  PassEffectWindow w;
  NumericsJob j;
  j.run = w.req;
  auto own = run_numerics(*w.g, j, w.job);  // no cache: compiles its own
  ASSERT_TRUE(own && own->diff) << own.status().message();
  EXPECT_FALSE(own->graphs);
  ASSERT_TRUE(w.numerics(NumericsJob::Kind::Diff, w.req));
  auto cached = w.numerics(NumericsJob::Kind::Diff, w.req);
  ASSERT_TRUE(cached && cached->diff) << cached.status().message();
  EXPECT_EQ(cached->graphs->compiles, 0);
  EXPECT_EQ(cached->diff->diff.summary(), own->diff->diff.summary());
  ASSERT_EQ(cached->diff->graph.outputs.size(), own->diff->graph.outputs.size());
  for (size_t i = 0; i < own->diff->graph.outputs.size(); ++i) {
    EXPECT_EQ(cached->diff->graph.outputs[i].to_string(8), own->diff->graph.outputs[i].to_string(8));
  }
}

TEST(NumericsCache, BisectingAgainCompilesNoCut) {
  PassEffectWindow w;
  // A tolerance no output meets: every cut is outside it, so the search runs down to no pass at all.
  auto first = w.numerics(NumericsJob::Kind::Bisect, w.req, -1);
  ASSERT_TRUE(first && first->bisect) << first.status().message();
  EXPECT_TRUE(first->bisect->at_start);
  const int64_t probes = static_cast<int64_t>(first->bisect->probes.size());
  ASSERT_GE(probes, 3);
  EXPECT_EQ(first->graphs->compiles, probes);
  EXPECT_EQ(first->graphs->cache_hits, 0);
  auto second = w.numerics(NumericsJob::Kind::Bisect, w.req, -1);
  ASSERT_TRUE(second && second->bisect) << second.status().message();
  EXPECT_EQ(second->bisect->summary(), first->bisect->summary());
  EXPECT_EQ(second->graphs->compiles, 0);
  EXPECT_EQ(second->graphs->cache_hits, probes);
  // The whole pipeline's graph, handed back last, is the Run panel's: a Run finds it.
  auto run = run_mode(*w.g, w.req, w.job, &w.cache);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_TRUE(run->cached);
}

TEST(NumericsCache, TheNanTrapFindsTheRunsGraph) {
  PassEffectWindow w;
  ASSERT_TRUE(run_mode(*w.g, w.req, w.job, &w.cache));
  auto t = w.numerics(NumericsJob::Kind::Trap, w.req);
  ASSERT_TRUE(t) << t.status().message();
  ASSERT_EQ(t->traps.size(), 2u);
  EXPECT_FALSE(t->traps[1].trap);
  EXPECT_EQ(t->graphs->compiles, 0);
  EXPECT_EQ(t->graphs->cache_hits, 1);
}

// A model with a symbolic batch: the cached graph is its bucket's (batch<=4 for 3 rows), compiled
// with the dim symbolic, and its values still line up with PyNative's.
TEST(NumericsCache, ASymbolicBatchComparesOnItsBucketsGraph) {
  PassEffectWindow w;
  ir::Graph batched = prof::test::small_net();
  batched.value("x")->type = ir::ValueType{DType::F32, std::vector<int64_t>{-1, 8}, {"batch", ""}};
  w.g = std::make_shared<const ir::Graph>(std::move(batched));
  w.cache.set_model(w.g);
  w.req.batch = 3;
  auto run = run_mode(*w.g, w.req, w.job, &w.cache);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_EQ(run->bucket, "batch<=4");
  auto d = w.numerics(NumericsJob::Kind::Diff, w.req);
  ASSERT_TRUE(d && d->diff) << d.status().message();
  EXPECT_EQ(d->graphs->compiles, 0);
  EXPECT_EQ(d->diff->diff.first_divergence, -1) << d->diff->diff.summary();
  EXPECT_GT(d->diff->diff.values.size(), 0u);
  for (const auto& v : d->diff->diff.values) EXPECT_TRUE(v.compared) << v.value << ": " << v.note;
  ASSERT_EQ(d->diff->graph.outputs.size(), 1u);
  EXPECT_EQ(d->diff->graph.outputs[0].shape(), (std::vector<int64_t>{3, 8}));
}

}  // namespace
}  // namespace ms::session
