// Golden-dump tests of each pass on small textual graphs (types inferred first), plus numerics of
// the rewrites against the unoptimized graph.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backends/select.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/backend.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler {
namespace {

runtime::Backend* fold_backend() {
  static const auto be = backends::create_cpu_backend(1);
  return be.get();
}

// Parses, infers types, runs the given passes (verifying after each) and returns the dump.
std::string run_passes(const std::string& text, std::vector<PassPtr> passes, ir::Graph* out = nullptr) {
  auto be = backends::create_cpu_backend(1);
  ir::Graph g = testing::parse_graph(text);
  PassManager pm;
  pm.add(make_infer_types_pass(be.get()));
  for (auto& p : passes) pm.add(std::move(p));
  VerifyAfterEachPass verify;
  pm.add_instrumentation(&verify);
  Status st = pm.run(g);
  EXPECT_TRUE(st.is_ok()) << st.message();
  if (out) *out = g;
  return ir::dump_text(g);
}

template <class... P>
std::vector<PassPtr> list(P... p) {
  std::vector<PassPtr> v;
  (v.push_back(std::move(p)), ...);
  return v;
}

TEST(SimplifyPass, DropsIdentityDropoutNoOpCastAndNeutralArithmetic) {
  const std::string got = run_passes(R"(
    input x: f32[2,3]
    init one: f32[1] = 1
    init zero: f32[3] = 0
    a = Identity(x)
    b = Dropout(a) {ratio=0.5}
    c = Cast(b) {to=1}
    d = Mul(c, one)
    e = Add(zero, d)
    f = Relu(e)
    output f
  )", list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3])
  #6 %f = Relu(%x) : f32[2,3]
  return %f
)");
}

TEST(SimplifyPass, ComposesTransposesAndMergesReshapes) {
  const std::string got = run_passes(R"(
    input x: f32[2,3,4]
    init s1: i64[2] = 6 4
    init s2: i64[1] = 24
    t1 = Transpose(x) {perm=[1,0,2]}
    t2 = Transpose(t1) {perm=[1,0,2]}
    r1 = Reshape(t2, s1)
    r2 = Reshape(r1, s2)
    u1 = Transpose(x) {perm=[2,0,1]}
    u2 = Transpose(u1) {perm=[0,2,1]}
    output r2, u2
  )", list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3,4])
  init %r2_shape: i64[1]
  #4 %r2 = Reshape(%x, %r2_shape) origins=[3,4] : f32[24]
  #6 %u2 = Transpose(%x) {perm=[2,1,0]} origins=[5,6] : f32[4,3,2]
  return %r2, %u2
)");
}

TEST(SimplifyPass, BroadcastsInsteadOfExpandWhereTheReaderKeepsItsShape) {
  // e feeds Mul (full-shape other operand: bypassed), Add with a [1,3,1] operand (the result would
  // shrink to [1,3,1]: kept) and Where (bypassed); the graph output stays the Expand's.
  const std::string got = run_passes(R"(
    input x: f32[2,3,4]
    input s: f32[1,3,1]
    input c: bool[2,3,4]
    init shape: i64[3] = 2 3 4
    e = Expand(s, shape)
    m = Mul(x, e)
    a = Add(e, s)
    w = Where(c, e, x)
    output m, a, w
  )", list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3,4], %s: f32[1,3,1], %c: bool[2,3,4])
  init %shape: i64[3]
  #1 %e = Expand(%s, %shape) : f32[2,3,4]
  #2 %m = Mul(%x, %s) : f32[2,3,4]
  #3 %a = Add(%e, %s) : f32[2,3,4]
  #4 %w = Where(%c, %s, %x) : f32[2,3,4]
  return %m, %a, %w
)");
}

TEST(ConstantFoldingPass, FoldsConstantsAndShapeSubgraphsOnStaticShapes) {
  const std::string got = run_passes(R"(
    input x: f32[2,3,4]
    init a: f32[3] = 1 2 3
    init b: f32[3] = 10
    init idx: i64[1] = 0
    init minus1: i64[1] = -1
    c = Add(a, b)
    s = Shape(x)
    n = Gather(s, idx) {axis=0}
    shp = Concat(n, minus1) {axis=0}
    y = Reshape(x, shp)
    z = Mul(y, y)
    output z, c
  )", list(make_constant_folding_pass(fold_backend()), make_dce_pass()));
  // c is a graph output: it stays a node (callers own outputs); the shape chain folds away.
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3,4])
  init %a: f32[3]
  init %b: f32[3]
  init %shp: i64[2]
  #1 %c = Add(%a, %b) : f32[3]
  #5 %y = Reshape(%x, %shp) : f32[2,12]
  #6 %z = Mul(%y, %y) : f32[2,12]
  return %z, %c
)");
}

TEST(CsePass, MergesEqualNodesButNotDifferentConstants) {
  const std::string got = run_passes(R"(
    input x: f32[4]
    a = Relu(x)
    b = Relu(x)
    c = Add(a, b)
    d = LeakyRelu(x) {alpha=0.1}
    e = LeakyRelu(x) {alpha=0.2}
    f = Add(d, e)
    output c, f
  )", list(make_cse_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[4])
  #1 %a = Relu(%x) : f32[4]
  #3 %c = Add(%a, %a) : f32[4]
  #4 %d = LeakyRelu(%x) {alpha=0.100000001} : f32[4]
  #5 %e = LeakyRelu(%x) {alpha=0.200000003} : f32[4]
  #6 %f = Add(%d, %e) : f32[4]
  return %c, %f
)");
}

TEST(DcePass, RemovesUnreadNodesAndInitializers) {
  const std::string got = run_passes(R"(
    input x: f32[4]
    init unused: f32[4] = 1
    a = Relu(x)
    b = Exp(a)
    c = Neg(x)
    output c
  )", list(make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[4])
  #3 %c = Neg(%x) : f32[4]
  return %c
)");
}

TEST(FoldBatchNormPass, FoldsIntoConvAndKeepsBothOrigins) {
  const std::string text = R"(
    input x: f32[1,2,5,5]
    init w: f32[3,2,3,3] = 0.1 -0.2 0.3 0.05 -0.1
    init b: f32[3] = 0.5 -0.5 0.25
    init scale: f32[3] = 1.5 0.5 2
    init bias: f32[3] = 0.1 0.2 0.3
    init mean: f32[3] = 0.3 -0.1 0.2
    init var: f32[3] = 0.9 1.1 0.5
    c = Conv(x, w, b) {pads=[1,1,1,1]}
    y = BatchNormalization(c, scale, bias, mean, var) {epsilon=0.001}
    output y
  )";
  ir::Graph folded;
  const std::string got = run_passes(text, list(make_fold_batchnorm_pass(), make_dce_pass()), &folded);
  EXPECT_EQ(got, R"(graph main (%x: f32[1,2,5,5])
  init %w_bnfold: f32[3,2,3,3]
  init %y_bias: f32[3]
  #3 %y = Conv(%x, %w_bnfold, %y_bias) {pads=[1,1,1,1]} origins=[1,2] : f32[1,3,5,5]
  return %y
)");
  // Same numbers as the unfolded graph.
  auto be = backends::create_cpu_backend(1);
  ir::Graph orig = testing::parse_graph(text);
  const auto in = testing::inputs_of(orig);
  runtime::EagerExecutor a(orig, *be), b(folded, *be);
  auto ra = a.run(in), rb = b.run(in);
  ASSERT_TRUE(ra && rb);
  for (int64_t i = 0; i < (*ra)[0].numel(); ++i)
    EXPECT_NEAR((*ra)[0].data<float>()[i], (*rb)[0].data<float>()[i], 1e-4) << i;
}

}  // namespace
}  // namespace ms::compiler
