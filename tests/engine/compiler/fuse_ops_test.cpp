// fuse-ops: Conv/Gemm/MatMul with BatchNorm folded, bias, activations and a residual Add become one
// fused node; golden dumps and values against eager execution on the CPU backend.
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
  EXPECT_EQ(c.exe->compile_result().reports.size(), 17u);
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

// An Add after a conv's activation (the sample conv.onnx's last block) is not taken into the conv:
// oneDNN has only its reference conv for eltwise-then-sum post-ops (the sample's Graph mode ran 50x
// slower than PyNative with it fused). The conv keeps its Relu, the Add runs on its own.
TEST(FusionPass, AnAddAfterAConvActivationEndsTheChain) {
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(R"(
      input x: f32[1,16,6,6]
      init w: f32[16,16,3,3] = 0.3 -0.2 0.1 0.05
      init w2: f32[16,16,3,3] = -0.1 0.2 0.15
      x2 = Sigmoid(x)
      c = Conv(x2, w) {pads=[1,1,1,1]}
      r = Relu(c)
      s = Add(r, x2)
      c2 = Conv(s, w2) {pads=[1,1,1,1]}
      y = Tanh(c2)
      output y
    )",
                                     level);
    EXPECT_NE(c.dump.find("%r = ai.modescope.FusedConv(%x2, %w) {"), std::string::npos) << c.dump;
    EXPECT_EQ(c.dump.find("post_ops=[\"Relu\",\"Add\"]"), std::string::npos) << c.dump;
  }
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

}  // namespace
}  // namespace ms::compiler
