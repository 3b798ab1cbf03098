// Attention (opset 23+) and ai.onnx.preview FlexAttention: values against onnx/reference/ops/op_attention.py (the
// expected numbers were computed with the reference in the onnx 1.23 venv), shape inference, and the error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using test::infer_types;
using test::make_node;
using test::run_kernel;
using test::values_of;
using Attrs = std::map<std::string, ir::Attribute>;
using V = std::vector<double>;

// (i * step mod 1) + base, as the reference script built its inputs.
Tensor lin(Shape shape, double step, double base) {
  Tensor t = Tensor::empty(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(std::fmod(static_cast<double>(i) * step, 1.0) + base);
  return t;
}

void expect_near(const Tensor& t, const V& want, double tol = 1e-5) {
  const V got = values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

std::string error_of(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 23) {
  auto r = run_kernel(n, in, opset);
  return r.has_value() ? std::string() : r.status().message();
}

TEST(AttentionOps, FourDimensionalDefaultScale) {
  const ir::Node n = make_node("Attention", 3);
  auto r =
      run_kernel(n, {lin({1, 1, 2, 2}, 0.37, -0.5), lin({1, 1, 3, 2}, 0.61, -0.3), lin({1, 1, 3, 2}, 0.23, 0.1)}, 23);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 1, 2, 2}));
  expect_near((*r)[0], {0.5438050031661987, 0.45285969972610474, 0.5966177582740784, 0.43783822655677795});
}

// 3-D inputs, two query heads sharing one kv head, a past cache and the bottom-right causal mask.
TEST(AttentionOps, ThreeDimensionalGqaCausalWithPast) {
  const ir::Node n =
      make_node("Attention", 6, 4,
                Attrs{{"is_causal", int64_t{1}}, {"q_num_heads", int64_t{2}}, {"kv_num_heads", int64_t{1}}}, {3});
  auto r = run_kernel(n,
                      {lin({1, 2, 4}, 0.37, -0.5), lin({1, 1, 2}, 0.61, -0.3), lin({1, 1, 2}, 0.23, 0.1), Tensor(),
                       lin({1, 1, 2, 2}, 0.13, -0.2), lin({1, 1, 2, 2}, 0.71, -0.4)},
                      23);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 2, 4}));
  expect_near((*r)[0], {-0.09759233891963959, 0.1382434070110321, -0.10216663032770157, 0.11878703534603119,
                        -0.08496905863285065, 0.12209971994161606, -0.09173817932605743, 0.13090477883815765});
  EXPECT_EQ((*r)[1].shape(), (Shape{1, 1, 3, 2}));
  expect_near((*r)[1], {-0.2, -0.07, 0.06, 0.19, -0.3, 0.31});
  EXPECT_EQ((*r)[3].shape(), (Shape{1, 2, 2, 3}));
  expect_near((*r)[3], {0.07714535295963287, -0.038678742945194244, 0.0775696188211441, -0.01449569035321474,
                        0.046174075454473495, 0.08096373826265335, -0.01463711354881525, -0.042214274406433105,
                        -0.13640090823173523, 0.035143207758665085, 0.00021213309082668275, 0.07912525534629822});
}

// A bool mask whose second row masks every key: that row of Y and of the mode-3 probabilities is 0.
TEST(AttentionOps, FullyMaskedRowIsZeroWithSoftcapAndMode3) {
  const ir::Node n = make_node("Attention", 4, 4, Attrs{{"softcap", 0.5f}, {"qk_matmul_output_mode", int64_t{3}}});
  Tensor mask = Tensor::empty(DType::Bool, {2, 3});
  const bool bits[] = {true, false, true, false, false, false};
  for (int64_t i = 0; i < 6; ++i) mask.data<bool>()[i] = bits[i];
  auto r = run_kernel(
      n, {lin({1, 1, 2, 2}, 0.37, -0.5), lin({1, 1, 3, 2}, 0.61, -0.3), lin({1, 1, 3, 2}, 0.23, 0.1), mask}, 23);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  expect_near((*r)[0], {0.5362288355827332, 0.2920670509338379, 0.0, 0.0});
  expect_near((*r)[3], {0.5258381962776184, 0.0, 0.4741618037223816, 0.0, 0.0, 0.0});
}

// bf16: the reference rounds every step to bf16; the kernel reproduces it exactly.
TEST(AttentionOps, Bf16CausalMatchesReferenceRounding) {
  const ir::Node n = make_node("Attention", 3, 1, Attrs{{"is_causal", int64_t{1}}});
  auto r = run_kernel(n,
                      {test::to_bf16(lin({1, 1, 3, 4}, 0.37, 0.0)), test::to_bf16(lin({1, 1, 3, 4}, 0.61, 0.0)),
                       test::to_bf16(lin({1, 1, 3, 4}, 0.23, 0.0))},
                      23);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ((*r)[0].dtype(), DType::BF16);
  expect_near((*r)[0],
              {0.0, 0.23046875, 0.4609375, 0.69140625, 0.404296875, 0.1953125, 0.42578125, 0.65625, 0.64453125,
               0.1416015625, 0.373046875, 0.6015625},
              0.0);
}

// Opset 25: per-batch valid lengths (external cache) with a causal left window of 1.
TEST(AttentionOps, NonpadLocalWindowOpset25) {
  const ir::Node n =
      make_node("Attention", 7, 1, Attrs{{"is_causal", int64_t{1}}, {"left_window_size", int64_t{1}}}, {3, 4, 5});
  const Tensor nonpad = Tensor::from_vector<int64_t>({3, 4}, {2});
  auto r = run_kernel(n,
                      {lin({2, 1, 2, 2}, 0.37, -0.5), lin({2, 1, 4, 2}, 0.61, -0.3), lin({2, 1, 4, 2}, 0.23, 0.1),
                       Tensor(), Tensor(), Tensor(), nonpad},
                      25);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  expect_near((*r)[0], {0.3187384605407715, 0.5487384796142578, 0.8188770413398743, 0.48610079288482666,
                        0.6359024047851562, 0.8659023642539978, 0.6025724411010742, 0.8325724005699158});
}

TEST(AttentionOps, InfersShapes) {
  const ir::Node n =
      make_node("Attention", 6, 4, Attrs{{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}}, {3});
  const ir::ValueType q{DType::F16, std::vector<int64_t>{2, 5, 32}, {"", "", ""}};
  const ir::ValueType k{DType::F16, std::vector<int64_t>{2, 3, 16}, {"", "", ""}};
  const ir::ValueType v{DType::F16, std::vector<int64_t>{2, 3, 12}, {"", "", ""}};
  const ir::ValueType pk{DType::F16, std::vector<int64_t>{2, 2, 7, 8}, {"", "", "", ""}};
  const ir::ValueType pv{DType::F16, std::vector<int64_t>{2, 2, 7, 6}, {"", "", "", ""}};
  auto r = infer_types(n, {q, k, v, ir::ValueType{}, pk, pv}, 23);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{2, 5, 24}));
  EXPECT_EQ(*(*r)[1].dims, (std::vector<int64_t>{2, 2, 10, 8}));
  EXPECT_EQ(*(*r)[2].dims, (std::vector<int64_t>{2, 2, 10, 6}));
  EXPECT_EQ(*(*r)[3].dims, (std::vector<int64_t>{2, 4, 5, 10}));
  EXPECT_EQ((*r)[0].dtype, DType::F16);
}

TEST(AttentionOps, ErrorsNameTheProblem) {
  const Tensor q = lin({1, 3, 2, 4}, 0.37, 0.0), k = lin({1, 2, 5, 4}, 0.61, 0.0), v = lin({1, 2, 5, 4}, 0.23, 0.0);
  auto has = [](const std::string& e, const char* what) { return e.find(what) != std::string::npos; };
  std::string e = error_of(make_node("Attention", 3), {lin({3, 4}, 0.1, 0), k, v});
  EXPECT_TRUE(has(e, "rank 3 or 4")) << e;
  e = error_of(make_node("Attention", 3), {q, k, v});  // 3 query heads over 2 kv heads
  EXPECT_TRUE(has(e, "not a multiple")) << e;
  e = error_of(make_node("Attention", 3), {lin({1, 2, 8}, 0.1, 0), lin({1, 2, 8}, 0.1, 0), lin({1, 2, 8}, 0.1, 0)});
  EXPECT_TRUE(has(e, "q_num_heads")) << e;
  const Tensor k2 = lin({1, 3, 5, 4}, 0.61, 0.0), v2 = lin({1, 3, 5, 4}, 0.23, 0.0);
  e = error_of(make_node("Attention", 3, 1, Attrs{{"qk_matmul_output_mode", int64_t{5}}}), {q, k2, v2});
  EXPECT_TRUE(has(e, "qk_matmul_output_mode")) << e;
  e = error_of(make_node("Attention", 3, 1, Attrs{{"softmax_precision", int64_t{7}}}), {q, k2, v2});
  EXPECT_TRUE(has(e, "softmax_precision")) << e;
  e = error_of(make_node("Attention", 3, 1, Attrs{{"left_window_size", int64_t{2}}}), {q, k2, v2}, 24);
  EXPECT_TRUE(has(e, "left_window_size")) << e;
  e = error_of(make_node("Attention", 5, 1, {}, {3}), {q, k2, v2, Tensor(), lin({1, 3, 2, 4}, 0.1, 0)});
  EXPECT_TRUE(has(e, "past_key and past_value")) << e;
  e = error_of(make_node("Attention", 4), {q, k2, v2, lin({2, 7}, 0.1, 0)});
  EXPECT_TRUE(has(e, "attn_mask")) << e;
}

// Without score_mod / prob_mod, FlexAttention is scaled dot-product attention (same numbers as above).
TEST(AttentionOps, FlexAttentionPlainAndErrors) {
  ir::Node n = make_node("FlexAttention", 3);
  n.domain = "ai.onnx.preview";
  auto r =
      run_kernel(n, {lin({1, 1, 2, 2}, 0.37, -0.5), lin({1, 1, 3, 2}, 0.61, -0.3), lin({1, 1, 3, 2}, 0.23, 0.1)}, 1);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  expect_near((*r)[0], {0.5438050031661987, 0.45285969972610474, 0.5966177582740784, 0.43783822655677795});
  const std::string e =
      error_of(n, {lin({1, 2, 2}, 0.37, -0.5), lin({1, 3, 2}, 0.61, -0.3), lin({1, 3, 2}, 0.23, 0.1)}, 1);
  EXPECT_NE(e.find("rank 4"), std::string::npos) << e;
  n.attrs["softmax_precision"] = int64_t{3};
  const std::string e2 =
      error_of(n, {lin({1, 1, 2, 2}, 0.37, -0.5), lin({1, 1, 3, 2}, 0.61, -0.3), lin({1, 1, 3, 2}, 0.23, 0.1)}, 1);
  EXPECT_NE(e2.find("softmax_precision"), std::string::npos) << e2;
}

}  // namespace
}  // namespace ms
