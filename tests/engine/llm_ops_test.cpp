// RMSNormalization, RotaryEmbedding, SwiGLU, TensorScatter, LinearAttention and CausalConvWithState:
// kernels against values computed with onnx.reference (onnx 1.23.2, numpy) for the same inputs, the
// inferred shapes, and the errors for bad ranks, shapes and attributes.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
using test::make_node;
using test::values_of;

// (((i * mul) % mod) - off) / div for i in [0, n): the inputs the expected values were computed from.
Tensor seq(const Shape& shape, int mul = 7, int mod = 11, int off = 5, float div = 4.f) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i) * mul % mod - off) / div;
  return Tensor::from_vector(v, shape);
}

std::vector<Tensor> run(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  auto r = test::run_kernel(node, inputs, opset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r ? *r : std::vector<Tensor>{};
}

std::string error_of(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  auto r = test::run_kernel(node, inputs, opset);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  const std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// --- RMSNormalization -----------------------------------------------------------------------------

TEST(LlmOps, RmsNormalizationValues) {
  const Tensor x = seq({2, 3});
  auto last = run(make_node("RMSNormalization", 2), {x, seq({3}, 3, 5, 1, 2.f)}, 23);
  ASSERT_EQ(last.size(), 1u);
  expect_near(last[0], {0.7537729, 0.6030183, 0, -0.73192, 0.292768, 0});
  // Scale [2,1] broadcasts over X's leading dim too; epsilon 0.1.
  auto bc = run(make_node("RMSNormalization", 2, 1, Attrs{{"axis", int64_t{1}}, {"epsilon", 0.1f}}),
                {x, Tensor::from_vector<float>({0.5f, 2.f}, {2, 1})}, 23);
  expect_near(bc[0], {-0.7042952, 0.2817181, -0.2817181, 2.745485, 0.549097, -1.647291});
  auto all = run(make_node("RMSNormalization", 2, 1, Attrs{{"axis", int64_t{0}}}), {x, seq({2, 3}, 3, 5, 1, 2.f)}, 23);
  expect_near(all[0], {0.7426054, 0.5940843, 0, 2.227816, 0.1485211, 0.4455633});
}

TEST(LlmOps, RmsNormalizationErrors) {
  const Tensor x = seq({2, 3});
  EXPECT_NE(
      error_of(make_node("RMSNormalization", 2, 1, Attrs{{"axis", int64_t{2}}}), {x, seq({3})}, 23).find("'axis'"),
      std::string::npos);
  EXPECT_NE(error_of(make_node("RMSNormalization", 2), {x, seq({4})}, 23).find("'scale'"), std::string::npos);
  EXPECT_NE(error_of(make_node("RMSNormalization", 2, 1, Attrs{{"stash_type", int64_t{7}}}), {x, seq({3})}, 23)
                .find("'stash_type'"),
            std::string::npos);
}

// --- RotaryEmbedding ------------------------------------------------------------------------------

struct RotaryInputs {
  Tensor cos = Tensor::from_vector<float>({0.5403023f, 0.7858872f, 1.f, 0.7858872f, 0.5403023f, 0.944957f}, {3, 2});
  Tensor sin = Tensor::from_vector<float>({-0.841471f, 0.6183698f, 0.f, -0.6183698f, 0.841471f, 0.3271947f}, {3, 2});
  Tensor pos = Tensor::from_vector<int64_t>({2, 0}, {1, 2});
};

TEST(LlmOps, RotaryEmbeddingValues) {
  const RotaryInputs in;
  const Tensor x = seq({1, 2, 2, 4});  // (batch, heads, seq, head_size)
  auto half = run(make_node("RotaryEmbedding", 4), {x, in.cos, in.sin, in.pos}, 23);
  ASSERT_EQ(half.size(), 1u);
  EXPECT_EQ(half[0].shape(), (Shape{1, 2, 2, 4}));
  expect_near(half[0], {-0.2546423, 0.06348509, -1.32199, 1.344794, 0.9765466, -0.5894154, 0.3299345, -0.4637774,
                        -0.3299345, 1.117711, -0.9765466, -0.9358002, 1.32199, -0.5475361, 0.2546423, -0.1127131});
  auto inter =
      run(make_node("RotaryEmbedding", 4, 1, Attrs{{"interleaved", int64_t{1}}}), {x, in.cos, in.sin, in.pos}, 23);
  expect_near(inter[0], {-1.096113, -0.7816876, -0.8814719, 1.017599, -0.4960277, -0.6155944, 0.7858872, 0.6183698,
                         -1.171406, -0.4362443, 0.1727542, -1.262995, -0.1505844, -0.6908866, 0.8277666, 0.9694341});
  // 3-D (batch, seq, heads * head_size) with a partial rotation of 2 of the 4 dims.
  const Tensor cos1 = Tensor::from_vector<float>({0.5403023f, 1.f, 0.5403023f}, {3, 1});
  const Tensor sin1 = Tensor::from_vector<float>({-0.841471f, 0.f, 0.841471f}, {3, 1});
  auto part =
      run(make_node("RotaryEmbedding", 4, 1, Attrs{{"num_heads", int64_t{2}}, {"rotary_embedding_dim", int64_t{2}}}),
          {seq({1, 2, 8}), cos1, sin1, in.pos}, 23);
  expect_near(part[0], {-1.096113, -0.7816876, -0.5, 1.25, 0.7661788, -0.194859, 1, 0, 0.090801, 1.246698, -0.25, -1.25,
                        -0.1505844, -0.6908866, 1.25, 0.25});
}

TEST(LlmOps, RotaryEmbeddingErrors) {
  const RotaryInputs in;
  const Tensor x = seq({1, 2, 2, 4});
  const Tensor bad_pos = Tensor::from_vector<int64_t>({3, 0}, {1, 2});
  EXPECT_NE(error_of(make_node("RotaryEmbedding", 4), {x, in.cos, in.sin, bad_pos}, 23).find("position_ids"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("RotaryEmbedding", 4, 1, Attrs{{"rotary_embedding_dim", int64_t{3}}}),
                     {x, in.cos, in.sin, in.pos}, 23)
                .find("even"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("RotaryEmbedding", 4), {seq({1, 2, 8}), in.cos, in.sin, in.pos}, 23).find("num_heads"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("RotaryEmbedding", 4), {seq({2, 4}), in.cos, in.sin, in.pos}, 23).find("rank 3 or 4"),
            std::string::npos);
}

// --- SwiGLU ---------------------------------------------------------------------------------------

TEST(LlmOps, SwiGluValuesAndErrors) {
  auto y = run(make_node("SwiGLU", 2, 1, Attrs{{"alpha", 0.5f}}), {seq({4}), seq({4}, 3, 5, 2, 2.f)}, 28);
  ASSERT_EQ(y.size(), 1u);
  expect_near(y[0], {0.4358065, 0.1405441, 0.1094559, 0.8141936});
  EXPECT_NE(error_of(make_node("SwiGLU", 2), {seq({4}), seq({2, 2})}, 28).find("identical shapes"), std::string::npos);
}

// --- TensorScatter --------------------------------------------------------------------------------

TEST(LlmOps, TensorScatterCircularAndLinear) {
  const Tensor past = seq({2, 4, 2}), upd = seq({2, 2, 2}, 3, 5, 1, 1.f);
  const Tensor wi = Tensor::from_vector<int64_t>({1, 3}, {2});
  auto y = run(make_node("TensorScatter", 3, 1, Attrs{{"mode", std::string("circular")}, {"axis", int64_t{1}}}),
               {past, upd, wi}, 24);
  ASSERT_EQ(y.size(), 1u);
  expect_near(y[0], {-1.25, 0.5, -1, 2, 0, 3, 1, 0, 2, 0, -0.25, -1.25, 0.5, -0.5, 1, -1});
  // Linear mode: index 3 + 2 rows runs past the 4-row cache.
  EXPECT_NE(error_of(make_node("TensorScatter", 3, 1, Attrs{{"axis", int64_t{1}}}), {past, upd, wi}, 24)
                .find("write_indices[1]"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("TensorScatter", 3, 1, Attrs{{"axis", int64_t{0}}}), {past, upd, wi}, 24).find("'axis'"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("TensorScatter", 3, 1, Attrs{{"mode", std::string("ring")}}), {past, upd, wi}, 24)
                .find("'mode'"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("TensorScatter", 2, 1, Attrs{{"axis", int64_t{1}}}), {past, seq({2, 5, 2})}, 24)
                .find("'update'"),
            std::string::npos);
}

// --- LinearAttention ------------------------------------------------------------------------------

TEST(LlmOps, LinearAttentionGatedDeltaGqa) {
  // B=1, T=2, H_q=2, H_kv=1, d_k=d_v=2; per-head decay, one beta for all heads, a past state.
  const Tensor q = seq({1, 2, 4}), k = seq({1, 2, 2}, 3, 5, 2, 2.f), v = seq({1, 2, 2}, 5, 7, 3, 3.f);
  const Tensor past = seq({1, 1, 2, 2}, 2, 5, 2, 4.f);
  const Tensor decay = Tensor::from_vector<float>({-0.1f, -0.3f}, {1, 2, 1});
  const Tensor beta = Tensor::from_vector<float>({0.5f, 0.8f}, {1, 2, 1});
  const Attrs heads{{"q_num_heads", int64_t{2}}, {"kv_num_heads", int64_t{1}}};
  auto r = run(make_node("LinearAttention", 6, 2, heads), {q, k, v, past, decay, beta}, 27);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(r[1].shape(), (Shape{1, 1, 2, 2}));
  expect_near(r[0], {-0.3303874, 0.3335591, -0.1078306, 0.1102095, -0.02112512, 0.3512258, 0.169001, 0.01862096});
  expect_near(r[1], {0.2390035, 0.02633402, 0.1195017, -0.6534997});
}

TEST(LlmOps, LinearAttentionErrors) {
  const Tensor q = seq({1, 2, 4}), k = seq({1, 2, 2}), v = seq({1, 2, 2});
  const Tensor decay = Tensor::from_vector<float>({-0.1f, -0.3f}, {1, 2, 1});
  Attrs linear{{"q_num_heads", int64_t{2}}, {"kv_num_heads", int64_t{1}}, {"update_rule", std::string("linear")}};
  EXPECT_NE(error_of(make_node("LinearAttention", 5, 2, linear, {3}), {q, k, v, Tensor(), decay}, 27)
                .find("forbids input 'decay'"),
            std::string::npos);
  Attrs odd{{"q_num_heads", int64_t{3}}, {"kv_num_heads", int64_t{2}}, {"update_rule", std::string("linear")}};
  EXPECT_NE(error_of(make_node("LinearAttention", 3, 2, odd), {q, k, v}, 27).find("'q_num_heads'"), std::string::npos);
  EXPECT_NE(error_of(make_node("LinearAttention", 3, 2, linear), {q, seq({1, 2, 3}), v}, 27).find("'key'"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("LinearAttention", 3, 2, linear), {seq({2, 4}), k, v}, 27).find("'query'"),
            std::string::npos);
}

// --- CausalConvWithState --------------------------------------------------------------------------

TEST(LlmOps, CausalConvWithStateValues) {
  const Tensor x = seq({1, 2, 3}), w = seq({2, 1, 3}, 3, 5, 2, 2.f);
  const Tensor bias = Tensor::from_vector<float>({0.25f, -0.5f}, {2});
  const Tensor past = seq({1, 2, 2}, 5, 7, 3, 3.f);
  auto r =
      run(make_node("CausalConvWithState", 4, 2, Attrs{{"activation", std::string("silu")}}), {x, w, bias, past}, 27);
  ASSERT_EQ(r.size(), 2u);
  expect_near(r[0], {1.989698, -0.2784457, 1.761594, -0.2590826, -0.2765116, 1.226362});
  EXPECT_EQ(r[1].shape(), (Shape{1, 2, 2}));
  expect_near(r[1], {0.5, -0.5, 0.25, -0.75});
  auto plain = run(make_node("CausalConvWithState", 2, 2), {x, w}, 27);  // zero state, no bias
  expect_near(plain[0], {0.625, -0.875, 1.75, -1.25, -0.25, 2});
  expect_near(plain[1], {0.5, -0.5, 0.25, -0.75});
}

TEST(LlmOps, CausalConvWithStateErrors) {
  const Tensor x = seq({1, 2, 3});
  EXPECT_NE(error_of(make_node("CausalConvWithState", 2, 2), {x, seq({2, 2, 3})}, 27).find("'weight'"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("CausalConvWithState", 2, 2, Attrs{{"activation", std::string("relu")}}),
                     {x, seq({2, 1, 3})}, 27)
                .find("'activation'"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("CausalConvWithState", 4, 2, {}, {2}), {x, seq({2, 1, 3}), Tensor(), seq({1, 2, 3})}, 27)
                .find("'past_state'"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("CausalConvWithState", 2, 2), {seq({2, 3}), seq({2, 1, 3})}, 27).find("'input'"),
            std::string::npos);
}

TEST(LlmOps, InferPartialShapes) {
  // Unknown batch and length: outputs keep the known dims; present_state gets k - 1 from the weight.
  ir::ValueType x{DType::F32, std::vector<int64_t>{-1, 4, -1}, {"", "", ""}};
  ir::ValueType w{DType::F32, std::vector<int64_t>{4, 1, 5}, {"", "", ""}};
  auto t = test::infer_types(make_node("CausalConvWithState", 2, 2), {x, w}, 27);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(*(*t)[1].dims, (std::vector<int64_t>{-1, 4, 4}));
  ir::ValueType q{DType::F16, std::vector<int64_t>{2, -1, 64}, {"", "", ""}};
  ir::ValueType kv{DType::F16, std::vector<int64_t>{2, -1, 32}, {"", "", ""}};
  auto la = test::infer_types(
      make_node(
          "LinearAttention", 3, 2,
          Attrs{{"q_num_heads", int64_t{8}}, {"kv_num_heads", int64_t{4}}, {"update_rule", std::string("linear")}}),
      {q, kv, kv}, 27);
  ASSERT_TRUE(la.has_value()) << la.status().message();
  EXPECT_EQ(*(*la)[0].dims, (std::vector<int64_t>{2, -1, 64}));
  EXPECT_EQ(*(*la)[1].dims, (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_EQ((*la)[1].dtype, DType::F16);
}

}  // namespace
}  // namespace ms
