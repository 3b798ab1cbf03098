// fuse-attention: the attention forms PyTorch and hand-written models export become one
// FusedAttention that reads the head transposes in place; near misses stay as they are. Values
// against eager execution of the original graph; the ONNX Attention op's fast case against a
// direct computation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// torchvision's ViT self-attention at batch 1 (opset 13 export): heads split by Transpose from
// [S, H, D], Q divided by sqrt(D), Kᵀ by one Transpose, heads merged by the Transpose after.
const char* kVitAttention = R"(
  input q: f32[7,3,8]
  input k: f32[7,3,8]
  input v: f32[7,3,8]
  init c: f32[] = 2.828427
  qt = Transpose(q) {perm=[1,0,2]}
  qs = Div(qt, c)
  kt = Transpose(k) {perm=[1,2,0]}
  vt = Transpose(v) {perm=[1,0,2]}
  s = MatMul(qs, kt)
  p = Softmax(s) {axis=-1}
  o = MatMul(p, vt)
  y = Transpose(o) {perm=[1,0,2]}
  output y
)";

TEST(FuseAttention, VitExportBecomesOneFusedAttentionReadingTheTransposesInPlace) {
  const std::string dump = pass_test::run_passes(kVitAttention, pass_test::list(make_fuse_attention_pass()));
  EXPECT_EQ(count_of(dump, "FusedAttention(%q, %k, %v)"), 1u) << dump;
  EXPECT_NE(dump.find("q_layout=\"shd\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("k_layout=\"shd\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("y_layout=\"shd\""), std::string::npos) << dump;
  EXPECT_EQ(count_of(dump, "Softmax"), 0u) << dump;
  EXPECT_EQ(count_of(dump, "MatMul"), 0u) << dump;
  Compiled c = compile_and_compare(kVitAttention, JitLevel::O2, 1e-5);
  EXPECT_EQ(count_of(c.dump, "FusedAttention"), 1u) << c.dump;
  EXPECT_EQ(count_of(c.dump, "Transpose"), 0u) << c.dump;  // the head transposes were read in place
}

// 4-D [B, H, S, D] with the scale after the product, an additive mask broadcast over batch and
// heads, Kᵀ given directly (no Transpose to read through) and 20 keys for 5 queries.
const char* kMaskedAttention = R"(
  input q: f32[2,3,5,4]
  input kt: f32[2,3,4,20]
  input v: f32[2,3,20,6]
  input mask: f32[5,20]
  init c: f32[] = 0.5
  s = MatMul(q, kt)
  ss = Mul(c, s)
  sm = Add(ss, mask)
  p = Softmax(sm) {axis=3}
  y = MatMul(p, v)
  output y
)";

// GPT-2's causal masked_fill: Where(constant bool, -inf, scores); the masked places are the
// upper triangle. Also the other spelling, Where(keep, scores, -inf).
const char* kWhereMaskedAttention = R"(
  input q: f32[1,2,3,4]
  input q2: f32[1,2,3,4]
  input kt: f32[1,2,4,3]
  input v: f32[1,2,3,4]
  init masked: bool[1,1,3,3] = 0 1 1 0 0 1 0 0 0
  init keep: bool[1,1,3,3] = 1 0 0 1 1 0 1 1 1
  init ninf: f32[] = -inf
  init c: f32[] = 0.5
  s = MatMul(q, kt)
  ss = Mul(s, c)
  w = Where(masked, ninf, ss)
  p = Softmax(w) {axis=-1}
  y = MatMul(p, v)
  s2 = MatMul(q2, kt)
  w2 = Where(keep, s2, ninf)
  p2 = Softmax(w2) {axis=-1}
  y2 = MatMul(p2, v)
  output y, y2
)";

TEST(FuseAttention, WhereMaskedFillBecomesAnAdditiveMask) {
  const std::string dump = pass_test::run_passes(kWhereMaskedAttention, pass_test::list(make_fuse_attention_pass()));
  EXPECT_EQ(count_of(dump, "FusedAttention(%q, %kt, %v, %masked_additive)"), 1u) << dump;
  EXPECT_EQ(count_of(dump, "FusedAttention(%q2, %kt, %v, %keep_additive)"), 1u) << dump;
  EXPECT_EQ(count_of(dump, "Where"), 0u) << dump;
  Compiled c = compile_and_compare(kWhereMaskedAttention, JitLevel::O2, 1e-5);
  EXPECT_EQ(count_of(c.dump, "FusedAttention"), 2u) << c.dump;
}

TEST(FuseAttention, MaskScaleAndTransposedKeys) {
  const std::string dump = pass_test::run_passes(kMaskedAttention, pass_test::list(make_fuse_attention_pass()));
  EXPECT_EQ(count_of(dump, "FusedAttention(%q, %kt, %v, %mask)"), 1u) << dump;
  EXPECT_NE(dump.find("k_layout=\"bhds\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("scale=0.5"), std::string::npos) << dump;
  Compiled c = compile_and_compare(kMaskedAttention, JitLevel::O2, 1e-5);
  EXPECT_EQ(count_of(c.dump, "FusedAttention"), 1u) << c.dump;
}

// A long key sequence: 4 MiB of scores hold fewer query rows than there are, so the kernel works
// block by block.
TEST(FuseAttention, LongSequencesRunInBlocksOfQueryRows) {
  const char* text = R"(
    input q: f32[1,2,600,8]
    input k: f32[1,2,1000,8]
    input v: f32[1,2,1000,8]
    kt = Transpose(k) {perm=[0,1,3,2]}
    s = MatMul(q, kt)
    p = Softmax(s) {axis=-1}
    y = MatMul(p, v)
    output y
  )";
  const std::string dump = pass_test::run_passes(text, pass_test::list(make_fuse_attention_pass()));
  EXPECT_NE(dump.find("k_layout=\"bhsd\""), std::string::npos) << dump;
  Compiled c = compile_and_compare(text, JitLevel::O2, 1e-5);
  EXPECT_EQ(count_of(c.dump, "FusedAttention"), 1u) << c.dump;
}

// torchvision's Swin-T shifted-window attention: a relative-position bias added to the scores, then a
// per-window mask added over the scores split as [images, windows, H, S, S] and merged back, and a
// Dropout of ratio 0 exported in training mode. Both masks fold into one constant.
const char* kSwinAttention = R"(
  input q: f32[4,2,5,3]
  input k: f32[4,2,5,3]
  input v: f32[4,2,5,3]
  init c: f32[] = 0.5
  init bias: f32[1,2,5,5] = -0.52 0.09 -0.26 0.21 0.25 -0.87 -0.97 0.67 -0.48 -0.53 0.99 -0.06 0.67 -0.05 0.28 -0.70 0.27 0.74 0.05 0.48 0.34 -0.87 0.52 0.18 -0.40 -0.94 0.73 -0.05 0.44 0.76 0.43 0.84 -0.21 0.60 -0.11 0.87 0.76 -0.81 -0.73 -0.57 0.93 -0.13 0.25 -0.40 0.01 -0.23 -0.30 0.17 0.17 0.81
  init windows: f32[2,1,5,5] = 0 0 0 0 0 0 0 0 0 0 -100 -100 0 0 0 -100 0 0 0 -100 -100 0 0 0 -100 0 0 0 0 0 0 0 0 0 0 -100 0 0 0 0 0 0 0 0 -100 -100 -100 -100 0 0
  init split: i64[5] = 2 2 2 5 5
  init merged: i64[4] = 4 2 5 5
  init zero: f32[] = 0
  init yes: bool[] = 1
  qs = Mul(q, c)
  kt = Transpose(k) {perm=[0,1,3,2]}
  s = MatMul(qs, kt)
  sb = Add(s, bias)
  s5 = Reshape(sb, split)
  sw = Add(s5, windows)
  s4 = Reshape(sw, merged)
  p = Softmax(s4) {axis=-1}
  pd = Dropout(p, zero, yes)
  y = MatMul(pd, v)
  output y
)";

TEST(FuseAttention, SwinShiftedWindowMasksFoldIntoOneConstant) {
  const std::string dump = pass_test::run_passes(
      kSwinAttention, pass_test::list(make_simplify_pass(), make_fuse_attention_pass(), make_dce_pass()));
  EXPECT_EQ(count_of(dump, "FusedAttention(%q, %k, %v, %windows_windows)"), 1u) << dump;
  EXPECT_EQ(count_of(dump, "Reshape"), 0u) << dump;
  EXPECT_EQ(count_of(dump, "Add"), 0u) << dump;
  Compiled c = compile_and_compare(kSwinAttention, JitLevel::O2, 1e-5);
  EXPECT_EQ(count_of(c.dump, "FusedAttention"), 1u) << c.dump;
  EXPECT_EQ(count_of(c.dump, "Dropout"), 0u) << c.dump;
}

TEST(FuseAttention, NearMissesStayAsTheyAre) {
  // Softmax over another axis.
  const char* other_axis = R"(
    input q: f32[3,4,4]
    input kt: f32[3,4,4]
    input v: f32[3,4,4]
    s = MatMul(q, kt)
    p = Softmax(s) {axis=1}
    y = MatMul(p, v)
    output y
  )";
  EXPECT_EQ(count_of(pass_test::run_passes(other_axis, pass_test::list(make_fuse_attention_pass())), "FusedAttention"),
            0u);
  // The probabilities are also an output.
  const char* probs_read = R"(
    input q: f32[3,4,4]
    input kt: f32[3,4,4]
    input v: f32[3,4,4]
    s = MatMul(q, kt)
    p = Softmax(s) {axis=-1}
    y = MatMul(p, v)
    output y, p
  )";
  EXPECT_EQ(count_of(pass_test::run_passes(probs_read, pass_test::list(make_fuse_attention_pass())), "FusedAttention"),
            0u);
  // A mask that broadcasts along the keys (last dim 1).
  const char* key_broadcast = R"(
    input q: f32[3,4,4]
    input kt: f32[3,4,6]
    input v: f32[3,6,4]
    input m: f32[4,1]
    s = MatMul(q, kt)
    sm = Add(s, m)
    p = Softmax(sm) {axis=-1}
    y = MatMul(p, v)
    output y
  )";
  EXPECT_EQ(
      count_of(pass_test::run_passes(key_broadcast, pass_test::list(make_fuse_attention_pass())), "FusedAttention"),
      0u);
  Compiled c = compile_and_compare(key_broadcast, JitLevel::O2, 1e-5);
  EXPECT_EQ(count_of(c.dump, "FusedAttention"), 0u) << c.dump;
  // A window mask that is an input, not a constant.
  std::string input_windows = kSwinAttention;
  input_windows.replace(input_windows.find("init windows"), 12, "input windows");
  input_windows.replace(input_windows.find(" = ", input_windows.find("input windows")),
                        input_windows.find('\n', input_windows.find("input windows")) -
                            input_windows.find(" = ", input_windows.find("input windows")),
                        "");
  EXPECT_EQ(
      count_of(pass_test::run_passes(input_windows, pass_test::list(make_simplify_pass(), make_fuse_attention_pass())),
               "FusedAttention"),
      0u)
      << input_windows;
}

// softmax(scale · Q Kᵀ + mask) V over [B, H, S, D] in double, causal when asked.
std::vector<double> direct_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, float scale,
                                     bool causal) {
  const int64_t B = q.dim(0), H = q.dim(1), S = q.dim(2), D = q.dim(3), T = k.dim(2), Dv = v.dim(3);
  std::vector<double> y(static_cast<size_t>(B * H * S * Dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < D; ++e)
            acc += q.data<float>()[((b * H + h) * S + i) * D + e] * k.data<float>()[((b * H + h) * T + j) * D + e];
          acc *= scale;
          if (mask) acc += mask->data<float>()[i * T + j];
          if (causal && j > i) acc = -INFINITY;
          s[static_cast<size_t>(j)] = acc;
          mx = std::max(mx, acc);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            acc += s[static_cast<size_t>(j)] / sum * v.data<float>()[((b * H + h) * T + j) * Dv + e];
          y[static_cast<size_t>(((b * H + h) * S + i) * Dv + e)] = acc;
        }
      }
  return y;
}

// The ONNX Attention op (opset 23, 4-D, f32, mask, causal) runs the shared kernel and agrees with a
// direct computation; its kernel names the oneDNN matmul it used.
TEST(FuseAttention, OnnxAttentionSharesTheKernel) {
  for (const bool causal : {false, true}) {
    ir::Graph g = testing::parse_graph(std::string(R"(
      input q: f32[2,3,9,8]
      input k: f32[2,3,11,8]
      input v: f32[2,3,11,5]
      input m: f32[9,11]
      y = Attention(q, k, v, m) {scale=0.3, is_causal=)") +
                                       (causal ? "1" : "0") + R"(}
      output y
    )");
    g.opsets[""] = 23;
    auto be = backends::create_cpu_backend(2);
    runtime::EagerExecutor eager(g, *be);
    const runtime::TensorMap in = testing::inputs_of(g, 7);
    auto got = eager.run(in);
    ASSERT_TRUE(got) << got.status().message();
    const std::vector<double> want = direct_attention(in.at("q"), in.at("k"), in.at("v"), &in.at("m"), 0.3f, causal);
    ASSERT_EQ((*got)[0].numel(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR((*got)[0].data<float>()[i], want[i], 1e-5) << "causal " << causal << " element " << i;
    }
  }
}

}  // namespace
}  // namespace ms::compiler
