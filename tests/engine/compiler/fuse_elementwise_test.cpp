// fuse-elementwise: chains of elementwise ops become one fused loop (broadcast operands, bf16 reads,
// tiling of short rows and long ones across threads); golden dumps and values against eager execution.
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
#include "tests/engine/compiler/pass_test_util.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/plan_checks.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;

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

// A QDQ model's fake-quantization between float ops (QuantizeLinear whose only reader is a
// DequantizeLinear with the same constant scale and zero point) is one link of the chain, on uint8
// and int8 grids, saturating at both ends (x * 3 / 0.01 reaches past them): the chain's values are
// the separate ops' bit for bit. A chain may start at such a pair (after a MatMul); a pair whose
// quantized value has another reader stays two ops.
TEST(FusionPass, QuantizeDequantizePairsAreChainLinks) {
  Compiled c = compile_and_compare(R"(
    input x: f32[4,8]
    input w: f32[8,8]
    init three: f32[] = 3
    init one: f32[] = 1
    init s: f32[] = 0.01
    init s2: f32[] = 0.02
    init zu: u8[] = 128
    init zs: i8[] = -3
    a = Mul(x, three)
    qa = QuantizeLinear(a, s, zu)
    da = DequantizeLinear(qa, s, zu)
    e = Erf(da)
    qe = QuantizeLinear(e, s, zs)
    de = DequantizeLinear(qe, s, zs)
    f = Add(de, one)
    m = MatMul(x, w)
    qm = QuantizeLinear(m, s)
    dm = DequantizeLinear(qm, s)
    g = Mul(dm, three)
    qg = QuantizeLinear(g, s, zu)
    dg = DequantizeLinear(qg, s, zu)
    ra = DequantizeLinear(qa, s2, zu)
    h = Relu(ra)
    output f
    output dg
    output h
  )",
                                   compiler::JitLevel::O1, /*tol=*/0.0);
  EXPECT_NE(c.dump.find(R"(chain=["QuantizeDequantizeU8","Mul","QuantizeDequantizeU8"])"), std::string::npos)
      << c.dump;  // from the MatMul's pair on
  EXPECT_NE(c.dump.find(R"(chain=["Erf","QuantizeDequantizeS8","Add"])"), std::string::npos) << c.dump;
  EXPECT_NE(c.dump.find("QuantizeLinear(%a"), std::string::npos) << c.dump;  // qa has two readers
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

}  // namespace
}  // namespace ms::compiler
