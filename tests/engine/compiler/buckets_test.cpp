// Shape buckets (compiler/buckets.h): a graph with a symbolic dim compiles once per power-of-two
// bucket, runs at the actual size with outputs equal to PyNative's, plans its intermediates at the
// bucket's bound, and keeps a bounded cache.
#include <gtest/gtest.h>

#include <map>

#include "engine/backends/select.h"
#include "engine/compiler/buckets.h"
#include "engine/runtime/executor.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler {
namespace {

// x: f32[seq, 8] with a shape computation (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) that
// must stay in the graph: constant folding it at one size would break every other size.
const char* kSeqGraph = R"(
input x: f32[-1,8]
init w: f32[8,8] = 0.125
init b: f32[8] = 0.5
init zero: i64[] = 0
init two: i64[1] = 2
init four: i64[1] = 4
init axes: i64[1] = 0
m = MatMul(x, w)
a = Add(m, b)
r = Relu(a)
s = Softmax(r) {axis=1}
sh = Shape(s)
n = Gather(sh, zero)
n1 = Unsqueeze(n, axes)
dims = Concat(n1, two, four) {axis=0}
y = Reshape(s, dims)
t = Tanh(y)
output t
)";

ir::Graph seq_graph() {
  ir::Graph g = testing::parse_graph(kSeqGraph);
  g.value("x")->type.dim_params = {"seq", ""};
  return g;
}

runtime::TensorMap seq_inputs(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n * 8));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 17) / 8.f - 1.f;
  return {{"x", Tensor::from_vector<float>(v, {n, 8})}};
}

void expect_same(const Tensor& got, const Tensor& want, int64_t n) {
  ASSERT_EQ(got.shape(), want.shape()) << "seq " << n;
  for (int64_t i = 0; i < want.numel(); ++i) {
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-6) << "seq " << n << " element " << i;
  }
}

TEST(ShapeBuckets, BoundIsTheNextPowerOfTwo) {
  EXPECT_EQ(bucket_bound(0), 1);
  EXPECT_EQ(bucket_bound(1), 1);
  EXPECT_EQ(bucket_bound(2), 2);
  EXPECT_EQ(bucket_bound(3), 4);
  EXPECT_EQ(bucket_bound(64), 64);
  EXPECT_EQ(bucket_bound(65), 128);
  EXPECT_EQ(bucket_bound(512), 512);
}

TEST(ShapeBuckets, SymbolicDimsAreNamedByTheModelOrByInputAndAxis) {
  ir::Graph g = seq_graph();
  auto sym = symbolic_dims(g);
  ASSERT_EQ(sym.count("x"), 1u);
  EXPECT_EQ(sym["x"], (std::vector<std::string>{"seq", ""}));
  g.value("x")->type.dim_params = {"", ""};
  EXPECT_EQ(symbolic_dims(g)["x"], (std::vector<std::string>{"x:0", ""}));
  auto key = bucket_of(seq_graph(), seq_inputs(5));
  ASSERT_TRUE(key) << key.status().message();
  EXPECT_EQ(key->text, "seq<=8");
  EXPECT_EQ(key->dim_bounds.at("seq"), 8);
  EXPECT_EQ(*key->signature.at("x").dims, (std::vector<int64_t>{-1, 8}));
  auto exact = bucket_of(seq_graph(), seq_inputs(5), true);
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->dim_bounds.empty());
  EXPECT_EQ(*exact->signature.at("x").dims, (std::vector<int64_t>{5, 8}));
}

TEST(ShapeBuckets, EverySizeMatchesPyNativeWithOneCompilePerBucket) {
  const ir::Graph g = seq_graph();
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(g, *be);
  CompileOptions o;
  o.jit_level = JitLevel::O2;
  BucketedExecutor graph(g, *be, o);
  for (int64_t n = 1; n <= 20; ++n) {
    const auto in = seq_inputs(n);
    auto want = eager.run(in);
    ASSERT_TRUE(want) << want.status().message();
    auto got = graph.run(in);
    ASSERT_TRUE(got) << "seq " << n << ": " << got.status().message();
    ASSERT_EQ(got->size(), 1u);
    expect_same((*got)[0], (*want)[0], n);
  }
  // Buckets 1, 2, 4, 8, 16, 32: six compiles for twenty sizes.
  EXPECT_EQ(graph.stats().compiles, 6);
  EXPECT_EQ(graph.stats().cache_hits, 14);
  EXPECT_EQ(graph.stats().evictions, 0);
  EXPECT_EQ(graph.buckets().front(), "seq<=32");
}

TEST(ShapeBuckets, TypesAreInferredAcrossTheBucketAndTheShapeComputationGoes) {
  const ir::Graph g = seq_graph();
  auto be = backends::create_cpu_backend(1);
  BucketedExecutor graph(g, *be, CompileOptions{});
  auto ex = graph.executor_for(seq_inputs(5));
  ASSERT_TRUE(ex) << ex.status().message();
  // Probed at 5, 6 and 8: the symbolic dim keeps its name through MatMul, Softmax and Reshape, the
  // Reshape's target becomes the constant [-1, 2, 4] and Shape -> Gather -> Concat is gone.
  const ir::Graph& c = (*ex)->graph();
  for (const auto& n : c.nodes()) {
    EXPECT_NE(n.op_type, "Concat") << n.label();
    EXPECT_NE(n.op_type, "Shape") << n.label();
  }
  const ir::Value* t = c.value("t");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->type.to_string(), "f32[seq,2,4]");
}

TEST(ShapeBuckets, IntermediatesArePlannedAtTheBucketsBound) {
  const ir::Graph g = seq_graph();
  auto be = backends::create_cpu_backend(1);
  BucketedExecutor graph(g, *be, CompileOptions{});
  auto ex = graph.executor_for(seq_inputs(5));
  ASSERT_TRUE(ex) << ex.status().message();
  // Bound 8: each [seq, 8] f32 intermediate gets 8 x 8 x 4 bytes of the arena (the shape
  // computation's small i64 values are static and planned as they are).
  const auto& plan = (*ex)->memory_plan();
  int bounded = 0;
  for (const auto& slot : plan.slots)
    if (slot.bytes > 64) {
      EXPECT_EQ(slot.bytes, 256u) << slot.value;
      ++bounded;
    }
  EXPECT_GE(bounded, 1);
  EXPECT_GE(plan.arena_bytes, 256u);
  // Sizes in the bucket run on that plan: the values land in the arena (the observer hears of each
  // planned slot once, at the run's start), only the graph's output is allocated apart.
  struct Allocations final : runtime::RunObserver {
    std::map<std::string, int> values;
    void on_alloc(const runtime::MemoryEvent& e) override { ++values[std::string(e.value)]; }
  };
  for (int64_t n : {5, 8, 6}) {
    Allocations seen;
    runtime::RunOptions ro;
    ro.observer = &seen;
    auto out = (*ex)->run(seq_inputs(n), ro);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ((*out)[0].shape(), (Shape{n, 2, 4}));
    for (const auto& slot : (*ex)->memory_plan().slots) {
      EXPECT_EQ(seen.values[slot.value], 1) << slot.value << " at seq " << n;
    }
    EXPECT_EQ(seen.values["t"], 1) << "seq " << n;
  }
  // A size outside the bucket is refused, naming the range (its types were inferred across it).
  auto big = (*ex)->run(seq_inputs(11));
  ASSERT_FALSE(big);
  EXPECT_NE(big.status().message().find("(seq in 5..8)"), std::string::npos) << big.status().message();
}

TEST(ShapeBuckets, TheCacheKeepsItsCapacityAndExactModeCompilesPerShape) {
  const ir::Graph g = seq_graph();
  auto be = backends::create_cpu_backend(1);
  BucketedExecutor small(g, *be, CompileOptions{}, 2);
  for (int64_t n : {1, 3, 5, 1}) ASSERT_TRUE(small.run(seq_inputs(n))) << n;
  EXPECT_EQ(small.stats().compiles, 4);  // bucket 1 was dropped for bucket 8, then compiled again
  EXPECT_EQ(small.stats().evictions, 2);
  EXPECT_EQ(small.buckets().size(), 2u);
  BucketedExecutor exact(g, *be, CompileOptions{}, 16, true);
  for (int64_t n : {3, 3, 5}) ASSERT_TRUE(exact.run(seq_inputs(n))) << n;
  EXPECT_EQ(exact.stats().compiles, 2);
  EXPECT_EQ(exact.stats().cache_hits, 1);
}

TEST(ShapeBuckets, AnInputOfTheWrongRankIsNamed) {
  const ir::Graph g = seq_graph();
  auto be = backends::create_cpu_backend(1);
  BucketedExecutor graph(g, *be, CompileOptions{});
  auto r = graph.run({{"x", Tensor::zeros(DType::F32, {2, 8, 1})}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("input 'x' has rank 3 but the model's has 2"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace ms::compiler
