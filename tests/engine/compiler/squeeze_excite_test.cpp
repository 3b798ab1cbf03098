// fuse-squeeze-excite: GlobalAveragePool -> 1x1 Conv -> act -> 1x1 Conv -> act -> Mul becomes one
// FusedSqueezeExcite; values against eager execution of the unfused graph at O1 and O2 (plain and
// blocked layouts), and the fused graph run eagerly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "engine/backends/select.h"
#include "engine/compiler/pipeline.h"
#include "tests/engine/compiler/bf16_compile_util.h"
#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;
using pass_test::count_ops;

// EfficientNet's block: 1x1 expansion + SiLU, depthwise conv + SiLU, squeeze-excite (SiLU,
// Sigmoid; the Mul's scale first), 1x1 projection; N samples, E expanded channels squeezed to S.
std::string efficientnet_block(int n, int e, int sq) {
  std::string text = R"(
    input x: f32[{N},16,10,10]
    init we: f32[{E},16,1,1] = 0.1 -0.3 0.2 0.05
    init wd: f32[{E},1,3,3] = 0.2 -0.1 0.3 0.05 -0.15
    init w1: f32[{S},{E},1,1] = 0.3 -0.2 0.1 0.25 -0.05
    init b1: f32[{S}] = 0.1 -0.2 0.05
    init w2: f32[{E},{S},1,1] = -0.2 0.4 0.1 -0.3
    init b2: f32[{E}] = 0.2 -0.1 0.3
    init wp: f32[16,{E},1,1] = 0.1 -0.2 0.05 0.15
    e = Conv(x, we)
    es = Sigmoid(e)
    ex = Mul(e, es)
    d = Conv(ex, wd) {group={E}, pads=[1,1,1,1]}
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
  for (const auto& [key, value] : {std::pair<std::string, int>{"{N}", n}, {"{E}", e}, {"{S}", sq}})
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at))
      text.replace(at, key.size(), std::to_string(value));
  return text;
}
const std::string kEfficientNetBlock = efficientnet_block(1, 32, 8);

TEST(FuseSqueezeExcitePass, FusesTheBlockIntoOneNode) {
  ir::Graph fused;
  const std::string dump = pass_test::run_passes(
      kEfficientNetBlock, pass_test::list(make_fuse_activations_pass(), make_fuse_squeeze_excite_pass()), &fused);
  EXPECT_EQ(count_ops(dump, "ai.modescope.FusedSqueezeExcite"), 1) << dump;
  EXPECT_EQ(count_ops(dump, "GlobalAveragePool"), 0) << dump;
  EXPECT_EQ(count_ops(dump, "Sigmoid"), 0) << dump;
  EXPECT_EQ(count_ops(dump, "Mul"), 0) << dump;
  EXPECT_EQ(count_ops(dump, "Conv"), 3) << dump;  // the expansion, the depthwise conv, the projection
  EXPECT_NE(dump.find("post_ops=[\"Swish\",\"Sigmoid\"]"), std::string::npos) << dump;
  EXPECT_EQ(fused.nodes().size(), 6u) << dump;  // Conv, Swish, Conv, Swish, FusedSqueezeExcite, Conv

  // The fused graph run eagerly (PyNative's kernels) equals the unfused one.
  auto be = backends::create_cpu_backend(2);
  const ir::Graph orig = testing::parse_graph(kEfficientNetBlock);
  const auto in = testing::inputs_of(orig);
  auto want = runtime::EagerExecutor(orig, *be).run(in);
  auto got = runtime::EagerExecutor(fused, *be).run(in);
  ASSERT_TRUE(want && got);
  for (int64_t i = 0; i < (*want)[0].numel(); ++i) {
    EXPECT_NEAR((*got)[0].data<float>()[i], (*want)[0].data<float>()[i], 1e-5) << i;
  }
}

TEST(FuseSqueezeExcitePass, MatchesEagerAtO1AndO2WithTheBlockedLayout) {
  Compiled o1 = compile_and_compare(kEfficientNetBlock, JitLevel::O1, 1e-4);
  ASSERT_TRUE(o1.exe);
  EXPECT_EQ(count_ops(o1.dump, "ai.modescope.FusedSqueezeExcite"), 1) << o1.dump;
  Compiled o2 = compile_and_compare(kEfficientNetBlock, JitLevel::O2, 1e-4);
  ASSERT_TRUE(o2.exe);
  const ir::Node* se = nullptr;
  for (const auto& n : o2.exe->graph().nodes())
    if (n.op_type == "FusedSqueezeExcite") se = &n;
  ASSERT_NE(se, nullptr) << o2.dump;
  // Between the depthwise conv and the projection: blocked on both sides.
  EXPECT_EQ(se->attr_int("src_blocked", 0), 1) << o2.dump;
  EXPECT_EQ(se->attr_int("dst_blocked", 0), 1) << o2.dump;
}

// --precision bf16 (O2 with AMP O2): the bf16 block fuses too, its kernel reading and writing bf16
// x and y in the blocked layout, within bf16's tolerance of f32.
TEST(FuseSqueezeExcitePass, Bf16BlockFuses) {
  auto be = backends::create_cpu_backend(1);
  ir::Graph g = testing::parse_graph(kEfficientNetBlock);
  const Status st = testing_bf16::bf16_pipeline(g, *be);
  ASSERT_TRUE(st.is_ok()) << st.message();
  int se = 0;
  for (const auto& n : g.nodes())
    se += n.op_type == "FusedSqueezeExcite" && g.value(n.outputs[0])->type.dtype == DType::BF16;
  EXPECT_EQ(se, 1) << ir::dump_text(g);
  const auto d = testing_bf16::bf16_compile_deviation(kEfficientNetBlock, *be);
  EXPECT_GT(d.max_abs, 0.0);
  EXPECT_LT(d.max_diff, 0.03 * d.max_abs);
}

// MobileNetV3's form: ReLU and HardSigmoid, no biases, the Mul's input first, batch 2, a graph
// output after it (plain result from a blocked input).
TEST(FuseSqueezeExcitePass, TakesOtherActivationsAndNoBiases) {
  const char* text = R"(
    input x: f32[2,16,6,6]
    init w0: f32[16,16,1,1] = 0.2 -0.1 0.3 0.05 -0.15
    init wd: f32[16,1,3,3] = 0.2 -0.1 0.3 0.05
    init w1: f32[4,16,1,1] = 0.3 -0.2 0.1 0.25 -0.05
    init w2: f32[16,4,1,1] = -0.2 0.4 0.1 -0.3
    e = Conv(x, w0)
    d = Conv(e, wd) {group=16, pads=[1,1,1,1]}
    p = GlobalAveragePool(d)
    c1 = Conv(p, w1)
    r = Relu(c1)
    c2 = Conv(r, w2)
    h = HardSigmoid(c2) {alpha=0.16666667, beta=0.5}
    y = Mul(d, h)
    output y
  )";
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(text, level, 1e-4);
    ASSERT_TRUE(c.exe);
    EXPECT_EQ(count_ops(c.dump, "ai.modescope.FusedSqueezeExcite"), 1) << c.dump;
    EXPECT_NE(c.dump.find("post_ops=[\"Relu\",\"HardSigmoid\"]"), std::string::npos) << c.dump;
    if (level == JitLevel::O2) {  // blocked in, plain out: the scale pass crosses layouts
      EXPECT_NE(c.dump.find("FusedSqueezeExcite(%d, %w1, %w1_zero_bias, %w2, %w2_zero_bias) {layout_block="),
                std::string::npos)
          << c.dump;
    }
  }
}

// The block with wide excitations (256 channels squeezed to 66, batch 2): the kernel's matrix-vector
// products run over the threads, four rows at a time with rows left over, SiLU and Sigmoid over
// their results in vectors; equal to eager.
TEST(FuseSqueezeExcitePass, WideExcitationsMatchEager) {
  const std::string text = efficientnet_block(2, 256, 66);
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(text, level, 1e-4);
    ASSERT_TRUE(c.exe);
    EXPECT_EQ(count_ops(c.dump, "ai.modescope.FusedSqueezeExcite"), 1) << c.dump;
  }
}

// An intermediate read outside the pattern (the pooled vector is also an output) leaves it alone.
TEST(FuseSqueezeExcitePass, LeavesABlockWhoseIntermediateHasOtherReaders) {
  const char* text = R"(
    input x: f32[1,16,4,4]
    init w1: f32[4,16,1,1] = 0.3 -0.2 0.1
    init w2: f32[16,4,1,1] = -0.2 0.4 0.1
    p = GlobalAveragePool(x)
    c1 = Conv(p, w1)
    r = Relu(c1)
    c2 = Conv(r, w2)
    s = Sigmoid(c2)
    y = Mul(x, s)
    output y, p
  )";
  const std::string dump = pass_test::run_passes(text, pass_test::list(make_fuse_squeeze_excite_pass()));
  EXPECT_EQ(count_ops(dump, "ai.modescope.FusedSqueezeExcite"), 0) << dump;
  EXPECT_EQ(count_ops(dump, "GlobalAveragePool"), 1) << dump;
}

// The node's checks: weights that do not fit the input are refused naming the node.
TEST(FuseSqueezeExcitePass, RefusesWeightsThatDoNotFit) {
  const char* text = R"(
    input x: f32[1,16,4,4]
    init w1: f32[4,16,1,1] = 0.3
    init b1: f32[4] = 0.1
    init w2: f32[8,4,1,1] = 0.2
    init b2: f32[8] = 0.1
    y = ai.modescope.FusedSqueezeExcite(x, w1, b1, w2, b2) {post_ops=["Relu", "Sigmoid"]}
    output y
  )";
  ir::Graph g = testing::parse_graph(text);
  auto be = backends::create_cpu_backend(1);
  compiler::CompileOptions o;
  o.jit_level = JitLevel::O1;
  auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("FusedSqueezeExcite"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("[C,R,1,1]"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace ms::compiler
