// The one oneDNN conv path of the CPU backend: a FusedConv without post-ops computes the Conv, a
// FusedConv's post-ops and residual run inside oneDNN in f32 and in bf16, and the blocked layouts
// a FusedConv asks for give the plain conv's result.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/fused.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

ir::Node fused_conv(std::map<std::string, ir::Attribute> attrs, size_t inputs, const std::vector<std::string>& post) {
  if (!post.empty()) {
    attrs["post_ops"] = post;
    attrs["post_alphas"] = std::vector<float>(post.size(), 0.f);
    attrs["post_betas"] = std::vector<float>(post.size(), 0.f);
  }
  ir::Node n = make_node("FusedConv", inputs, 1, std::move(attrs));
  n.domain = ops::kFusedDomain;
  return n;
}

void expect_near(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(value_at(a, i), value_at(b, i), tol) << "element " << i;
}

TEST(ConvPath, FusedConvWithoutPostOpsIsTheConv) {
  const std::map<std::string, ir::Attribute> attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                                   {"strides", std::vector<int64_t>{2, 2}}};
  const std::vector<Tensor> in{random_f32({2, 16, 15, 15}, 1), random_f32({32, 16, 3, 3}, 2), random_f32({32}, 3)};
  auto conv = run_kernel_full(make_node("Conv", 3, 1, attrs), in);
  ASSERT_TRUE(conv) << conv.status().message();
  auto fused = run_kernel_full(fused_conv(attrs, 3, {}), in);
  ASSERT_TRUE(fused) << fused.status().message();
  EXPECT_EQ(conv->impl.rfind("onednn:", 0), 0u) << conv->impl;
  EXPECT_EQ(fused->impl.rfind("fused:onednn:", 0), 0u) << fused->impl;
  expect_near(fused->outputs[0], conv->outputs[0], 1e-4);
}

TEST(ConvPath, FusedConvPostOpsAndResidualMatchTheConvThenTheTail) {
  const std::map<std::string, ir::Attribute> attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{2}}};
  const std::vector<Tensor> in{random_f32({1, 32, 14, 14}, 4), random_f32({32, 16, 3, 3}, 5), random_f32({32}, 6)};
  const Tensor r = random_f32({1, 32, 14, 14}, 7);
  auto conv = run_kernel(make_node("Conv", 3, 1, attrs), in);
  ASSERT_TRUE(conv) << conv.status().message();
  Tensor want = (*conv)[0].clone();
  for (int64_t i = 0; i < want.numel(); ++i) {
    want.data<float>()[i] = std::max(want.data<float>()[i] + r.data<float>()[i], 0.f);
  }
  auto fused = run_kernel_full(fused_conv(attrs, 4, {"Add", "Relu"}), {in[0], in[1], in[2], r});
  ASSERT_TRUE(fused) << fused.status().message();
  EXPECT_EQ(fused->impl.rfind("fused:onednn:", 0), 0u) << fused->impl;
  expect_near(fused->outputs[0], want, 1e-4);
}

TEST(ConvPath, Bf16FusedConvRunsOneDnnWithF32Accumulation) {
  const std::map<std::string, ir::Attribute> attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const std::vector<Tensor> in{random_f32({1, 16, 12, 12}, 8), random_f32({32, 16, 3, 3}, 9), random_f32({32}, 10),
                               random_f32({1, 32, 12, 12}, 11)};
  std::vector<Tensor> low{to_bf16(in[0]), to_bf16(in[1]), to_bf16(in[2]), to_bf16(in[3])}, rounded;
  for (size_t i = 0; i < low.size(); ++i) {
    Tensor t = Tensor::empty(DType::F32, in[i].shape());
    for (int64_t j = 0; j < t.numel(); ++j) t.data<float>()[j] = static_cast<float>(value_at(low[i], j));
    rounded.push_back(t);
  }
  const ir::Node node = fused_conv(attrs, 4, {"Add", "Relu"});
  auto ref = run_kernel(node, rounded);
  ASSERT_TRUE(ref) << ref.status().message();
  auto got = run_kernel_full(node, low);
  ASSERT_TRUE(got) << got.status().message();
  ASSERT_EQ(got->outputs[0].dtype(), DType::BF16);
  // oneDNN 2.6 has bf16 convs on AVX-512 only; on AVX2 the fused conv takes its reference loop.
  const bool onednn_bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (onednn_bf16) EXPECT_EQ(got->impl.rfind("fused:onednn:", 0), 0u) << got->impl;
  double scale = 0;
  for (int64_t i = 0; i < (*ref)[0].numel(); ++i) scale = std::max(scale, std::abs(value_at((*ref)[0], i)));
  expect_near(got->outputs[0], (*ref)[0], 1.5e-2 * scale + 1e-3);
}

TEST(ConvPath, PlainAndBlockedLayoutsAgree) {
  const std::vector<Tensor> in{random_f32({1, 16, 10, 10}, 12), random_f32({16, 16, 1, 1}, 13)};
  auto plain = run_kernel_full(fused_conv({{"activation_layout", std::string("plain")}}, 2, {"Relu"}), in);
  auto blocked = run_kernel_full(fused_conv({{"activation_layout", std::string("blocked")}}, 2, {"Relu"}), in);
  ASSERT_TRUE(plain) << plain.status().message();
  ASSERT_TRUE(blocked) << blocked.status().message();
  EXPECT_EQ(plain->impl.rfind("fused:onednn:", 0), 0u) << plain->impl;
  EXPECT_EQ(blocked->impl.rfind("fused:onednn:", 0), 0u) << blocked->impl;
  expect_near(blocked->outputs[0], plain->outputs[0], 1e-4);
}

}  // namespace
}  // namespace ms::test
