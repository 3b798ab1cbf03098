// conv-layout and conv-algorithm (O2): which convs run on the blocked layout and which as Winograd;
// values against eager execution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/memory_plan.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/schedule.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/observer.h"
#include "tests/engine/compiler/pass_test_util.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/plan_checks.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;

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

// conv-algorithm marks the 3x3 convs with stride 1, at least 64 channels each way and planes of at
// least 7x7 (blocked layout); strided, pointwise, narrow and small-plane (4x4) convs stay direct.
TEST(ConvAlgorithmPass, MarksWideStrideOne3x3Convs) {
  Compiled c = compile_and_compare(R"(
    input x: f32[1,64,8,8]
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

// The impl each node's kernel reported, by the node's first output.
struct ConvPassImpls final : runtime::RunObserver {
  std::map<std::string, std::string> of;
  void on_kernel_impl(const ir::Node& n, std::string_view impl) override { of[n.outputs[0]] = std::string(impl); }
};

std::map<std::string, std::string> conv_pass_impls(const Compiled& c, const std::string& text) {
  ConvPassImpls seen;
  runtime::RunOptions ro;
  ro.observer = &seen;
  EXPECT_TRUE(c.exe->run(testing::inputs_of(testing::parse_graph(text)), ro));
  return seen.of;
}

// Winograd runs only where its scratch fits the arena's room at the step. With the room kept to 5%
// over the values' lower bound (no minimum room): behind a 1 MiB value that sets the lower bound
// there is room and both 3x3 convs take it; alone (a 64 KiB arena) they stay direct, and the arena
// stays within 5% of the bound. With the default minimum room (8 MiB) the small graph takes it too,
// its arena growing by no more than that room. Values equal eager execution throughout.
TEST(ConvAlgorithmPass, WinogradRunsOnlyWhereItsScratchFitsTheArena) {
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
  CompileOptions no_min_room;
  no_min_room.scratch_min_room = 0;
  uint64_t tight_bound = 0;
  for (const auto& [label, text, options] :
       {std::tuple{"roomy", &roomy, no_min_room}, std::tuple{"tight", &tight, no_min_room},
        std::tuple{"tight, min room", &tight, CompileOptions{}}}) {
    SCOPED_TRACE(label);
    Compiled c = compile_and_compare(*text, compiler::JitLevel::O2, 1e-3, options);
    ASSERT_TRUE(c.exe);
    EXPECT_NE(
        c.dump.find("%r = ai.modescope.FusedConv(%d, %w3) {activation_layout=\"blocked\", algorithm=\"winograd\""),
        std::string::npos)
        << c.dump;
    auto seen = conv_pass_impls(c, *text);
    const bool a = seen["r"].find("wino") != std::string::npos, b = seen["b"].find("wino") != std::string::npos;
    EXPECT_EQ(a, b) << seen["r"] << " / " << seen["b"];
    wino[label] = a;
    const auto& plan = c.exe->memory_plan();
    if (options.scratch_min_room == 0) {
      EXPECT_LE(static_cast<double>(plan.arena_bytes), 1.05 * static_cast<double>(plan.lower_bound));
      if (text == &tight) tight_bound = plan.lower_bound;
    } else {
      EXPECT_LE(plan.arena_bytes, tight_bound + options.scratch_min_room);
    }
  }
  EXPECT_FALSE(wino["tight"]);
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "Winograd convolutions need AVX2 with FMA (ours) or AVX-512 (oneDNN's); this CPU has neither";
  EXPECT_TRUE(wino["roomy"]);
  EXPECT_TRUE(wino["tight, min room"]);
}

// With room for both, Winograd takes the large tiles (F(4x4,3x3)) where the output's sides are
// multiples of 4 and the small ones (F(2x2,3x3)) where the large would cover the plane with padded
// tiles (18x18: 20x20 of tiles). oneDNN's (AVX-512) takes the large ones only from 32x32 up, its small
// ones being faster than its large on 28x28 (ResNet-50's layer 2), where ours runs instead with the
// large ones; ours also runs the 7x7 plane (16 tiles) where oneDNN has Winograd (AVX-512).
TEST(ConvAlgorithmPass, WinogradTakesLargeTilesOnlyOnPlanesOfWholeTiles) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "Winograd convolutions need AVX2 with FMA (ours) or AVX-512 (oneDNN's); this CPU has neither";
  const std::string text = R"(
    input x: f32[1,64,36,36]
    input x2: f32[1,64,28,28]
    init w: f32[64,64,3,3] = 0.02 -0.01 0.03 -0.02 0.01
    init w2: f32[64,64,3,3] = -0.01 0.02 0.01 -0.03
    init wp: f32[64,64,1,1] = 0.05 -0.02
    a = Conv(x, w) {pads=[1,1,1,1]}
    p = Conv(a, wp) {strides=[2,2]}
    b = Conv(p, w2) {pads=[1,1,1,1]}
    c = Conv(x2, w2) {pads=[1,1,1,1]}
    s = Conv(c, wp) {strides=[4,4]}
    d = Conv(s, w) {pads=[1,1,1,1]}
    output b
    output d
  )";
  CompileOptions roomy;
  roomy.scratch_min_room = uint64_t{64} << 20;
  Compiled c = compile_and_compare(text, compiler::JitLevel::O2, 1e-3, roomy);
  ASSERT_TRUE(c.exe);
  auto seen = conv_pass_impls(c, text);
  EXPECT_NE(seen["a"].find("wino_4x3"), std::string::npos) << seen["a"];            // 36x36
  EXPECT_NE(seen["b"].find("wino_2x3"), std::string::npos) << seen["b"];            // 18x18
  EXPECT_NE(seen["c"].find("modescope:wino_4x3"), std::string::npos) << seen["c"];  // 28x28
  EXPECT_NE(seen["d"].find("modescope:wino_2x3"), std::string::npos) << seen["d"];  // 7x7
}

// A strided 1x1 conv takes oneDNN's 1x1 kernel, which copies the strided input into scratch, where
// the step's room has space for the copy (the default 8 MiB beyond the values' bound), and a jit conv
// without that scratch where it has not (room 5% over the bound only). Values equal eager's both ways.
TEST(ConvAlgorithmPass, StridedPointwiseConvTakesItsInputCopyWhereTheRoomAllows) {
  if (!__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "the lean alternative checked here is oneDNN's AVX-512 one (this CPU has none)";
  const std::string text = R"(
    input x: f32[1,64,56,56]
    init w1: f32[256,64,1,1] = 0.05 -0.02 0.03
    init w2: f32[512,256,1,1] = 0.01 -0.02 0.015
    init w3: f32[128,512,1,1] = -0.01 0.02 0.01
    a = Conv(x, w1)
    d = Conv(a, w2) {strides=[2,2]}
    e = Conv(d, w3)
    output e
  )";
  CompileOptions no_min_room;
  no_min_room.scratch_min_room = 0;
  Compiled roomy = compile_and_compare(text, compiler::JitLevel::O2, 1e-3);
  Compiled tight = compile_and_compare(text, compiler::JitLevel::O2, 1e-3, no_min_room);
  ASSERT_TRUE(roomy.exe && tight.exe);
  const std::string with_copy = conv_pass_impls(roomy, text)["d"], lean = conv_pass_impls(tight, text)["d"];
  EXPECT_NE(with_copy.find("jit_1x1"), std::string::npos) << with_copy;
  EXPECT_EQ(lean.find("1x1"), std::string::npos) << lean;
  EXPECT_NE(lean.find("jit"), std::string::npos) << lean;
}

// A depthwise conv whose result goes to a non-conv reader keeps its input plain too: oneDNN's jit
// depthwise conv takes one layout on both sides (a blocked input with a plain result ran its
// reference conv). A depthwise conv between two convs stays blocked on both sides.
TEST(ConvLayoutPass, DepthwiseConvsKeepBothSidesInOneLayout) {
  const char* text = R"(
    input x: f32[1,16,14,14]
    init w1: f32[32,16,1,1] = 0.1 -0.2 0.05
    init dw: f32[32,1,3,3] = 0.2 -0.1 0.3 0.05
    init w2: f32[32,32,1,1] = -0.1 0.2 0.1
    a = Conv(x, w1)
    b = Conv(a, dw) {group=32, pads=[1,1,1,1]}
    c = Conv(b, w2)
    d = Conv(c, dw) {group=32, pads=[1,1,1,1]}
    y = Mul(d, d)
    output y
  )";
  Compiled c = compile_and_compare(text, JitLevel::O2);
  ASSERT_TRUE(c.exe);
  std::map<std::string, const ir::Node*> by_out;
  for (const auto& n : c.exe->graph().nodes()) by_out[n.outputs[0]] = &n;
  ASSERT_TRUE(by_out.count("b") && by_out.count("d"));
  EXPECT_EQ(by_out["b"]->attr_int("src_blocked", 0), 1) << c.dump;
  EXPECT_EQ(by_out["b"]->attr_int("dst_blocked", 0), 1) << c.dump;
  EXPECT_EQ(by_out["d"]->attr_int("src_blocked", 0), 0) << c.dump;
  EXPECT_EQ(by_out["d"]->attr_int("dst_blocked", 0), 0) << c.dump;
}

// conv-layout's channel block: values kept blocked between convs use the block oneDNN's jit convs
// take on this CPU (nChw8c with AVX2, nChw16c with AVX-512), so no conv of a blocked region falls to
// oneDNN's reference conv (a fixed nChw16c did on AVX2), and the values equal eager execution.
int64_t expected_layout_block() {
  const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return avx512_core ? 16 : 8;
}

// An inverted residual block of MobileNetV2 at 24 channels (a multiple of 8, not of 16): 1x1
// expand, depthwise 3x3, 1x1 project, the residual sum, then a second block on its result.
const char* kBlockInvertedResiduals = R"(
    input x: f32[1,24,14,14]
    init we: f32[144,24,1,1] = 0.1 -0.2 0.05 0.15 -0.05
    init be: f32[144] = 0.01 -0.02
    init wd: f32[144,1,3,3] = 0.2 -0.1 0.3 0.05
    init wp: f32[24,144,1,1] = -0.1 0.2 0.1 -0.05
    init w0: f32[24,24,3,3] = 0.05 -0.1 0.02
    s = Conv(x, w0) {pads=[1,1,1,1]}
    e = Conv(s, we, be)
    r = Relu(e)
    d = Conv(r, wd) {group=144, pads=[1,1,1,1]}
    dr = Relu(d)
    p = Conv(dr, wp)
    a = Add(p, s)
    e2 = Conv(a, we, be)
    r2 = Relu(e2)
    d2 = Conv(r2, wd) {group=144, pads=[1,1,1,1]}
    dr2 = Relu(d2)
    p2 = Conv(dr2, wp)
    output p2
  )";

TEST(ConvLayoutPass, BlockedValuesUseTheChannelBlockOfThisCpu) {
  Compiled c = compile_and_compare(kBlockInvertedResiduals, JitLevel::O2, 1e-3);
  ASSERT_TRUE(c.exe);
  int blocked = 0;
  for (const auto& n : c.exe->graph().nodes()) {
    const bool any = n.attr_int("src_blocked", 0) || n.attr_int("dst_blocked", 0) || n.attr_int("residual_blocked", 0);
    if (!any) {
      EXPECT_FALSE(n.attrs.count("layout_block")) << c.dump;
      continue;
    }
    ++blocked;
    EXPECT_EQ(n.attr_int("layout_block", 0), expected_layout_block()) << c.dump;
  }
  // With 8-channel blocks the 24-channel values stay blocked as well: the whole chain is one region.
  EXPECT_GE(blocked, expected_layout_block() == 8 ? 7 : 4) << c.dump;
}

// (fuse-inverted-residual left out: it would take the blocks' convs into its own kernel.)
TEST(ConvLayoutPass, NoConvOfABlockedRegionRunsTheReferenceConv) {
  CompileOptions base;
  base.disabled_passes = {"fuse-inverted-residual"};
  Compiled c = compile_and_compare(kBlockInvertedResiduals, JitLevel::O2, 1e-3, base);
  ASSERT_TRUE(c.exe);
  auto seen = conv_pass_impls(c, kBlockInvertedResiduals);
  int convs = 0;
  for (const auto& n : c.exe->graph().nodes()) {
    if (n.op_type != "FusedConv") continue;
    ++convs;
    const std::string& impl = seen[n.outputs[0]];
    EXPECT_EQ(impl.rfind("fused:onednn:", 0), 0u) << n.outputs[0] << ": " << impl;
    EXPECT_EQ(impl.find(":ref"), std::string::npos) << n.outputs[0] << ": " << impl;
  }
  EXPECT_EQ(convs, 7);
}

}  // namespace
}  // namespace ms::compiler
