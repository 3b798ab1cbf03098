// The one oneDNN conv path of the CPU backend: a FusedConv without post-ops computes the Conv, a
// FusedConv's post-ops and residual run inside oneDNN in f32 and in bf16, and the blocked layouts
// a FusedConv asks for give the plain conv's result.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

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

// The conv kernel keeps its plan and primitive per node (by address) between calls. One node object
// whose attributes, post-ops and input shapes change between calls (as an eager op's node made at the
// same place each time) must never run on what it kept for the earlier call: each result equals the
// same conv run by a node of its own.
TEST(ConvPath, AKeptPlanIsNeverReusedForAChangedCall) {
  ir::Node n = fused_conv({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 3, {});
  const Tensor w = random_f32({8, 4, 3, 3}, 11), b = random_f32({8}, 12);
  const Tensor x1 = random_f32({1, 4, 9, 9}, 13), x2 = random_f32({1, 4, 12, 7}, 14);
  const auto check = [&](const Tensor& x, const char* what) {
    const ir::Node fresh = n;  // its own node: nothing kept for it yet
    auto kept = run_kernel(n, {x, w, b});
    auto want = run_kernel(fresh, {x, w, b});
    ASSERT_TRUE(kept && want) << what;
    expect_near((*kept)[0], (*want)[0], 1e-5);
  };
  check(x1, "first call");
  check(x1, "the same call again");
  check(random_f32({1, 4, 9, 9}, 15), "new input values at the same shape");
  check(x2, "another input shape");
  n.attrs["strides"] = std::vector<int64_t>{2, 2};
  check(x2, "strides 2");
  n.attrs["pads"] = std::vector<int64_t>{0, 0, 0, 0};
  check(x2, "no padding");
  n.attrs["post_ops"] = std::vector<std::string>{"Relu"};
  n.attrs["post_alphas"] = std::vector<float>{0.f};
  n.attrs["post_betas"] = std::vector<float>{0.f};
  check(x2, "a Relu post-op");
  auto relu = run_kernel(n, {x2, w, b});
  ASSERT_TRUE(relu);
  for (int64_t i = 0; i < (*relu)[0].numel(); ++i) ASSERT_GE((*relu)[0].data<float>()[i], 0.f) << i;
}

// A node's calls reuse the memory objects of its first call, pointed at each call's buffers; calls
// of one node on two threads at once (sessions sharing a compiled graph) must each get their own
// result, with and without the residual and a reorder at the op's boundary (plain activations on the
// blocked primitive).
TEST(ConvPath, OneNodeCalledFromTwoThreadsAtOnceGivesEachItsOwnResult) {
  const ir::Node n = fused_conv(
      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"activation_layout", std::string("blocked")}}, 4, {"Add", "Relu"});
  const Tensor w = random_f32({16, 16, 3, 3}, 21), b = random_f32({16}, 22);
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Tensor> want;
  for (uint32_t k = 0; k < 4; ++k) {
    inputs.push_back({random_f32({1, 16, 10, 10}, 30 + k), w, b, random_f32({1, 16, 10, 10}, 40 + k)});
    const ir::Node own = n;
    auto r = run_kernel(own, inputs.back());
    ASSERT_TRUE(r) << r.status().message();
    want.push_back((*r)[0]);
  }
  std::atomic<int> wrong{0};
  auto work = [&](uint32_t first) {
    for (uint32_t i = 0; i < 40; ++i) {
      const size_t k = (first + i) % inputs.size();
      auto r = run_kernel(n, inputs[k]);
      if (!r) {
        ++wrong;
        continue;
      }
      for (int64_t e = 0; e < want[k].numel(); ++e)
        if (std::abs(value_at((*r)[0], e) - value_at(want[k], e)) > 1e-4) {
          ++wrong;
          break;
        }
    }
  };
  std::thread t1(work, 0), t2(work, 1);
  t1.join();
  t2.join();
  EXPECT_EQ(wrong.load(), 0);
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
  if (onednn_bf16) {
    EXPECT_EQ(got->impl.rfind("fused:onednn:", 0), 0u) << got->impl;
  }
  double scale = 0;
  for (int64_t i = 0; i < (*ref)[0].numel(); ++i) scale = std::max(scale, std::abs(value_at((*ref)[0], i)));
  expect_near(got->outputs[0], (*ref)[0], 1.5e-2 * scale + 1e-3);
}

// Swish and Sigmoid after a depthwise conv's last Add run in our loop over the result, not in
// oneDNN's injector (slower there): the primitive stops before the first of them (impl +loop-tail);
// other convs keep them in the primitive, applied while the result is in cache. Either way the
// result is the conv, then each post-op, in double.
TEST(ConvPath, SwishAndSigmoidAfterTheLastAddRunInOurLoopOnDepthwiseConvs) {
  struct Case {
    std::map<std::string, ir::Attribute> attrs;
    Shape w;
    std::vector<std::string> post;
    std::vector<float> alphas, betas;
    bool loop_tail;
  };
  const std::vector<Case> cases{
      // EfficientNet's depthwise 3x3 with Clip then SiLU, blocked.
      {{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
        {"group", int64_t{32}},
        {"activation_layout", std::string("blocked")}},
       {32, 1, 3, 3},
       {"Clip", "Swish"},
       {-2.f, 1.f},
       {2.f, 0.f},
       true},
      // A 1x1 with the residual, then Sigmoid: all in the primitive.
      {{{"activation_layout", std::string("blocked")}},
       {32, 32, 1, 1},
       {"Add", "Sigmoid"},
       {0.f, 0.f},
       {0.f, 0.f},
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.post.back());
    auto attrs = c.attrs;
    attrs["post_ops"] = c.post;
    attrs["post_alphas"] = c.alphas;
    attrs["post_betas"] = c.betas;
    const bool add = c.post.front() == "Add";
    ir::Node n = make_node("FusedConv", add ? 4 : 3, 1, attrs);
    n.domain = ops::kFusedDomain;
    const std::vector<Tensor> in{random_f32({1, 32, 12, 12}, 21), random_f32(c.w, 22), random_f32({32}, 23)};
    const Tensor r = random_f32({1, 32, 12, 12}, 24);
    auto conv = run_kernel(make_node("Conv", 3, 1, c.attrs), in);
    ASSERT_TRUE(conv) << conv.status().message();
    Tensor want = (*conv)[0].clone();
    for (int64_t i = 0; i < want.numel(); ++i) {
      double v = want.data<float>()[i];
      for (size_t k = 0; k < c.post.size(); ++k) {
        const std::string& p = c.post[k];
        if (p == "Add") v += r.data<float>()[i];
        if (p == "Clip") v = std::min<double>(std::max<double>(v, c.alphas[k]), c.betas[k]);
        if (p == "Swish") v = v / (1.0 + std::exp(-c.alphas[k] * v));
        if (p == "Sigmoid") v = 1.0 / (1.0 + std::exp(-v));
      }
      want.data<float>()[i] = static_cast<float>(v);
    }
    auto fused = run_kernel_full(n, add ? std::vector<Tensor>{in[0], in[1], in[2], r} : in);
    ASSERT_TRUE(fused) << fused.status().message();
    EXPECT_EQ(fused->impl.rfind("fused:onednn:", 0), 0u) << fused->impl;
    EXPECT_EQ(fused->impl.find("+loop-tail") != std::string::npos, c.loop_tail) << fused->impl;
    expect_near(fused->outputs[0], want, 1e-4);
  }
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
