// fuse-reduce: a reduction rides the fused loop of the chain it reads (BatchNorm statistics and
// gradients, bf16, a negated result); values against eager execution.
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
                          "%gb = ai.modescope.FusedElementwise", "%all = ai.modescope.FusedElementwise"}) {
    EXPECT_NE(c.dump.find(out), std::string::npos) << out << "\n" << c.dump;
  }
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

}  // namespace
}  // namespace ms::compiler
