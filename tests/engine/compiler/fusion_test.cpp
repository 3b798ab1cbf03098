// Fusion passes: golden dumps on small graphs and the fused graph's outputs against the unfused one
// (eager) on the CPU backend; the memory planner's in-place reuse; the branch schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/memory_plan.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/schedule.h"
#include "engine/runtime/backend.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/plan_checks.h"

namespace ms::compiler {
namespace {

struct Compiled {
  std::unique_ptr<runtime::Backend> be;  // outlives the executor (its arena came from the backend)
  std::string dump;
  std::unique_ptr<compiler::CompiledExecutor> exe;
};

// Compiles at `level` and checks the outputs equal eager execution of the original graph.
Compiled compile_and_compare(const std::string& text, compiler::JitLevel level, double tol = 1e-4) {
  auto be = backends::create_cpu_backend(2);
  ir::Graph g = testing::parse_graph(text);
  compiler::CompileOptions o;
  o.jit_level = level;
  o.verify_passes = true;
  auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
  EXPECT_TRUE(c) << c.status().message();
  if (!c) return {};
  const auto in = testing::inputs_of(g);
  runtime::EagerExecutor eager(g, *be);
  auto want = eager.run(in);
  auto got = (*c)->run(in);
  EXPECT_TRUE(want && got);
  if (want && got)
    for (size_t o2 = 0; o2 < want->size(); ++o2)
      for (int64_t i = 0; i < (*want)[o2].numel(); ++i)
        EXPECT_NEAR((*got)[o2].data<float>()[i], (*want)[o2].data<float>()[i], tol)
            << "output " << o2 << " element " << i;
  // Run twice: arena reuse across runs must not change results.
  auto again = (*c)->run(in);
  EXPECT_TRUE(again);
  if (again && got)
    for (int64_t i = 0; i < (*got)[0].numel(); ++i) EXPECT_EQ((*again)[0].data<float>()[i], (*got)[0].data<float>()[i]);
  Compiled r;
  r.be = std::move(be);
  r.dump = ir::dump_text((*c)->graph());
  r.exe = std::move(*c);
  return r;
}

const char* kResidualBlock = R"(
  input x: f32[1,4,6,6]
  init w1: f32[4,4,3,3] = 0.1 -0.05 0.02 0.2 -0.1
  init w2: f32[4,4,1,1] = 0.3 -0.2 0.1
  init scale: f32[4] = 1.5 0.5 2 1
  init bias: f32[4] = 0.1 0.2 0.3 -0.1
  init mean: f32[4] = 0.3 -0.1 0.2 0
  init var: f32[4] = 0.9 1.1 0.5 1
  c1 = Conv(x, w1) {pads=[1,1,1,1]}
  b1 = BatchNormalization(c1, scale, bias, mean, var)
  r1 = Relu(b1)
  c2 = Conv(r1, w2)
  s = Add(c2, x)
  y = Relu(s)
  output y
)";

TEST(FusionPass, ConvBatchNormReluAndResidualBecomeFusedConvs) {
  Compiled c = compile_and_compare(kResidualBlock, compiler::JitLevel::O1);
  EXPECT_EQ(c.dump, R"(graph main (%x: f32[1,4,6,6])
  init %b1_bias: f32[4]
  init %w1_bnfold: f32[4,4,3,3]
  init %w2: f32[4,4,1,1]
  #8 %r1 = ai.modescope.FusedConv(%x, %w1_bnfold, %b1_bias) {pads=[1,1,1,1], post_alphas=[0], post_betas=[0], post_ops=["Relu"]} origins=[1,2,3] : f32[1,4,6,6]
  #9 %y = ai.modescope.FusedConv(%r1, %w2, _, %x) {post_alphas=[0,0], post_betas=[0,0], post_ops=["Add","Relu"]} origins=[4,5,6] : f32[1,4,6,6]
  return %y
)");
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(c.exe->compile_result().reports.size(), 9u);
}

TEST(FusionPass, ResidualFusionRunsInPlaceOverTheDyingShortcut) {
  // The shortcut `x2` dies at the fused conv: the output takes over its block.
  Compiled c = compile_and_compare(R"(
    input x: f32[1,4,6,6]
    init w: f32[4,4,1,1] = 0.3 -0.2 0.1
    x2 = Relu(x)
    c = Conv(x2, w)
    x3 = Sigmoid(x2)
    s = Add(c, x3)
    y = Relu(s)
    z = Neg(y)
    output z
  )",
                                   compiler::JitLevel::O2);
  ASSERT_TRUE(c.exe);
  const auto& plan = c.exe->memory_plan();
  bool reused = false;
  for (const auto& s : plan.slots) reused |= s.value == "y" && s.reuses == "x3";
  EXPECT_TRUE(reused);
  EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
}

TEST(FusionPass, MatMulBiasActivationAndGemmRelu) {
  Compiled c = compile_and_compare(R"(
    input x: f32[2,8]
    init w: f32[8,5] = 0.1 -0.3 0.2 0.05
    init b: f32[5] = 0.1 -0.2 0.3 0 0.5
    init w2: f32[5,3] = 0.2 -0.1 0.4
    init c2: f32[3] = 0.5 -0.5 0
    m = MatMul(x, w)
    a = Add(m, b)
    t = Tanh(a)
    g = Gemm(t, w2, c2) {alpha=0.5}
    y = Relu(g)
    output y
  )",
                                   compiler::JitLevel::O1);
  EXPECT_EQ(c.dump, R"(graph main (%x: f32[2,8])
  init %b: f32[5]
  init %c2: f32[3]
  init %w: f32[8,5]
  init %w2: f32[5,3]
  #6 %t = ai.modescope.FusedMatMul(%x, %w, %b) {post_alphas=[0], post_betas=[0], post_ops=["Tanh"]} origins=[1,2,3] : f32[2,5]
  #7 %y = ai.modescope.FusedGemm(%t, %w2, %c2) {alpha=0.5, post_alphas=[0], post_betas=[0], post_ops=["Relu"]} origins=[4,5] : f32[2,3]
  return %y
)");
}

TEST(FusionPass, ElementwiseChainsBecomeOneLoop) {
  Compiled c = compile_and_compare(R"(
    input x: f32[2,3,4]
    init half: f32[1] = 0.5
    init row: f32[4] = 1 2 3 4
    init col: f32[3,1] = -1 0 1
    init lo: f32[] = 0.1
    init hi: f32[] = 0.9
    a = Mul(x, half)
    b = Add(row, a)
    c = Sub(b, col)
    d = Sigmoid(c)
    e = Clip(d, lo, hi)
    output e
  )",
                                   compiler::JitLevel::O1);
  EXPECT_EQ(c.dump, R"(graph main (%x: f32[2,3,4])
  init %col: f32[3,1]
  init %half: f32[1]
  init %row: f32[4]
  #6 %e = ai.modescope.FusedElementwise(%x, %half, %row, %col) {chain=["Mul","Add","Sub","Sigmoid","Clip"], chain_alphas=[0,0,0,0,0.100000001], chain_arity=[2,2,2,1,1], chain_betas=[0,0,0,0,0.899999976], chain_side=[0,1,0,0,0]} origins=[1,2,3,4,5] : f32[2,3,4]
  return %e
)");
}

// The fused loop over NCHW with the operands a training step's BatchNorm gradient has: one value per
// channel, per (batch, row), per column, a scalar on the left; large enough for several threads and
// for rows longer than one tile. Against eager execution of the separate ops.
TEST(FusionPass, FusedLoopBroadcastsPerChannelAndAcrossAxes) {
  Compiled c = compile_and_compare(R"(
    input x: f32[2,8,48,48]
    init ch: f32[1,8,1,1] = 0.5 -1 2 0.25 1.5 -0.5 3 1
    init nh: f32[2,1,48,1] = 0.1 -0.2 0.3 0.05
    init col: f32[48] = 1 2 -3 4 0.5
    init one: f32[] = 1
    a = Mul(x, ch)
    b = Add(a, nh)
    r = Relu(b)
    d = Sub(one, r)
    e = Div(d, col)
    output e
  )",
                                   compiler::JitLevel::O1);
  EXPECT_NE(c.dump.find("FusedElementwise"), std::string::npos) << c.dump;
  // Per channel only: H and W merge into rows of 4096, several tiles each.
  Compiled rows = compile_and_compare(R"(
    input x: f32[2,4,64,64]
    init ch: f32[1,4,1,1] = 0.5 -1 2 0.25
    init sh: f32[1,4,1,1] = 0.1 0.2 -0.3 0
    a = Mul(x, ch)
    b = Add(a, sh)
    y = Sigmoid(b)
    output y
  )",
                                      compiler::JitLevel::O1);
  EXPECT_NE(rows.dump.find("FusedElementwise"), std::string::npos) << rows.dump;
}

// A ReLU gradient as the autodiff writes it (dY * Sign(y)), over zeros and positives of y.
TEST(FusionPass, ReluGradientChainFusesWithSign) {
  Compiled c = compile_and_compare(R"(
    input y: f32[2,3,4]
    input gy: f32[2,3,4]
    init shift: f32[] = -0.25
    a = Add(y, shift)
    r = Relu(a)
    s = Sign(r)
    g = Mul(s, gy)
    output g
  )",
                                   compiler::JitLevel::O1);
  EXPECT_NE(c.dump.find("chain=[\"Add\",\"Relu\",\"Sign\",\"Mul\"]"), std::string::npos) << c.dump;
}

// BatchNorm statistics and gradients as a training step has them: the variance (mean of squared
// deviations), the scale's gradient (sum of dY times the normalized input), a bias gradient over
// the chain of a fused loop, reductions that keep the last axis or drop every axis, and a chain read
// by its reduction and by another op. Each reduction and its chain become one loop; values against
// eager execution.
TEST(FusionPass, ReductionsFuseWithTheChainsTheyRead) {
  Compiled c = compile_and_compare(R"(
    input x: f32[4,8,12,10]
    input dy: f32[4,8,12,10]
    init mean: f32[1,8,1,1] = 0.5 -0.25 0.1 0
    init rstd: f32[1,8,1,1] = 2 0.5 1 1.5
    init axes: i64[3] = 0 2 3
    init last: i64[2] = 0 1
    d = Sub(x, mean)
    sq = Mul(d, d)
    var = ReduceMean(sq) {axes=[0,2,3]}
    xh = Mul(d, rstd)
    t = Mul(dy, xh)
    gs = ReduceSum(t, axes)
    e = Relu(dy)
    f = Mul(e, rstd)
    gb = ReduceSum(f, last) {keepdims=0}
    h = Neg(x)
    all = ReduceMean(h) {keepdims=0}
    k = Mul(dy, rstd)
    ks = ReduceSum(k, axes)
    kk = Sub(k, x)
    output var, gs, gb, all, ks, kk
  )",
                                   compiler::JitLevel::O1);
  // k is read by its ReduceSum and by a Sub: one loop writes k and its sum.
  EXPECT_NE(c.dump.find("%k, %ks = ai.modescope.FusedElementwise(%dy, %rstd)"), std::string::npos) << c.dump;
  for (const char* out : {"%var = ai.modescope.FusedElementwise", "%gs = ai.modescope.FusedElementwise",
                          "%gb = ai.modescope.FusedElementwise", "%all = ai.modescope.FusedElementwise"})
    EXPECT_NE(c.dump.find(out), std::string::npos) << out << "\n" << c.dump;
  EXPECT_NE(c.dump.find("chain=[\"Square\"]"), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find("reduce=\"ReduceMean\", reduce_axes=[0,2,3]"), std::string::npos) << c.dump;
  EXPECT_EQ(c.dump.find("= ReduceSum("), std::string::npos) << c.dump;
  EXPECT_EQ(c.dump.find("= ReduceMean("), std::string::npos) << c.dump;
}

// Mixed precision: bf16 chains and reductions fuse too (computed in f32 per tile, rounded to bf16
// once where eager rounds every op, hence the looser tolerance), one output and two.
TEST(FusionPass, Bf16ChainsAndReductionsFuse) {
  Compiled c = compile_and_compare(R"(
    input xf: f32[2,8,6,5]
    input gf: f32[2,8,6,5]
    init mf: f32[1,8,1,1] = 0.5 -0.25 0.1 0
    init axes: i64[3] = 0 2 3
    x = Cast(xf) {to=16}
    g = Cast(gf) {to=16}
    m = Cast(mf) {to=16}
    d = Sub(x, m)
    sq = Mul(d, d)
    var = ReduceMean(sq) {axes=[0,2,3]}
    e = Mul(d, g)
    r = Relu(e)
    k = Neg(r)
    ks = ReduceSum(k, axes)
    vo = Cast(var) {to=1}
    ko = Cast(k) {to=1}
    kso = Cast(ks) {to=1}
    output vo, ko, kso
  )",
                                   compiler::JitLevel::O1, 0.25);
  EXPECT_NE(c.dump.find("%var = ai.modescope.FusedElementwise(%d) {chain=[\"Square\"]"), std::string::npos) << c.dump;
  // The Casts to bf16 round inside the loops that read them.
  EXPECT_NE(c.dump.find("%d = ai.modescope.FusedElementwise(%xf, %m) {chain=[\"Cast\",\"Sub\"], chain_alphas=[16,0]"),
            std::string::npos)
      << c.dump;
  EXPECT_NE(c.dump.find("%k, %ks = ai.modescope.FusedElementwise(%gf, %d) {chain=[\"Cast\",\"Mul\",\"Relu\",\"Neg\"]"),
            std::string::npos)
      << c.dump;
  EXPECT_EQ(c.dump.find("= Cast(%xf"), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find(": bf16[1,8,1,1]"), std::string::npos) << c.dump;
}

// Mixed precision casts each bf16 conv result to f32 for BatchNorm, read by several ops: every chain
// and reduction reads the bf16 value and widens it in its loop (a Cast link, or a bf16 operand of an
// f32 link), so the f32 copy is never written; a Cast to bf16 at a chain's end rounds in the loop.
// The centred value x - mean is computed again from the bf16 value by each loop that reads it (the
// variance, the normalization, the gradient sums), so it is never written either.
TEST(FusionPass, ChainsReadBf16ValuesInPlaceOfTheirCastsToF32) {
  Compiled c = compile_and_compare(R"(
    input cf: f32[2,16,6,5]
    input gf: f32[2,16,6,5]
    init s: f32[1,16,1,1] = 0.5 -0.25 0.1 2
    c = Cast(cf) {to=16}
    g = Cast(gf) {to=16}
    x = Cast(c) {to=1}
    gx = Cast(g) {to=1}
    mean = ReduceMean(x) {axes=[0,2,3]}
    d = Sub(x, mean)
    sq = Mul(d, d)
    var = ReduceMean(sq) {axes=[0,2,3]}
    gd = Mul(gx, d)
    gds = ReduceSum(gd) {axes=[0,2,3]}
    e = Mul(d, s)
    f = Add(e, gx)
    r = Relu(f)
    y = Cast(r) {to=16}
    yo = Cast(y) {to=1}
    s1 = ReduceSum(gx) {axes=[0,2,3]}
    s2 = ReduceMean(gx) {axes=[0,1]}
    output yo, mean, var, gds, s1, s2
  )",
                                   compiler::JitLevel::O1, 0.02);
  EXPECT_EQ(c.dump.find("= Cast(%c)"), std::string::npos) << c.dump;
  EXPECT_EQ(c.dump.find("= Cast(%g)"), std::string::npos) << c.dump;
  EXPECT_EQ(c.dump.find("%d = "), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find("%mean = ai.modescope.FusedElementwise(%c) {chain=[\"Cast\"], chain_alphas=[1]"),
            std::string::npos)
      << c.dump;
  EXPECT_NE(c.dump.find("%var = ai.modescope.FusedElementwise(%c, %mean) {chain=[\"Cast\",\"Sub\",\"Square\"]"),
            std::string::npos)
      << c.dump;
  // Of Mul(gx, d), d is the chain's value (computed from c) and g is read as the bf16 operand.
  EXPECT_NE(c.dump.find("%gds = ai.modescope.FusedElementwise(%c, %mean, %g) {chain=[\"Cast\",\"Sub\",\"Mul\"]"),
            std::string::npos)
      << c.dump;
  EXPECT_NE(c.dump.find("%y = ai.modescope.FusedElementwise(%c, %mean, %s, %g) "
                        "{chain=[\"Cast\",\"Sub\",\"Mul\",\"Add\",\"Relu\",\"Cast\"]"),
            std::string::npos)
      << c.dump;
  EXPECT_NE(c.dump.find("%s1 = ai.modescope.FusedElementwise(%g) {chain=[\"Cast\"]"), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find("%s2 = ai.modescope.FusedElementwise(%g) {chain=[\"Cast\"]"), std::string::npos) << c.dump;
}

// A reduction of a chain result's negation, the result read elsewhere too (BatchNorm's input
// gradient): the chain sums its result as it writes it, negated (reduce_scale -1).
TEST(FusionPass, ReductionOfANegatedChainResultRidesTheChain) {
  Compiled c = compile_and_compare(R"(
    input x: f32[2,8,6,5]
    init s: f32[1,8,1,1] = 0.5 -0.25 0.1 2 1 -1 3 0.2
    init axes: i64[3] = 0 2 3
    a = Mul(x, s)
    b = Relu(a)
    n = Neg(b)
    m = ReduceSum(n, axes)
    y = Add(b, m)
    output y, m
  )",
                                   compiler::JitLevel::O1, 1e-4);
  EXPECT_NE(c.dump.find("%b, %m = ai.modescope.FusedElementwise(%x, %s) {chain=[\"Mul\",\"Relu\"]"), std::string::npos)
      << c.dump;
  EXPECT_NE(c.dump.find("reduce_scale=-1"), std::string::npos) << c.dump;
  EXPECT_EQ(c.dump.find("Neg"), std::string::npos) << c.dump;
}

// Short rows (a per-channel operand over a 7x7 or 3x3 map) are grouped several to a tile: values,
// per-channel sums and sums over channels match the unfused ops, on one thread and on two.
TEST(FusionPass, ShortRowsShareTiles) {
  for (const char* shape : {"[4,16,3,3]", "[16,64,7,7]"}) {
    SCOPED_TRACE(shape);
    const std::string s(shape);
    const std::string c = s == "[4,16,3,3]" ? "16" : "64";
    std::string text = "input x: f32" + s + "\ninput z: f32" + s + "\ninput sc: f32[1," + c + ",1,1]\n" + R"(
      a = Mul(x, sc)
      b = Add(a, z)
      r = Relu(b)
      m = ReduceSum(r) {axes=[0,2,3]}
      q = Mul(z, sc)
      e = Exp(q)
      n = ReduceMean(e) {axes=[1]}
      output r, m, n
    )";
    Compiled cmp = compile_and_compare(text, compiler::JitLevel::O1, 1e-3);
    EXPECT_NE(cmp.dump.find("%r, %m = ai.modescope.FusedElementwise(%x, %sc, %z)"), std::string::npos) << cmp.dump;
    EXPECT_NE(cmp.dump.find("%n = ai.modescope.FusedElementwise(%z, %sc)"), std::string::npos) << cmp.dump;
  }
}

// A chain over operands alike in every axis is one long row: it is split across the threads in runs
// of whole tiles (it used to run on one thread), reductions summed per thread.
TEST(FusionPass, OneLongRowSplitsAcrossThreads) {
  Compiled c = compile_and_compare(R"(
    input a: f32[4,20000]
    input b: f32[4,20000]
    input d: f32[4,20000]
    t = Mul(a, b)
    u = Add(t, d)
    y = Relu(u)
    m = ReduceMean(y) {axes=[0,1]}
    output y, m
  )",
                                   compiler::JitLevel::O1, 1e-5);
  EXPECT_NE(c.dump.find("%y, %m = ai.modescope.FusedElementwise(%a, %b, %d)"), std::string::npos) << c.dump;
}

// Convs that BatchNorm-like elementwise ops separate (a training step): the 3x3 runs on the blocked
// layout with reorders at the op, the 1x1 keeps plain nchw (the reorders would cost more); values
// against eager execution.
TEST(ConvLayoutPass, LonePointwiseConvsKeepThePlainLayout) {
  Compiled c = compile_and_compare(R"(
    input x: f32[2,16,32,32]
    init w3: f32[16,16,3,3] = 0.1 -0.2 0.05 0.3
    init w1: f32[32,16,1,1] = 0.2 -0.1 0.3
    init m: f32[1,16,1,1] = 0.5 -0.25
    a = Conv(x, w3) {pads=[1,1,1,1]}
    b = Sub(a, m)
    d = Conv(b, w1)
    init wt3: f32[32,8,3,3] = 0.1 0.2 -0.1
    init wt1: f32[32,4,1,1] = 0.3 -0.2
    t3 = ConvTranspose(d, wt3) {strides=[2,2], pads=[1,1,1,1], output_padding=[1,1]}
    t1 = ConvTranspose(d, wt1)
    output d, t3, t1
  )",
                                   compiler::JitLevel::O2);
  // Transposed convs (the input gradients of a training step): the 3x3 one blocked, the 1x1 plain.
  EXPECT_NE(c.dump.find("%t3 = ConvTranspose(%d, %wt3) {activation_layout=\"blocked\""), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find("%t1 = ConvTranspose(%d, %wt1) :"), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find("%a = ai.modescope.FusedConv(%x, %w3) {activation_layout=\"blocked\""), std::string::npos)
      << c.dump;
  EXPECT_NE(c.dump.find("%d = ai.modescope.FusedConv(%b, %w1) {activation_layout=\"plain\""), std::string::npos)
      << c.dump;
}

// Convs of less than 5 MFLOPs alone in their region (LeNet-5's) keep plain nchw, and the pool after
// one goes back to the plain op; small convs that share a region with another conv stay blocked.
TEST(ConvLayoutPass, SmallLoneConvsKeepThePlainLayout) {
  Compiled lone = compile_and_compare(R"(
    input x: f32[1,6,14,14]
    init w: f32[16,6,5,5] = 0.1 -0.2 0.05 0.3 -0.1
    init b: f32[16] = 0.1 -0.1
    c = Conv(x, w, b)
    r = Relu(c)
    p = MaxPool(r) {kernel_shape=[2,2], strides=[2,2]}
    output p
  )",
                                      compiler::JitLevel::O2);
  EXPECT_NE(lone.dump.find("%r = ai.modescope.FusedConv(%x, %w, %b) {activation_layout=\"plain\""), std::string::npos)
      << lone.dump;
  EXPECT_NE(lone.dump.find("%p = MaxPool(%r)"), std::string::npos) << lone.dump;
  EXPECT_EQ(lone.dump.find("blocked"), std::string::npos) << lone.dump;
  Compiled pair = compile_and_compare(R"(
    input x: f32[1,16,8,8]
    init w1: f32[16,16,3,3] = 0.1 -0.2 0.05 0.3 -0.1
    init w2: f32[16,16,3,3] = -0.1 0.2 0.15
    c1 = Conv(x, w1) {pads=[1,1,1,1]}
    r1 = Relu(c1)
    c2 = Conv(r1, w2) {pads=[1,1,1,1]}
    output c2
  )",
                                      compiler::JitLevel::O2);
  EXPECT_NE(pair.dump.find("%r1 = ai.modescope.FusedConv(%x, %w1) {activation_layout=\"blocked\", dst_blocked=1"),
            std::string::npos)
      << pair.dump;
  EXPECT_NE(pair.dump.find("%c2 = ai.modescope.FusedConv(%r1, %w2) {activation_layout=\"blocked\""), std::string::npos)
      << pair.dump;
}

TEST(FusionPass, O0KeepsTheGraphAndDisabledPassesDoNotRun) {
  Compiled c0 = compile_and_compare(kResidualBlock, compiler::JitLevel::O0);
  EXPECT_EQ(c0.exe->graph().nodes().size(), 6u);
  auto be = backends::create_cpu_backend(1);
  ir::Graph g = testing::parse_graph(kResidualBlock);
  compiler::CompileOptions o;
  o.disabled_passes = {"fuse-ops", "fuse-elementwise"};
  auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
  ASSERT_TRUE(c);
  for (const auto& n : (*c)->graph().nodes()) EXPECT_TRUE(n.domain.empty()) << n.op_type;
  EXPECT_EQ((*c)->graph().nodes().size(), 5u);  // BatchNorm folded, nothing fused
}

// A Concat along an axis with only 1s before it: its inputs are planned inside its output (the
// producers write there, the Concat copies nothing); with batch 2 the pieces are not contiguous
// and each input keeps its own block. Values against eager execution either way.
TEST(MemoryPlanner, ConcatInputsArePlannedInsideTheOutput) {
  for (int batch : {1, 2}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    Compiled c = compile_and_compare(std::string(R"(
      input x: f32[)") + std::to_string(batch) +
                                         R"(,16,8,8]
      init w: f32[8,16,1,1] = 0.3 -0.2 0.1
      a = Conv(x, w)
      b = Sigmoid(x)
      c = Concat(a, b) {axis=1}
      y = Neg(c)
      output y
    )",
                                     compiler::JitLevel::O1);
    ASSERT_TRUE(c.exe);
    const auto& slots = c.exe->memory_plan().slots;
    auto find = [&](const std::string& v) {
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].value == v) return static_cast<int>(i);
      return -1;
    };
    const int a = find("a"), b = find("b"), cc = find("c");
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    ASSERT_GE(cc, 0);
    if (batch == 1) {
      EXPECT_EQ(slots[a].within, cc);
      EXPECT_EQ(slots[b].within, cc);
      EXPECT_EQ(slots[a].offset, slots[cc].offset);
      EXPECT_EQ(slots[b].offset, slots[cc].offset + 8 * 64 * 4);
    } else {
      EXPECT_EQ(slots[a].within, -1);
      EXPECT_EQ(slots[b].within, -1);
    }
  }
  // The planner alone: two pieces inside an outer slot share its block; a value live beside them
  // goes elsewhere.
  std::vector<runtime::MemorySlot> s{
      {"p", {}, 0, 1024, 0, 2}, {"q", {}, 0, 512, 1, 2}, {"cat", {}, 0, 1536, 2, 3}, {"other", {}, 0, 256, 0, 3}};
  s[0].within = 2;
  s[1].within = 2;
  s[1].within_offset = 1024;
  const auto plan = compiler::plan_memory(s);
  EXPECT_EQ(plan.slots[0].offset, plan.slots[2].offset);
  EXPECT_EQ(plan.slots[1].offset, plan.slots[2].offset + 1024);
  EXPECT_TRUE(plan.slots[3].offset >= plan.slots[2].offset + 1536 ||
              plan.slots[3].offset + 256 <= plan.slots[2].offset);
  EXPECT_EQ(plan.lower_bound, 1536u + 256u);
  EXPECT_EQ(plan.arena_bytes, plan.lower_bound);
}

TEST(MemoryPlanner, InPlaceChainsShareOneBlockAndStayAtTheLowerBound) {
  // a -> b (in place over a) -> c (in place over b); d overlaps all of them.
  std::vector<runtime::MemorySlot> slots{
      {"a", {}, 0, 1000, 0, 1}, {"b", {}, 0, 1000, 1, 2}, {"c", {}, 0, 1000, 2, 4}, {"d", {}, 0, 500, 0, 4}};
  const auto p = compiler::plan_memory(slots, {{0, 1}, {1, 2}});
  EXPECT_EQ(p.slots[1].reuses, "a");
  EXPECT_EQ(p.slots[2].reuses, "b");
  EXPECT_EQ(p.slots[0].offset, p.slots[2].offset);
  EXPECT_EQ(p.arena_bytes, runtime::align_up(1000, 64) + runtime::align_up(500, 64));
  EXPECT_EQ(p.lower_bound, p.arena_bytes);
  EXPECT_EQ(p.naive_bytes, 3 * runtime::align_up(1000, 64) + runtime::align_up(500, 64));
}

// Greedy by size alone leaves these four blocks at 768 bytes; placing by size x lifetime reaches
// the lower bound, and the planner keeps the smaller arena. The per-step live bytes peak at it.
TEST(MemoryPlanner, TriesSeveralPlacementOrdersAndKeepsTheSmallestArena) {
  std::vector<runtime::MemorySlot> slots{
      {"a", {}, 0, 320, 4, 5}, {"b", {}, 0, 256, 3, 5}, {"c", {}, 0, 192, 0, 3}, {"d", {}, 0, 256, 1, 3}};
  const auto p = compiler::plan_memory(slots);
  EXPECT_EQ(p.lower_bound, 704u);
  EXPECT_EQ(p.arena_bytes, 704u);
  testing::expect_no_overlap(p);
  ASSERT_EQ(p.live.size(), 6u);
  EXPECT_EQ(p.live[0], 192u);
  EXPECT_EQ(p.live[3], 704u);
  EXPECT_EQ(p.live[5], 576u);
  EXPECT_EQ(*std::max_element(p.live.begin(), p.live.end()), p.lower_bound);
}

// conv-algorithm marks the 3x3 convs with stride 1, at least 64 channels each way and planes of at
// least 14x14 (blocked layout); strided, pointwise, narrow and small-plane convs stay direct.
TEST(ConvAlgorithmPass, MarksWideStrideOne3x3Convs) {
  Compiled c = compile_and_compare(R"(
    input x: f32[1,64,16,16]
    init w3: f32[64,64,3,3] = 0.02 -0.01 0.03 -0.02 0.01
    init ws: f32[64,64,3,3] = 0.01 0.02 -0.03
    init w1: f32[64,64,1,1] = 0.05 -0.04 0.03
    init wn: f32[32,64,3,3] = 0.02 -0.01 0.01
    init w8: f32[64,64,3,3] = -0.02 0.01 0.02
    a = Conv(x, w3) {pads=[1,1,1,1]}
    r = Relu(a)
    s = Conv(r, ws) {pads=[1,1,1,1], strides=[2,2]}
    p = Conv(r, w1)
    q = Conv(p, wn) {pads=[1,1,1,1]}
    t = Conv(s, w8) {pads=[1,1,1,1]}
    output q, t
  )",
                                   compiler::JitLevel::O2, 1e-3);
  ASSERT_TRUE(c.exe);
  size_t marked = 0;
  for (size_t at = c.dump.find("algorithm=\"winograd\""); at != std::string::npos;
       at = c.dump.find("algorithm=\"winograd\"", at + 1))
    ++marked;
  EXPECT_EQ(marked, 1u) << c.dump;
  const size_t r = c.dump.find("%r = ai.modescope.FusedConv(%x, %w3)");
  ASSERT_NE(r, std::string::npos) << c.dump;
  EXPECT_NE(c.dump.substr(r, c.dump.find('\n', r) - r).find("algorithm=\"winograd\""), std::string::npos) << c.dump;
}

// Winograd runs only where its scratch fits the arena's room at the step: behind a 1 MiB value
// that sets the lower bound there is room and both 3x3 convs take it; alone (a 64 KiB arena) they
// stay direct. The arena stays at the lower bound and the values equal eager execution.
TEST(ConvAlgorithmPass, WinogradRunsOnlyWhereItsScratchFitsTheArena) {
  struct Impls final : runtime::RunObserver {
    std::map<std::string, std::string> of;
    void on_kernel_impl(const ir::Node& n, std::string_view impl) override { of[n.outputs[0]] = std::string(impl); }
  };
  const std::string convs = R"(
    init w3: f32[64,64,3,3] = 0.02 -0.01 0.03 -0.02 0.01
    init w4: f32[64,64,3,3] = -0.01 0.02 0.01 -0.03
    a = Conv(d, w3) {pads=[1,1,1,1]}
    r = Relu(a)
    b = Conv(r, w4) {pads=[1,1,1,1]}
    output b
  )";
  const std::string roomy = R"(
    input x: f32[1,64,16,16]
    init wu: f32[1024,64,1,1] = 0.05 -0.02 0.03
    init wd: f32[64,1024,1,1] = 0.01 -0.02 0.015
    u = Conv(x, wu)
    d = Conv(u, wd)
  )" + convs;
  const std::string tight = R"(
    input x: f32[1,64,16,16]
    d = Relu(x)
  )" + convs;
  std::map<std::string, bool> wino;
  for (const auto* text : {&roomy, &tight}) {
    Compiled c = compile_and_compare(*text, compiler::JitLevel::O2, 1e-3);
    ASSERT_TRUE(c.exe);
    EXPECT_NE(
        c.dump.find("%r = ai.modescope.FusedConv(%d, %w3) {activation_layout=\"blocked\", algorithm=\"winograd\""),
        std::string::npos)
        << c.dump;
    Impls seen;
    runtime::RunOptions ro;
    ro.observer = &seen;
    const auto in = testing::inputs_of(testing::parse_graph(*text));
    ASSERT_TRUE(c.exe->run(in, ro));
    const bool a = seen.of["r"].find("wino") != std::string::npos, b = seen.of["b"].find("wino") != std::string::npos;
    EXPECT_EQ(a, b) << seen.of["r"] << " / " << seen.of["b"];
    wino[text == &roomy ? "roomy" : "tight"] = a;
    const auto& plan = c.exe->memory_plan();
    EXPECT_LE(static_cast<double>(plan.arena_bytes), 1.05 * static_cast<double>(plan.lower_bound));
  }
  EXPECT_FALSE(wino["tight"]);
  if (!__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "oneDNN's Winograd convolutions need AVX-512 (this CPU has none)";
  EXPECT_TRUE(wino["roomy"]);
}

TEST(BranchScheduler, IndependentBranchesGetDifferentThreads) {
  auto be = backends::create_cpu_backend(4);
  ir::Graph g = testing::parse_graph(R"(
    input x: f32[1,8,16,16]
    init w: f32[8,8,3,3] = 0.1 -0.1 0.05
    a1 = Conv(x, w) {pads=[1,1,1,1]}
    a2 = Conv(a1, w) {pads=[1,1,1,1]}
    b1 = Conv(x, w) {pads=[1,1,1,1]}
    b2 = Conv(b1, w) {pads=[1,1,1,1]}
    y = Add(a2, b2)
    output y
  )");
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.disabled_passes = {"cse"};  // keep the two identical branches apart
  auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
  ASSERT_TRUE(c) << c.status().message();
  const auto& th = (*c)->step_threads();
  ASSERT_EQ(th.size(), (*c)->num_steps());
  std::set<int> used(th.begin(), th.end());
  EXPECT_EQ(used.size(), 2u) << "the two conv branches run on two threads";
}

}  // namespace
}  // namespace ms::compiler
