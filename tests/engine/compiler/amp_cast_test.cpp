// The amp-cast pass: golden dumps at O1, O2 and O3 on a small textual graph (white ops chained,
// an elementwise op, a black-list Softmax), the pass's place in the pipeline and its snapshots,
// the clean-up of Cast pairs, and numerics of an O2 conv net against f32 with bf16 tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/backend.h"
#include "tests/engine/compiler/bf16_compile_util.h"
#include "tests/engine/compiler/quant_graphs.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler {
namespace {

using compiler::AmpLevel;

runtime::Backend& cpu() {
  static const auto be = backends::create_cpu_backend(1);
  return *be;
}

const char* kMlp = R"(
    input x: f32[2,4]
    init w1: f32[4,4] = 0.5
    init w2: f32[4,3] = 0.25
    a = MatMul(x, w1)
    b = MatMul(a, w2)
    c = Relu(b)
    d = Softmax(c) {axis=1}
    output d
  )";

std::string amp_dump(const std::string& text, AmpLevel level, bool input_layers_f32 = false) {
  ir::Graph g = testing::parse_graph(text);
  PassManager pm;
  pm.add(make_infer_types_pass(&cpu()));
  pm.add(make_amp_cast_pass(level, &cpu(), input_layers_f32));
  VerifyAfterEachPass verify;
  pm.add_instrumentation(&verify);
  Status st = pm.run(g);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return ir::dump_text(g);
}

// The graph run eagerly in f32 on `in`: the reference the bf16 compiles are held to.
Expected<std::vector<Tensor>> f32_outputs(const ir::Graph& g, const runtime::TensorMap& in) {
  runtime::EagerExecutor exec(g, cpu());
  return exec.run(in);
}

TEST(AmpCastPass, O1CastsAroundTheWhiteListWithoutPairsBetweenMatMuls) {
  EXPECT_EQ(amp_dump(kMlp, AmpLevel::O1), R"(graph main (%x: f32[2,4])
  init %w1: f32[4,4]
  init %w2: f32[4,3]
  #5 %x.bf16 = Cast(%x) {round_mode="nearest", to=16} name="x/amp_cast" : bf16[2,4]
  #6 %w1.bf16 = Cast(%w1) {round_mode="nearest", to=16} name="w1/amp_cast" : bf16[4,4]
  #1 %a.bf16 = MatMul(%x.bf16, %w1.bf16) : bf16[2,4]
  #8 %w2.bf16 = Cast(%w2) {round_mode="nearest", to=16} name="w2/amp_cast" : bf16[4,3]
  #2 %b.bf16 = MatMul(%a.bf16, %w2.bf16) : bf16[2,3]
  #9 %b = Cast(%b.bf16) {round_mode="nearest", to=1} name="b/amp_cast" : f32[2,3]
  #3 %c = Relu(%b) : f32[2,3]
  #4 %d = Softmax(%c) {axis=1} : f32[2,3]
  return %d
)");
}

// Inference precision keeps the matrix op that reads the graph's input as fed in f32 (the raw input
// is never rounded to bf16); the next one reads its output in bf16 as usual.
TEST(AmpCastPass, InputLayersStayF32WhenAsked) {
  EXPECT_EQ(amp_dump(kMlp, AmpLevel::O2, /*input_layers_f32=*/true), R"(graph main (%x: f32[2,4])
  init %w1: f32[4,4]
  init %w2: f32[4,3]
  #1 %a = MatMul(%x, %w1) : f32[2,4]
  #5 %a.bf16 = Cast(%a) {round_mode="nearest", to=16} name="a/amp_cast" : bf16[2,4]
  #6 %w2.bf16 = Cast(%w2) {round_mode="nearest", to=16} name="w2/amp_cast" : bf16[4,3]
  #2 %b = MatMul(%a.bf16, %w2.bf16) : bf16[2,3]
  #3 %c = Relu(%b) : bf16[2,3]
  #7 %c.f32 = Cast(%c) {round_mode="nearest", to=1} name="c/amp_cast" : f32[2,3]
  #4 %d = Softmax(%c.f32) {axis=1} : f32[2,3]
  return %d
)");
}

// Ops that commute with rounding (MaxPool, Relu) after the input layer stay f32 with it: the Cast
// to bf16 comes after the pool, on a quarter of the values, with the same result.
TEST(AmpCastPass, PoolsAfterTheInputLayerStayF32AndTheCastFollowsThem) {
  EXPECT_EQ(amp_dump(R"(
    input x: f32[1,2,8,8]
    init w1: f32[4,2,3,3] = 0.1 -0.2
    init w2: f32[4,4,1,1] = 0.3
    a = Conv(x, w1) {pads=[1,1,1,1]}
    r = Relu(a)
    p = MaxPool(r) {kernel_shape=[2,2], strides=[2,2]}
    q = MaxPool(p) {kernel_shape=[1,1]}
    c = Conv(p, w2)
    output c
    output q
  )",
                     AmpLevel::O2, /*input_layers_f32=*/true),
            R"(graph main (%x: f32[1,2,8,8])
  init %w1: f32[4,2,3,3]
  init %w2: f32[4,4,1,1]
  #1 %a = Conv(%x, %w1) {pads=[1,1,1,1]} : f32[1,4,8,8]
  #2 %r = Relu(%a) : f32[1,4,8,8]
  #3 %p = MaxPool(%r) {kernel_shape=[2,2], strides=[2,2]} : f32[1,4,4,4]
  #4 %q = MaxPool(%p) {kernel_shape=[1,1]} : f32[1,4,4,4]
  #6 %p.bf16 = Cast(%p) {round_mode="nearest", to=16} name="p/amp_cast" : bf16[1,4,4,4]
  #7 %w2.bf16 = Cast(%w2) {round_mode="nearest", to=16} name="w2/amp_cast" : bf16[4,4,1,1]
  #5 %c.bf16 = Conv(%p.bf16, %w2.bf16) : bf16[1,4,4,4]
  #8 %c = Cast(%c.bf16) {round_mode="nearest", to=1} name="c/amp_cast" : f32[1,4,4,4]
  return %c, %q
)");
}

// Inference precision keeps the sums a normalization centres in f32 (a pre-norm transformer's
// residual stream), the LayerNormalization op's input and the decomposed form's (a ReduceMean that a
// Sub reads with its input); the branch they add stays bf16, and a sum no norm centres too. Training
// AMP (no input_layers_f32) rounds them as the O2 lists say, as eager autocast does.
TEST(AmpCastPass, InferenceKeepsTheSumsANormCentresF32) {
  const char* text = R"(
    input x: f32[2,4]
    init w1: f32[4,4] = 0.5
    init w2: f32[4,4] = 0.25
    init s: f32[4] = 1
    init b: f32[4] = 0
    a = MatMul(x, w1)
    h = MatMul(a, w2)
    r1 = Add(h, a)
    n1 = LayerNormalization(r1, s, b) {axis=-1}
    k = MatMul(n1, w2)
    r2 = Add(k, r1)
    m = ReduceMean(r2) {axes=[1]}
    d = Sub(r2, m)
    e = Add(k, h)
    output d
    output e
  )";
  auto types = [&](bool inference) {
    ir::Graph g = testing::parse_graph(text);
    PassManager pm;
    pm.add(make_infer_types_pass(&cpu()));
    pm.add(make_amp_cast_pass(AmpLevel::O2, &cpu(), inference));
    Status st = pm.run(g);
    EXPECT_TRUE(st.is_ok()) << st.message();
    // The type each Add or MatMul computes in, by the initials of its inputs (Casts renamed them).
    std::map<std::string, DType> by_value;
    for (const auto& n : g.nodes())
      if (n.op_type == "Add" || n.op_type == "MatMul")
        by_value[n.op_type + ":" + n.inputs[0].substr(0, 1) + n.inputs[1].substr(0, 1)] =
            g.value(n.outputs[0])->type.dtype;
    return by_value;
  };
  const auto inf = types(true);
  EXPECT_EQ(inf.at("Add:ha"), DType::F32);      // r1: a LayerNormalization's input
  EXPECT_EQ(inf.at("Add:kr"), DType::F32);      // r2: centred by ReduceMean and Sub
  EXPECT_EQ(inf.at("Add:kh"), DType::BF16);     // e: no norm reads it
  EXPECT_EQ(inf.at("MatMul:aw"), DType::BF16);  // h: the branch
  const auto train = types(false);
  EXPECT_EQ(train.at("Add:ha"), DType::BF16);
  EXPECT_EQ(train.at("Add:kr"), DType::BF16);
}

// Why the Cast may move past them: rounding to bf16 is monotonic, so pooling rounded values and
// rounding pooled values give the same bits (values drawn near bf16's rounding ties included).
TEST(AmpCastPass, RoundingCommutesWithMaxPoolAndRelu) {
  const char* before = R"(
    input x: f32[1,3,9,9]
    b = Cast(x) {to=16}
    r = Relu(b)
    p = MaxPool(r) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}
    output p
  )";
  const char* after = R"(
    input x: f32[1,3,9,9]
    r = Relu(x)
    m = MaxPool(r) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}
    p = Cast(m) {to=16}
    output p
  )";
  const ir::Graph g1 = testing::parse_graph(before);
  const ir::Graph g2 = testing::parse_graph(after);
  runtime::TensorMap in = testing::inputs_of(g1, 7);
  float* x = in.begin()->second.data<float>();
  for (int64_t i = 0; i < in.begin()->second.numel(); i += 3) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    bits = (bits & 0xFFFF0000u) | 0x8000u;  // halfway between two bf16 values
    std::memcpy(&x[i], &bits, 4);
  }
  auto a = f32_outputs(g1, in);
  auto b = f32_outputs(g2, in);
  ASSERT_TRUE(a && b);
  ASSERT_EQ((*a)[0].dtype(), DType::BF16);
  ASSERT_EQ((*a)[0].nbytes(), (*b)[0].nbytes());
  EXPECT_EQ(std::memcmp((*a)[0].raw(), (*b)[0].raw(), (*a)[0].nbytes()), 0);
}

TEST(AmpCastPass, O2KeepsTheBlackListInF32) {
  EXPECT_EQ(amp_dump(kMlp, AmpLevel::O2), R"(graph main (%x: f32[2,4])
  init %w1: f32[4,4]
  init %w2: f32[4,3]
  #5 %x.bf16 = Cast(%x) {round_mode="nearest", to=16} name="x/amp_cast" : bf16[2,4]
  #6 %w1.bf16 = Cast(%w1) {round_mode="nearest", to=16} name="w1/amp_cast" : bf16[4,4]
  #1 %a = MatMul(%x.bf16, %w1.bf16) : bf16[2,4]
  #7 %w2.bf16 = Cast(%w2) {round_mode="nearest", to=16} name="w2/amp_cast" : bf16[4,3]
  #2 %b = MatMul(%a, %w2.bf16) : bf16[2,3]
  #3 %c = Relu(%b) : bf16[2,3]
  #8 %c.f32 = Cast(%c) {round_mode="nearest", to=1} name="c/amp_cast" : f32[2,3]
  #4 %d = Softmax(%c.f32) {axis=1} : f32[2,3]
  return %d
)");
}

TEST(AmpCastPass, O3RunsEverythingInBf16AndKeepsTheOutputType) {
  EXPECT_EQ(amp_dump(kMlp, AmpLevel::O3), R"(graph main (%x: f32[2,4])
  init %w1: f32[4,4]
  init %w2: f32[4,3]
  #5 %x.bf16 = Cast(%x) {round_mode="nearest", to=16} name="x/amp_cast" : bf16[2,4]
  #6 %w1.bf16 = Cast(%w1) {round_mode="nearest", to=16} name="w1/amp_cast" : bf16[4,4]
  #1 %a = MatMul(%x.bf16, %w1.bf16) : bf16[2,4]
  #7 %w2.bf16 = Cast(%w2) {round_mode="nearest", to=16} name="w2/amp_cast" : bf16[4,3]
  #2 %b = MatMul(%a, %w2.bf16) : bf16[2,3]
  #3 %c = Relu(%b) : bf16[2,3]
  #4 %d.bf16 = Softmax(%c) {axis=1} : bf16[2,3]
  #8 %d = Cast(%d.bf16) {round_mode="nearest", to=1} name="d/amp_cast" : f32[2,3]
  return %d
)");
}

TEST(AmpCastPass, RemovesRoundTripCastPairs) {
  // bf16 -> f32 -> bf16 is exact: the second Cast reads the bf16 value itself.
  const std::string got = amp_dump(R"(
    input x: f32[3]
    a = Cast(x) {to=16}
    b = Cast(a) {to=1}
    c = Cast(b) {to=16}
    d = Neg(c)
    e = Cast(d) {to=1}
    output e
  )",
                                   AmpLevel::O1);
  EXPECT_EQ(got, R"(graph main (%x: f32[3])
  #1 %a = Cast(%x) {to=16} : bf16[3]
  #4 %d = Neg(%a) : bf16[3]
  #5 %e = Cast(%d) {to=1} : f32[3]
  return %e
)");
}

TEST(AmpCastPass, FirstInThePipelineOnlyWithAnAmpLevel) {
  EXPECT_EQ(describe_pipeline(JitLevel::O1, AmpLevel::O2).front().argument, "amp-cast");
  for (const auto& e : describe_pipeline(JitLevel::O2, AmpLevel::O0)) EXPECT_NE(e.argument, "amp-cast");
  ir::Graph g = testing::parse_graph(kMlp);
  JitConfig cfg;
  cfg.jit_level = JitLevel::O1;
  cfg.amp = AmpLevel::O2;
  cfg.verify = true;
  auto r = run_pipeline(g, &cpu(), cfg);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_GE(r->reports.size(), 2u);
  EXPECT_EQ(r->reports[0].pass, "amp-cast");
  EXPECT_TRUE(r->reports[0].changed);
  EXPECT_GT(r->reports[0].added, 0u);
  ASSERT_GE(r->snapshots.size(), 2u);
  // The graph output keeps its declared type.
  EXPECT_EQ(g.value("d")->type.dtype, DType::F32);
}

TEST(AmpCastPass, TracedUnderAutocastOnlyCleansUp) {
  ir::Graph g = testing::parse_graph(kMlp);
  g.metadata["amp"] = "O2";
  PassManager pm;
  pm.add(make_infer_types_pass(&cpu()));
  pm.add(make_amp_cast_pass(AmpLevel::O2, &cpu()));
  ASSERT_TRUE(pm.run(g).is_ok());
  for (const auto& n : g.nodes()) EXPECT_NE(n.op_type, "Cast");
}

// A small conv net compiled at O1 with each AMP level, and at O2 (fusion and blocked layouts) with
// AMP O2 as --precision bf16 compiles it, run against the f32 graph.
TEST(AmpCastPass, ConvNetNumericsMatchF32WithinBf16Tolerance) {
  const std::string text = R"(
    input x: f32[2,3,8,8]
    init w1: f32[8,3,3,3] = 0.1 -0.2 0.05 0.3 -0.1
    init b1: f32[8] = 0.01
    init w2: f32[4,8,3,3] = -0.05 0.1 0.2 -0.15
    init s: f32[4] = 1.5
    init o: f32[4] = 0.2
    init m: f32[4] = 0.1
    init v: f32[4] = 2
    init fw: f32[4,5] = 0.3 -0.1
    a = Conv(x, w1, b1) {pads=[1,1,1,1]}
    r = Relu(a)
    c = Conv(r, w2) {pads=[1,1,1,1], strides=[2,2]}
    n = BatchNormalization(c, s, o, m, v)
    p = GlobalAveragePool(n)
    f = Flatten(p)
    y = MatMul(f, fw)
    output y
  )";
  const ir::Graph ref_graph = testing::parse_graph(text);
  const runtime::TensorMap in = testing::inputs_of(ref_graph);
  auto ref = f32_outputs(ref_graph, in);
  ASSERT_TRUE(ref) << ref.status().message();
  for (const auto& [jit, level] : {std::pair{JitLevel::O1, AmpLevel::O1}, std::pair{JitLevel::O1, AmpLevel::O2},
                                   std::pair{JitLevel::O1, AmpLevel::O3}, std::pair{JitLevel::O2, AmpLevel::O2}}) {
    SCOPED_TRACE(std::string(jit_level_name(jit)) + " " + compiler::amp_level_name(level));
    ir::Graph g = testing::parse_graph(text);
    JitConfig cfg;
    cfg.jit_level = jit;
    cfg.amp = level;
    cfg.verify = true;
    auto r = run_pipeline(g, &cpu(), cfg);
    ASSERT_TRUE(r) << r.status().message();
    bool any_bf16 = false;
    for (const auto& [name, v] : g.values()) any_bf16 |= v.type.dtype == DType::BF16;
    EXPECT_TRUE(any_bf16) << compiler::amp_level_name(level);
    runtime::EagerExecutor exec(g, cpu());
    auto got = exec.run(in);
    ASSERT_TRUE(got) << got.status().message();
    ASSERT_EQ((*got)[0].dtype(), DType::F32);
    const Tensor& a = (*ref)[0];
    const Tensor& b = (*got)[0];
    ASSERT_EQ(a.numel(), b.numel());
    double max_abs = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
      max_abs = std::max(max_abs, static_cast<double>(std::abs(a.data<float>()[i])));
    for (int64_t i = 0; i < a.numel(); ++i) {
      EXPECT_NEAR(b.data<float>()[i], a.data<float>()[i], 0.03 * max_abs + 1e-3)
          << compiler::amp_level_name(level) << " element " << i;
    }
  }
}

// --precision bf16's compile (O2 with AMP O2): bf16 convs fuse their ReLUs and, where the CPU
// computes bf16, take the blocked activation layout as f32 ones do; the outputs stay within bf16's
// tolerance of f32's.
TEST(AmpCastPass, Bf16ConvsFuseAndKeepTheBlockedLayout) {
  const std::string text = R"(
    input x: f32[1,32,28,28]
    init w1: f32[64,32,3,3] = 0.03 -0.02 0.01 0.04 -0.05 0.02 -0.01
    init w2: f32[64,64,3,3] = -0.02 0.03 0.01 -0.04 0.02 0.05
    a = Conv(x, w1) {pads=[1,1,1,1]}
    r = Relu(a)
    c = Conv(r, w2) {pads=[1,1,1,1]}
    s = Relu(c)
    output s
  )";
  ir::Graph g = testing::parse_graph(text);
  const Status st = testing_bf16::bf16_pipeline(g, cpu());
  ASSERT_TRUE(st.is_ok()) << st.message();
  int bf16_convs = 0, relus = 0, blocked = 0;
  for (const auto& n : g.nodes()) {
    relus += n.op_type == "Relu";
    if (n.op_type != "FusedConv") continue;
    bf16_convs += g.value(n.outputs[0])->type.dtype == DType::BF16;
    blocked += n.attr_string("activation_layout", "") == "blocked";
  }
  EXPECT_EQ(bf16_convs, 2) << ir::dump_text(g);
  EXPECT_EQ(relus, 0) << ir::dump_text(g);
  // Blocked where oneDNN computes bf16 (AVX-512-BF16, AMX); elsewhere the plain conv with an f32 tail.
  EXPECT_EQ(blocked, cpu().native_bf16() ? 2 : 0) << ir::dump_text(g);
  const auto d = testing_bf16::bf16_compile_deviation(text, cpu());
  EXPECT_GT(d.max_abs, 0.0);
  EXPECT_LT(d.max_diff, 0.03 * d.max_abs);
}

// MobileNet's ReLU6 in a bf16 graph: Clip's bounds are bf16 constants there; it still becomes the
// conv's post-op (left as an op, it also kept the convs from chaining blocked layouts).
TEST(AmpCastPass, Bf16Relu6FusesIntoTheConv) {
  const std::string text = R"(
    input x: f32[1,16,14,14]
    init w: f32[32,16,3,3] = 0.04 -0.03 0.02 0.05 -0.01
    init lo: f32[] = 0
    init hi: f32[] = 6
    a = Conv(x, w) {pads=[1,1,1,1]}
    y = Clip(a, lo, hi)
    output y
  )";
  ir::Graph g = testing::parse_graph(text);
  const Status st = testing_bf16::bf16_pipeline(g, cpu());
  ASSERT_TRUE(st.is_ok()) << st.message();
  int clips = 0, fused = 0;
  for (const auto& n : g.nodes()) {
    clips += n.op_type == "Clip";
    fused += n.op_type == "FusedConv" && g.value(n.outputs[0])->type.dtype == DType::BF16;
  }
  EXPECT_EQ(clips, 0) << ir::dump_text(g);
  EXPECT_EQ(fused, 1) << ir::dump_text(g);
  const auto d = testing_bf16::bf16_compile_deviation(text, cpu());
  EXPECT_GT(d.max_abs, 0.0);
  EXPECT_LT(d.max_diff, 0.03 * d.max_abs);
}

// Output types of the compute nodes after amp-cast O2 (inference, blocks f32 as asked): f32 and bf16
// counts.
std::pair<int, int> f32_bf16_nodes(const std::string& text, bool blocks_f32) {
  ir::Graph g = testing::parse_graph(text);
  PassManager pm;
  pm.add(make_infer_types_pass(&cpu()));
  pm.add(make_amp_cast_pass(AmpLevel::O2, &cpu(), /*input_layers_f32=*/true, DType::BF16, blocks_f32));
  const Status st = pm.run(g);
  EXPECT_TRUE(st.is_ok()) << st.message();
  int f32 = 0, bf16 = 0;
  for (const auto& n : g.nodes()) {
    if (n.op_type == "Cast" || n.op_type == "Constant") continue;
    const DType t = g.value(n.outputs[0])->type.dtype;
    f32 += t == DType::F32;
    bf16 += t == DType::BF16;
  }
  return {f32, bf16};
}

// The whole O2 pipeline as --precision bf16 compiles it on this CPU.
auto run_bf16_inference_pipeline(ir::Graph& g) {
  JitConfig cfg;
  cfg.jit_level = JitLevel::O2;
  cfg.amp = AmpLevel::O2;
  cfg.amp_input_layers_f32 = true;
  cfg.verify = true;
  return run_pipeline(g, &cpu(), cfg);
}

// A MobileNetV2 block in a bf16 inference graph on a CPU: the block (1x1 expand, depthwise, 1x1
// project, residual Add and their ReLU6s) stays f32 and becomes one FusedInvertedResidual, the conv
// after it computes in bf16; with the option off every conv is bf16. (With AMX too: oneDNN's bf16
// depthwise convs and the reorders around the squeeze-excite blocks lost to the fused f32 block,
// MobileNetV2 3.1 against 3.0 ms, EfficientNet-B0 8.8 against 5.9.)
TEST(AmpCastPass, DepthwiseBlocksStayF32WhereTheirKernelIsFaster) {
  const std::string text = R"(
    input x: f32[1,16,14,14]
    init w0: f32[16,16,1,1] = 0.05 -0.03 0.02 0.04 -0.01
    init w1: f32[96,16,1,1] = 0.04 -0.03 0.02 0.05 -0.01
    init wd: f32[96,1,3,3] = 0.1 -0.05 0.08 0.02 -0.07
    init w3: f32[16,96,1,1] = -0.02 0.03 0.01 -0.04 0.02
    init w4: f32[32,16,1,1] = 0.03 -0.02 0.04 0.01 -0.05
    lo = Constant() {value_float=0.0}
    hi = Constant() {value_float=6.0}
    s = Conv(x, w0)
    a = Conv(s, w1)
    b = Clip(a, lo, hi)
    c = Conv(b, wd) {group=96, pads=[1,1,1,1]}
    d = Clip(c, lo, hi)
    e = Conv(d, w3)
    f = Add(e, s)
    y = Conv(f, w4)
    output y
  )";
  // x's conv reads the graph input (kept f32 as an input layer); then the block's 6 nodes; the head.
  EXPECT_EQ(f32_bf16_nodes(text, true), std::make_pair(7, 1));
  EXPECT_EQ(f32_bf16_nodes(text, false), std::make_pair(1, 7));
  // The whole pipeline, as --precision bf16 compiles it here.
  ir::Graph g = testing::parse_graph(text);
  auto r = run_bf16_inference_pipeline(g);
  ASSERT_TRUE(r) << r.status().message();
  int fused_blocks = 0, bf16_convs = 0;
  for (const auto& n : g.nodes()) {
    // The block stays f32 between its neighbours; its kernel may take the products in bf16.
    if (n.op_type == "FusedInvertedResidual") {
      EXPECT_EQ(n.attr_string("products", ""), "bf16");
    }
    fused_blocks += n.op_type == "FusedInvertedResidual";
    bf16_convs += n.op_type == "FusedConv" && g.value(n.outputs[0])->type.dtype == DType::BF16;
  }
  EXPECT_EQ(fused_blocks, 1) << ir::dump_text(g);
  EXPECT_EQ(bf16_convs, 1) << ir::dump_text(g);
}

// A quantized graph under bf16: the quantization ops and the float ops beside them stay f32, so
// fold-qdq still runs the static QDQ matmul as one QLinearMatMul and ONNX Runtime's dynamic form as
// FusedDynamicQuantMatMul steps (before, DynamicQuantizeLinear was handed a bf16 input and the
// pipeline failed; the static one ran as a dequantized bf16 matmul).
TEST(AmpCastPass, QuantizedGraphsKeepTheirFloatGlueF32) {
  const std::string qdq = R"(
    input x: f32[2,5,16]
    init sx: f32[] = 0.01
    init zx: u8[] = 120
    init wq: i8[16,12] = 17 -5 90 -128 3 64 -33 0 127 8 -71 22 41 -9 100 -57 6
    init sw: f32[12] = 0.004 0.006 0.003 0.005 0.002 0.004 0.007 0.003 0.005 0.004 0.006 0.002
    init sy: f32[] = 0.05
    init zy: u8[] = 128
    xq = QuantizeLinear(x, sx, zx)
    xd = DequantizeLinear(xq, sx, zx)
    wd = DequantizeLinear(wq, sw) {axis=1}
    m = MatMul(xd, wd)
    yq = QuantizeLinear(m, sy, zy)
    y = DequantizeLinear(yq, sy, zy)
    output y
  )";
  for (const auto& [text, fused, count] :
       {std::tuple{qdq, "QLinearMatMul(", 1}, {std::string(kDynamicMatMul), "FusedDynamicQuantMatMul(", 2}}) {
    ir::Graph g = testing::parse_graph(text);
    auto r = run_bf16_inference_pipeline(g);
    ASSERT_TRUE(r) << r.status().message();
    const std::string dump = ir::dump_text(g);
    size_t found = 0;
    for (size_t p = dump.find(fused); p != std::string::npos; p = dump.find(fused, p + 1)) ++found;
    EXPECT_EQ(found, static_cast<size_t>(count)) << dump;
    EXPECT_EQ(dump.find("MatMul(%xd"), std::string::npos) << dump;
    EXPECT_EQ(dump.find("MatMulInteger("), std::string::npos) << dump;
  }
}

// EfficientNet's block: SiLU activations and a squeeze-excite between the depthwise conv and the
// projection stay f32 with the block; a depthwise conv with no 1x1 conv beside it (ConvNeXt's) does
// not.
TEST(AmpCastPass, SqueezeExciteBlocksStayF32AndLoneDepthwiseConvsDoNot) {
  const std::string effnet = R"(
    input x: f32[1,16,12,12]
    init w0: f32[16,16,3,3] = 0.05 -0.03 0.02 0.04 -0.01
    init w1: f32[64,16,1,1] = 0.04 -0.03 0.02 0.05 -0.01
    init wd: f32[64,1,5,5] = 0.1 -0.05 0.08 0.02 -0.07
    init ws1: f32[4,64,1,1] = 0.2 -0.1 0.3
    init ws2: f32[64,4,1,1] = -0.2 0.1 0.25
    init w3: f32[24,64,1,1] = -0.02 0.03 0.01 -0.04 0.02
    init w4: f32[32,24,3,3] = 0.03 -0.02 0.04 0.01 -0.05
    s = Conv(x, w0) {pads=[1,1,1,1]}
    a = Conv(s, w1)
    as = Sigmoid(a)
    b = Mul(a, as)
    c = Conv(b, wd) {group=64, pads=[2,2,2,2]}
    cs = Sigmoid(c)
    d = Mul(c, cs)
    p = GlobalAveragePool(d)
    q = Conv(p, ws1)
    qs = Sigmoid(q)
    r = Mul(q, qs)
    t = Conv(r, ws2)
    u = Sigmoid(t)
    v = Mul(d, u)
    e = Conv(v, w3)
    y = Conv(e, w4) {pads=[1,1,1,1]}
    output y
  )";
  // The input layer, then the 14 nodes of the block; the 3x3 conv after it.
  EXPECT_EQ(f32_bf16_nodes(effnet, true), std::make_pair(15, 1));
  EXPECT_EQ(f32_bf16_nodes(effnet, false), std::make_pair(1, 15));

  const std::string convnext = R"(
    input x: f32[1,16,12,12]
    init w0: f32[16,16,3,3] = 0.05 -0.03 0.02 0.04 -0.01
    init wd: f32[16,1,7,7] = 0.1 -0.05 0.08 0.02 -0.07
    init w2: f32[16,16,3,3] = 0.03 -0.02 0.04 0.01 -0.05
    s = Conv(x, w0) {pads=[1,1,1,1]}
    t = Conv(s, w2) {pads=[1,1,1,1]}
    c = Conv(t, wd) {group=16, pads=[3,3,3,3]}
    y = Relu(c)
    output y
  )";
  EXPECT_EQ(f32_bf16_nodes(convnext, true), std::make_pair(1, 3));
}

}  // namespace
}  // namespace ms::compiler
