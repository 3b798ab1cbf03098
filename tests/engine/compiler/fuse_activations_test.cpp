// fuse-activations: GELU spelled with Erf or Tanh becomes one Gelu and x * Sigmoid(x) one Swish, which
// fuse-ops then takes into a matmul or conv as a post-op (with HardSwish and HardSigmoid); near misses
// stay. Values against eager
// execution of the original graph.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;

std::string fuse_activations(const std::string& text) {
  return pass_test::run_passes(text, pass_test::list(make_fuse_activations_pass()));
}

// nn.GELU() as torch.onnx exports it at opset 13.
const char* kTorchGelu = R"(
  input x: f32[4,33]
  init s2: f32[] = 1.4142135381698608
  init one: f32[] = 1
  init half: f32[] = 0.5
  a = Div(x, s2)
  e = Erf(a)
  b = Add(e, one)
  c = Mul(x, b)
  y = Mul(c, half)
  output y
)";

TEST(FuseActivations, TorchErfFormBecomesGelu) {
  const std::string dump = fuse_activations(kTorchGelu);
  EXPECT_NE(dump.find("#6 %y = Gelu(%x) origins=[1,2,3,4,5] : f32[4,33]"), std::string::npos) << dump;
  compile_and_compare(kTorchGelu, JitLevel::O1, 1e-6);
}

// x * 0.5 first, the reciprocal of sqrt 2 multiplied, 1 + erf with the constant first.
TEST(FuseActivations, HalfOnXAndReciprocalSqrt2) {
  const char* text = R"(
    input x: f32[2,3,8]
    init r2: f32[] = 0.7071067690849304
    init one: f32[] = 1
    init half: f32[] = 0.5
    h = Mul(half, x)
    a = Mul(x, r2)
    e = Erf(a)
    b = Add(one, e)
    y = Mul(h, b)
    output y
  )";
  const std::string dump = fuse_activations(text);
  EXPECT_NE(dump.find("%y = Gelu(%x)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("Erf"), std::string::npos) << dump;
  compile_and_compare(text, JitLevel::O1, 1e-6);
}

// The tanh approximation, with Pow(x, 3) (torch's approximate="tanh") and with x * x * x.
TEST(FuseActivations, TanhFormsBecomeApproximateGelu) {
  const std::string torch = R"(
    input x: f32[3,17]
    init three: f32[] = 3
    init kappa: f32[] = 0.044714998453855515
    init k: f32[] = 0.7978845834732056
    init one: f32[] = 1
    init half: f32[] = 0.5
    h = Mul(x, half)
    p = Pow(x, three)
    q = Mul(p, kappa)
    s = Add(x, q)
    i = Mul(s, k)
    t = Tanh(i)
    b = Add(t, one)
    y = Mul(h, b)
    output y
  )";
  std::string cubed = torch;
  cubed.replace(cubed.find("p = Pow(x, three)"), 17, "xx = Mul(x, x)\n    p = Mul(xx, x)");
  for (const std::string& text : {torch, cubed}) {
    const std::string dump = fuse_activations(text);
    EXPECT_NE(dump.find("%y = Gelu(%x) {approximate=\"tanh\"}"), std::string::npos) << dump;
    EXPECT_EQ(dump.find("Tanh"), std::string::npos) << dump;
    compile_and_compare(text, JitLevel::O1, 1e-6);
  }
}

// Near misses: Erf's result read elsewhere, a factor of 0.6, x/2 instead of x/sqrt 2.
TEST(FuseActivations, NearMissesStay) {
  std::string shared = kTorchGelu;
  shared += "output e\n";
  std::string factor = kTorchGelu;
  factor.replace(factor.find("half: f32[] = 0.5"), 17, "half: f32[] = 0.6");
  std::string by_two = kTorchGelu;
  by_two.replace(by_two.find("1.4142135381698608"), 18, "2");
  for (const std::string& text : {shared, factor, by_two}) {
    const std::string dump = fuse_activations(text);
    EXPECT_EQ(dump.find("Gelu"), std::string::npos) << dump;
    EXPECT_NE(dump.find("Erf"), std::string::npos) << dump;
  }
}

// A transformer MLP: MatMul + bias + GELU becomes one FusedMatMul with a Gelu post-op.
TEST(FuseActivations, GeluBecomesAMatMulPostOp) {
  const char* text = R"(
    input x: f32[8,16]
    init w: f32[16,24] = 0.1 -0.3 0.2 0.05 -0.15
    init bias: f32[24] = 0.1 -0.2 0.3 0 0.5
    init s2: f32[] = 1.4142135381698608
    init one: f32[] = 1
    init half: f32[] = 0.5
    m = MatMul(x, w)
    x1 = Add(m, bias)
    a = Div(x1, s2)
    e = Erf(a)
    b = Add(e, one)
    c = Mul(x1, b)
    y = Mul(c, half)
    output y
  )";
  Compiled c = compile_and_compare(text, JitLevel::O1, 1e-5);
  EXPECT_NE(c.dump.find("%y = ai.modescope.FusedMatMul(%x, %w, %bias) {post_alphas=[0], post_betas=[0], "
                        "post_ops=[\"Gelu\"]}"),
            std::string::npos)
      << c.dump;
}

// HardSwish and HardSigmoid (MobileNetV3's activations) become conv post-ops: oneDNN's hardswish, and
// HardSigmoid as a linear then a clip.
TEST(FuseActivations, HardSwishAndHardSigmoidBecomeConvPostOps) {
  const char* text = R"(
    input x: f32[1,8,10,10]
    init w: f32[8,8,3,3] = 0.1 -0.05 0.2 0.02 -0.1
    init w2: f32[8,8,1,1] = 0.3 -0.2 0.1
    c1 = Conv(x, w) {pads=[1,1,1,1]}
    h = HardSwish(c1)
    c2 = Conv(h, w2)
    y = HardSigmoid(c2) {alpha=0.25, beta=0.375}
    output y
  )";
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(text, level, 1e-5);
    EXPECT_NE(c.dump.find("post_ops=[\"HardSwish\"]"), std::string::npos) << c.dump;
    EXPECT_NE(c.dump.find("post_alphas=[0.25], post_betas=[0.375], post_ops=[\"HardSigmoid\"]"), std::string::npos)
        << c.dump;
  }
}

// SiLU (EfficientNet's activation, x * Sigmoid(x) before opset 24) becomes Swish, then a conv post-op
// (oneDNN's swish); a Sigmoid read elsewhere too stays.
TEST(FuseActivations, SiluBecomesSwishAndAConvPostOp) {
  const char* text = R"(
    input x: f32[1,8,10,10]
    init w: f32[8,8,3,3] = 0.1 -0.05 0.2 0.02 -0.1
    c = Conv(x, w) {pads=[1,1,1,1]}
    s = Sigmoid(c)
    y = Mul(s, c)
    output y
  )";
  EXPECT_NE(fuse_activations(text).find("%y = Swish(%c)"), std::string::npos);
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(text, level, 1e-5);
    EXPECT_NE(c.dump.find("post_ops=[\"Swish\"]"), std::string::npos) << c.dump;
  }
  // Depthwise (EfficientNet's): oneDNN's jit depthwise conv has no swish, the loop applies it.
  std::string dw = text;
  dw.replace(dw.find("f32[8,8,3,3]"), 12, "f32[8,1,3,3]");
  dw.replace(dw.find("{pads=[1,1,1,1]}"), 16, "{pads=[1,1,1,1], group=8}");
  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(dw, level, 1e-5);
    EXPECT_NE(c.dump.find("post_ops=[\"Swish\"]"), std::string::npos) << c.dump;
  }
  const std::string shared = fuse_activations(std::string(text) + "output s\n");
  EXPECT_EQ(shared.find("Swish"), std::string::npos) << shared;
}

}  // namespace
}  // namespace ms::compiler
