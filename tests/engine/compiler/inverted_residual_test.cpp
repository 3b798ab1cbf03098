// fuse-inverted-residual (O2, CPU): the blocked expand 1x1 -> depthwise -> project 1x1 (+ residual)
// FusedConvs become one FusedInvertedResidual; values against eager execution of the unfused graph.
#include <gtest/gtest.h>

#include <string>

#include "engine/compiler/pipeline.h"
#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;
using pass_test::count_ops;

// MobileNetV2 after its stem conv (a block's input is blocked): a stride-1 block with its residual, a stride-2 one
// without, the t = 1 block (no expansion) between them, ReLU6 as Clip.
const char* kMobileNetBlocks = R"(
    input img: f32[1,3,24,24]
    init ws: f32[16,3,3,3] = 0.2 -0.1 0.15 0.05 -0.2
    init we: f32[96,16,1,1] = 0.1 -0.3 0.2 0.05 -0.12
    init be: f32[96] = 0.1 -0.2 0.05
    init wd: f32[96,1,3,3] = 0.2 -0.1 0.3 0.05 -0.15
    init bd: f32[96] = -0.1 0.2
    init wp: f32[16,96,1,1] = 0.1 -0.2 0.05 0.15
    init bp: f32[16] = 0.05 -0.05
    init lo: f32[] = 0
    init hi: f32[] = 6
    init wd2: f32[16,1,3,3] = 0.3 -0.2 0.1
    init wp2: f32[24,16,1,1] = -0.1 0.2 0.15
    init we3: f32[144,24,1,1] = 0.1 -0.1 0.2
    init wd3: f32[144,1,3,3] = 0.2 0.1 -0.3
    init wp3: f32[32,144,1,1] = 0.05 -0.1 0.1
    init wl: f32[64,32,1,1] = 0.1 -0.05 0.2
    x = Conv(img, ws) {pads=[1,1,1,1], strides=[2,2]}
    e = Conv(x, we, be)
    e6 = Clip(e, lo, hi)
    d = Conv(e6, wd, bd) {group=96, pads=[1,1,1,1]}
    d6 = Clip(d, lo, hi)
    p = Conv(d6, wp, bp)
    r = Add(p, x)
    d2 = Conv(r, wd2) {group=16, pads=[1,1,1,1]}
    d2r = Relu(d2)
    p2 = Conv(d2r, wp2)
    e3 = Conv(p2, we3)
    e3r = Relu(e3)
    d3 = Conv(e3r, wd3) {group=144, pads=[1,1,1,1], strides=[2,2]}
    d3r = Relu(d3)
    p3 = Conv(d3r, wp3)
    y = Conv(p3, wl)
    output y
  )";

TEST(FuseInvertedResidualPass, FusesMobileNetBlocksAndMatchesEager) {
  Compiled o2 = compile_and_compare(kMobileNetBlocks, JitLevel::O2, 1e-4);
  ASSERT_TRUE(o2.exe);
  EXPECT_EQ(count_ops(o2.dump, "ai.modescope.FusedInvertedResidual"), 3) << o2.dump;
  EXPECT_EQ(count_ops(o2.dump, "ai.modescope.FusedConv"), 2) << o2.dump;  // the stem and the last conv
  int residual = 0, no_expand = 0;
  for (const auto& n : o2.exe->graph().nodes()) {
    if (n.op_type != "FusedInvertedResidual") continue;
    residual += n.inputs.size() > 7;
    no_expand += n.inputs[1].empty();
    EXPECT_EQ(n.attr_int("src_blocked", 0), 1) << o2.dump;
    EXPECT_EQ(n.attr_int("dst_blocked", 0), 1) << o2.dump;
  }
  EXPECT_EQ(residual, 1) << o2.dump;
  EXPECT_EQ(no_expand, 1) << o2.dump;
  // O1 keeps the activations plain: no blocked convs, nothing to fuse.
  Compiled o1 = compile_and_compare(kMobileNetBlocks, JitLevel::O1, 1e-4);
  ASSERT_TRUE(o1.exe);
  EXPECT_EQ(count_ops(o1.dump, "ai.modescope.FusedInvertedResidual"), 0) << o1.dump;
}

// EfficientNet: the squeeze-excite between the depthwise conv and the projection leaves the
// expansion and the depthwise conv (SiLU on both) to fuse.
TEST(FuseInvertedResidualPass, FusesTheExpansionAndDepthwiseBeforeASqueezeExcite) {
  const char* text = R"(
    input img: f32[1,3,20,20]
    init ws: f32[16,3,3,3] = 0.2 -0.1 0.15 0.05 -0.2
    init we: f32[32,16,1,1] = 0.1 -0.3 0.2 0.05
    init wd: f32[32,1,5,5] = 0.2 -0.1 0.3 0.05 -0.15
    init w1: f32[8,32,1,1] = 0.3 -0.2 0.1 0.25 -0.05
    init b1: f32[8] = 0.1 -0.2 0.05
    init w2: f32[32,8,1,1] = -0.2 0.4 0.1 -0.3
    init b2: f32[32] = 0.2 -0.1 0.3
    init wp: f32[16,32,1,1] = 0.1 -0.2 0.05 0.15
    x = Conv(img, ws) {pads=[1,1,1,1], strides=[2,2]}
    e = Conv(x, we)
    es = Sigmoid(e)
    ex = Mul(e, es)
    d = Conv(ex, wd) {group=32, pads=[2,2,2,2]}
    ds = Sigmoid(d)
    dx = Mul(d, ds)
    p = GlobalAveragePool(dx)
    c1 = Conv(p, w1, b1)
    s1 = Sigmoid(c1)
    a1 = Mul(c1, s1)
    c2 = Conv(a1, w2, b2)
    s2 = Sigmoid(c2)
    m = Mul(s2, dx)
    y = Conv(m, wp)
    output y
  )";
  Compiled o2 = compile_and_compare(text, JitLevel::O2, 1e-4);
  ASSERT_TRUE(o2.exe);
  EXPECT_EQ(count_ops(o2.dump, "ai.modescope.FusedInvertedResidual"), 1) << o2.dump;
  EXPECT_EQ(count_ops(o2.dump, "ai.modescope.FusedSqueezeExcite"), 1) << o2.dump;
  EXPECT_NE(o2.dump.find("dw_post_ops=[\"Swish\"]"), std::string::npos) << o2.dump;
  EXPECT_NE(o2.dump.find("expand_post_ops=[\"Swish\"]"), std::string::npos) << o2.dump;
}

// The expanded value read elsewhere too (a graph output) is not the block's to keep: no fusion.
TEST(FuseInvertedResidualPass, LeavesABlockWhoseExpansionHasOtherReaders) {
  const char* text = R"(
    input img: f32[1,3,16,16]
    init ws: f32[16,3,3,3] = 0.2 -0.1 0.15 0.05 -0.2
    init we: f32[64,16,1,1] = 0.1 -0.3 0.2
    init wd: f32[64,1,3,3] = 0.2 -0.1 0.3
    init wp: f32[16,64,1,1] = 0.1 -0.2 0.05
    x = Conv(img, ws) {pads=[1,1,1,1], strides=[2,2]}
    e = Conv(x, we)
    er = Relu(e)
    d = Conv(er, wd) {group=64, pads=[1,1,1,1]}
    y = Conv(d, wp)
    output y, er
  )";
  Compiled o2 = compile_and_compare(text, JitLevel::O2, 1e-4);
  ASSERT_TRUE(o2.exe);
  for (const auto& n : o2.exe->graph().nodes())
    if (n.op_type == "FusedInvertedResidual") {
      EXPECT_FALSE(n.inputs[1] == "we") << o2.dump;
    }
}

// Without a memory plan every value is allocated at its shape's size: the block's blocked output
// (24 channels: padded to the block) gets a buffer large enough for the padding.
TEST(FuseInvertedResidualPass, WithoutAMemoryPlanTheOutputHasRoomForThePadding) {
  CompileOptions base;
  base.plan_memory = false;
  Compiled o2 = compile_and_compare(kMobileNetBlocks, JitLevel::O2, 1e-4, base);
  ASSERT_TRUE(o2.exe);
  EXPECT_EQ(count_ops(o2.dump, "ai.modescope.FusedInvertedResidual"), 3) << o2.dump;
}

// --disable fuse-inverted-residual leaves the three FusedConvs.
TEST(FuseInvertedResidualPass, CanBeLeftOut) {
  CompileOptions base;
  base.disabled_passes = {"fuse-inverted-residual"};
  Compiled o2 = compile_and_compare(kMobileNetBlocks, JitLevel::O2, 1e-4, base);
  ASSERT_TRUE(o2.exe);
  EXPECT_EQ(count_ops(o2.dump, "ai.modescope.FusedInvertedResidual"), 0) << o2.dump;
  EXPECT_GE(count_ops(o2.dump, "ai.modescope.FusedConv"), 8) << o2.dump;
}

// The node's checks: a projection whose weights do not read the depthwise channels is refused,
// naming the node and the shapes; a node without its blocked layout is refused too.
TEST(FuseInvertedResidualPass, RefusesANodeThatIsNotOneBlock) {
  const char* text = R"(
    input x: f32[1,16,8,8]
    init we: f32[64,16,1,1] = 0.1
    init wd: f32[64,1,3,3] = 0.2
    init wp: f32[16,32,1,1] = 0.1
    y = ai.modescope.FusedInvertedResidual(x, we, , wd, , wp, ) {strides=[1,1], pads=[1,1,1,1], layout_block=8, src_blocked=1, dst_blocked=1}
    output y
  )";
  ir::Graph g = testing::parse_graph(text);
  auto be = backends::create_cpu_backend(1);
  CompileOptions o;
  o.jit_level = JitLevel::O0;
  auto c = compile_executor(g, *be, testing::signature_of(g), o);
  std::string message = c ? std::string() : c.status().message();
  if (c) {
    auto run = (*c)->run(testing::inputs_of(g));
    ASSERT_FALSE(run);
    message = run.status().message();
  }
  EXPECT_NE(message.find("FusedInvertedResidual"), std::string::npos) << message;
  EXPECT_NE(message.find("[16,32,1,1]"), std::string::npos) << message;
}

}  // namespace
}  // namespace ms::compiler
