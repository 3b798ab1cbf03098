// fold-weight-transpose: MatMul(A, Transpose(W)) with W a 2-D f32 constant becomes
// FusedMatMul(A, W, transB=1), which reads W in place (the compiled graph holds no transposed copy);
// values against eager execution on the prepacked, matrix-vector and split-projection paths. Not
// for other permutations, other dtypes or a 1-D A; a Transpose that something else reads stays.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/engine/compiler/bf16_compile_util.h"
#include "tests/engine/compiler/pass_test_util.h"
#include "tests/engine/kernel_harness.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;
using pass_test::count_ops;

// A projection as PyTorch exports `x @ w.T + b` followed by GELU-free ReLU: [2,10,64] x [48,64]^T.
constexpr const char* kProjection = R"(
    input x: f32[2,10,64]
    init w: f32[48,64] = 0.3 -0.2 0.1 0.05 -0.4 0.25 0.15
    init b: f32[48] = 0.1 -0.2 0.3 -0.4 0.5
    wt = Transpose(w) {perm=[1,0]}
    m = MatMul(x, wt)
    y = Add(m, b)
    r = Relu(y)
    output r
)";

// Every constant of the compiled graph of shape `dims`.
int constants_shaped(const ir::Graph& g, const Shape& dims) {
  int n = 0;
  for (const auto& name : g.initializer_names())
    if (g.value(name)->constant->shape() == dims) ++n;
  return n;
}

TEST(FoldWeightTransposePass, TheProductReadsTheWeightsInPlace) {
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(kProjection, level, 1e-4);
    ASSERT_TRUE(c.exe);
    EXPECT_EQ(count_ops(c.dump, "Transpose"), 0) << c.dump;
    EXPECT_EQ(count_ops(c.dump, "ai.modescope.FusedMatMul"), 1) << c.dump;
    EXPECT_NE(c.dump.find("transB=1"), std::string::npos) << c.dump;
    // The fused node stands for the Transpose (#1) as well as the MatMul, Add and Relu.
    EXPECT_NE(c.dump.find("origins=[1,2,3,4]"), std::string::npos) << c.dump;
    const ir::Graph& g = c.exe->graph();
    EXPECT_EQ(constants_shaped(g, {64, 48}), 0) << "a transposed copy of the weights";
    EXPECT_EQ(constants_shaped(g, {48, 64}), 1);
  }
}

// A bf16 graph (--precision bf16): amp-cast makes the weights Transpose(Cast(W)); the product takes
// Cast(W), folded to bf16 weights as W is stored, and no transposed copy in either type remains.
TEST(FoldWeightTransposePass, ABf16ProductReadsTheCastWeightsInPlace) {
  const std::string text = kProjection;
  auto be = backends::create_cpu_backend(2);
  ir::Graph g = testing::parse_graph(text);
  const Status st = testing_bf16::bf16_pipeline(g, *be);
  ASSERT_TRUE(st.is_ok()) << st.message();
  const std::string dump = ir::dump_text(g);
  EXPECT_EQ(count_ops(dump, "Transpose"), 0) << dump;
  EXPECT_NE(dump.find("transB=1"), std::string::npos) << dump;
  EXPECT_EQ(constants_shaped(g, {64, 48}), 0) << dump;
  const auto d = testing_bf16::bf16_compile_deviation(text, *be);
  EXPECT_GT(d.max_abs, 0.0);
  EXPECT_LT(d.max_diff, 0.03 * d.max_abs);
}

TEST(FoldWeightTransposePass, AFewRowsTakeTheMatrixVectorPath) {
  std::string few = kProjection;
  few.replace(few.find("f32[2,10,64]"), 12, "f32[1,3,64]");
  Compiled c = compile_and_compare(few, JitLevel::O2, 1e-4);
  ASSERT_TRUE(c.exe);
  EXPECT_NE(c.dump.find("transB=1"), std::string::npos) << c.dump;
}

// The weights stay shared with the source graph: the compiled graph's W is the same buffer.
TEST(FoldWeightTransposePass, TheCompiledGraphSharesTheSourceWeights) {
  auto be = backends::create_cpu_backend(1);
  ir::Graph g = testing::parse_graph(kProjection);
  CompileOptions o;
  o.jit_level = JitLevel::O1;
  auto c = compile_executor(g, *be, testing::signature_of(g), o);
  ASSERT_TRUE(c) << c.status().message();
  const ir::Graph& cg = (*c)->graph();
  bool shared = false;
  for (const auto& name : cg.initializer_names())
    shared |= cg.value(name)->constant->buffer() == g.value("w")->constant->buffer();
  EXPECT_TRUE(shared);
}

// A packed projection written with transposed weights: split-matmul cuts W's rows, as views of W.
TEST(FoldWeightTransposePass, APackedProjectionSplitsIntoViewsOfTheWeights) {
  constexpr const char* kPacked = R"(
    input x: f32[5,1,8]
    init w: f32[12,8] = 0.3 -0.2 0.1 0.05 -0.4 0.25 0.15
    init b: f32[12] = 0.1 -0.2 0.3 -0.4 0.5 -0.6 0.7 -0.8 0.9 -1.0 1.1 -1.2
    init s0: i64[1] = 0
    init s1: i64[1] = 4
    init s2: i64[1] = 8
    init s3: i64[1] = 12
    init ax: i64[1] = -1
    wt = Transpose(w) {perm=[1,0]}
    m = MatMul(x, wt)
    y = Add(m, b)
    q = Slice(y, s0, s1, ax)
    k = Slice(y, s1, s2, ax)
    v = Slice(y, s2, s3, ax)
    qk = Mul(q, k)
    o = Add(qk, v)
    output o
  )";
  Compiled c = compile_and_compare(kPacked, JitLevel::O1, 1e-5);
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(count_ops(c.dump, "Slice"), 0) << c.dump;
  EXPECT_EQ(count_ops(c.dump, "ai.modescope.FusedMatMul"), 3) << c.dump;
  const ir::Graph& g = c.exe->graph();
  EXPECT_EQ(constants_shaped(g, {4, 8}), 3) << c.dump;
  std::set<const void*> buffers;
  for (const auto& name : g.initializer_names())
    if (g.value(name)->constant->shape() == Shape{4, 8}) buffers.insert(g.value(name)->constant->buffer().get());
  EXPECT_EQ(buffers.size(), 1u) << "the three parts are views of one buffer";
}

TEST(FoldWeightTransposePass, StaysForOtherPermutationsDtypesAndVectors) {
  // A 1-D A: the product is a vector, which the transB kernel does not take.
  Compiled vec = compile_and_compare(R"(
    input x: f32[8]
    init w: f32[6,8] = 0.3 -0.2 0.1 0.05 -0.4
    wt = Transpose(w) {perm=[1,0]}
    y = MatMul(x, wt)
    output y
  )",
                                     JitLevel::O1, 1e-5);
  ASSERT_TRUE(vec.exe);
  EXPECT_EQ(vec.dump.find("transB"), std::string::npos) << vec.dump;
  // 3-D weights transposed on their last axes: a batched product, left to constant folding.
  Compiled batched = compile_and_compare(R"(
    input x: f32[2,3,8]
    init w: f32[2,6,8] = 0.3 -0.2 0.1 0.05 -0.4
    wt = Transpose(w) {perm=[0,2,1]}
    y = MatMul(x, wt)
    output y
  )",
                                         JitLevel::O1, 1e-5);
  ASSERT_TRUE(batched.exe);
  EXPECT_EQ(batched.dump.find("transB"), std::string::npos) << batched.dump;
}

TEST(FoldWeightTransposePass, ATransposeOthersReadStaysForThem) {
  Compiled c = compile_and_compare(R"(
    input x: f32[4,8]
    input z: f32[8,6]
    init w: f32[6,8] = 0.3 -0.2 0.1 0.05 -0.4
    wt = Transpose(w) {perm=[1,0]}
    m = MatMul(x, wt)
    s = Add(wt, z)
    output m, s
  )",
                                   JitLevel::O1, 1e-5);
  ASSERT_TRUE(c.exe);
  EXPECT_NE(c.dump.find("transB=1"), std::string::npos) << c.dump;
  // The Transpose (#1) stays a node of its own: the product stands for the MatMul (#2) alone.
  EXPECT_NE(c.dump.find("origins=[2]"), std::string::npos) << c.dump;
}

// The kernel where its one-primitive path does not take the product (a 1-D A here; bf16 where
// oneDNN lacks it): the plain MatMul over the weights transposed, then the tail; f32 and bf16.
TEST(FoldWeightTransposePass, TheKernelsOtherPathTransposesTheWeights) {
  ir::Node node = test::make_node("FusedMatMul", 3, 1,
                                  {{"transB", ir::Attribute(int64_t{1})},
                                   {"post_ops", ir::Attribute(std::vector<std::string>{"Relu"})},
                                   {"post_alphas", ir::Attribute(std::vector<float>{0})},
                                   {"post_betas", ir::Attribute(std::vector<float>{0})}});
  node.domain = ops::kFusedDomain;
  const Tensor a = test::random_f32({8}, 3), w = test::random_f32({6, 8}, 4), bias = test::random_f32({6}, 5);
  for (bool bf16 : {false, true}) {
    auto cast = [&](const Tensor& t) { return bf16 ? test::to_bf16(t) : t; };
    auto got = test::run_kernel_full(node, {cast(a), cast(w), cast(bias)});
    ASSERT_TRUE(got) << got.status().message();
    const std::vector<double> y = test::values_of(got->outputs[0]);
    ASSERT_EQ(y.size(), 6u);
    const std::vector<double> av = test::values_of(cast(a)), wv = test::values_of(cast(w)),
                              bv = test::values_of(cast(bias));
    for (size_t j = 0; j < 6; ++j) {
      double want = bv[j];
      for (size_t k = 0; k < 8; ++k) want += av[k] * wv[j * 8 + k];
      EXPECT_NEAR(y[j], std::max(want, 0.0), bf16 ? 0.05 : 1e-5) << "bf16 " << bf16 << " column " << j;
    }
  }
}

}  // namespace
}  // namespace ms::compiler
