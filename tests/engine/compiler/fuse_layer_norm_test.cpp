// fuse-layer-norm: the decomposed LayerNorm forms PyTorch and hand-written models produce become one
// LayerNormalization; near misses stay as they are. Values against eager execution of the original.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// nn.LayerNorm(16) as torch.onnx exports it at opset 13, three LayerNorms over one residual stream.
const char* kTorchLayerNorm = R"(
  input x: f32[2,5,16]
  init two: f32[] = 2
  init eps: f32[] = 0.00001
  init gamma: f32[16] = 1.5 0.5 -1 2 0.25
  init beta: f32[16] = 0.1 -0.2 0.3
  mean = ReduceMean(x) {axes=[-1]}
  d = Sub(x, mean)
  sq = Pow(d, two)
  var = ReduceMean(sq) {axes=[-1]}
  ve = Add(var, eps)
  s = Sqrt(ve)
  n = Div(d, s)
  g = Mul(n, gamma)
  y = Add(g, beta)
  output y
)";

TEST(FuseLayerNorm, TorchExportBecomesOneLayerNormalization) {
  const std::string dump = pass_test::run_passes(kTorchLayerNorm, pass_test::list(make_fuse_layer_norm_pass()));
  EXPECT_NE(
      dump.find(
          "%y = LayerNormalization(%x, %gamma, %beta) {axis=2, epsilon=9.99999975e-06} origins=[1,2,3,4,5,6,7,8,9]"),
      std::string::npos)
      << dump;
  EXPECT_EQ(count(dump, " = "), 1u) << dump;
  Compiled c = compile_and_compare(kTorchLayerNorm, JitLevel::O1, 1e-5);
  EXPECT_EQ(count(c.dump, "LayerNormalization"), 1u) << c.dump;
}

// Mul(d, d) for the square, eps first, a Reciprocal multiplied in, two trailing axes, no affine tail:
// the LayerNormalization gets a scale of ones.
TEST(FuseLayerNorm, HandWrittenVariantsOverTwoAxesWithoutAffine) {
  const char* text = R"(
    input x: f32[3,4,6]
    init eps: f32[] = 0.001
    mean = ReduceMean(x) {axes=[1,2]}
    d = Sub(x, mean)
    sq = Mul(d, d)
    var = ReduceMean(sq) {axes=[-2,-1]}
    ve = Add(eps, var)
    s = Sqrt(ve)
    r = Reciprocal(s)
    y = Mul(r, d)
    output y
  )";
  const std::string dump = pass_test::run_passes(text, pass_test::list(make_fuse_layer_norm_pass()));
  EXPECT_NE(dump.find("%y = LayerNormalization(%x, %y_scale) {axis=1, epsilon=0.00100000005}"), std::string::npos)
      << dump;
  EXPECT_NE(dump.find("init %y_scale: f32[4,6]"), std::string::npos) << dump;
  compile_and_compare(text, JitLevel::O1, 1e-5);
}

// A gamma of shape [1,1,16] is taken as a view of the normalized shape; a beta read elsewhere too is
// still fused (it is a constant).
TEST(FuseLayerNorm, BroadcastGammaIsReshapedToTheNormalizedDims) {
  const char* text = R"(
    input x: f32[1,3,16]
    init two: f32[] = 2
    init eps: f32[] = 0.00001
    init gamma: f32[1,1,16] = 0.5 2 -1
    mean = ReduceMean(x) {axes=[2]}
    d = Sub(x, mean)
    sq = Pow(d, two)
    var = ReduceMean(sq) {axes=[2]}
    ve = Add(var, eps)
    s = Sqrt(ve)
    n = Div(d, s)
    y = Mul(gamma, n)
    output y
  )";
  const std::string dump = pass_test::run_passes(text, pass_test::list(make_fuse_layer_norm_pass()));
  EXPECT_NE(dump.find("%y = LayerNormalization(%x, %gamma_ln) {axis=2, epsilon=9.99999975e-06}"), std::string::npos)
      << dump;
  compile_and_compare(text, JitLevel::O1, 1e-5);
}

// Near misses: the centred value read elsewhere, a reduction over a leading axis, keepdims off, a
// square that is not of the centred value. Nothing fuses.
TEST(FuseLayerNorm, NearMissesStayDecomposed) {
  const std::string base = R"(
    input x: f32[2,3,8]
    init two: f32[] = 2
    init eps: f32[] = 0.00001
    mean = ReduceMean(x) {axes=[MEAN_AXES]}
    d = Sub(x, mean)
    sq = Pow(SQUARED, two)
    var = ReduceMean(sq) {axes=[-1]}
    ve = Add(var, eps)
    s = Sqrt(ve)
    n = Div(d, s)
    output n
  )";
  auto variant = [&](const std::string& mean_axes, const std::string& squared, const std::string& extra) {
    std::string t = base;
    t.replace(t.find("MEAN_AXES"), 9, mean_axes);
    t.replace(t.find("SQUARED"), 7, squared);
    return t + extra;
  };
  for (const std::string& text : {variant("-1", "d", "output d\n"), variant("1", "d", ""), variant("-1", "x", "")}) {
    SCOPED_TRACE(text);
    const std::string dump = pass_test::run_passes(text, pass_test::list(make_fuse_layer_norm_pass()));
    EXPECT_EQ(dump.find("LayerNormalization"), std::string::npos) << dump;
  }
  std::string keep = variant("-1", "d", "");  // [3,3] broadcasts against [3,3,3]: valid, not a LayerNorm
  keep.replace(keep.find("f32[2,3,8]"), 10, "f32[3,3,3]");
  keep.replace(keep.find("{axes=[-1]}"), 11, "{axes=[-1], keepdims=0}");
  EXPECT_EQ(pass_test::run_passes(keep, pass_test::list(make_fuse_layer_norm_pass())).find("LayerNormalization"),
            std::string::npos);
}

}  // namespace
}  // namespace ms::compiler
