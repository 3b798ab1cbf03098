// Our depthwise conv over blocked channels (conv_depthwise.h): against the conv in double with its
// activations, across kernel sizes, strides, paddings, batches and both blocks; the FusedConv kernel
// takes it for a Graph's blocked depthwise convs and leaves the rest to oneDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/backends/cpu/conv_depthwise.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/fused.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

using cpu::nn::DepthwiseProblem;
using ops::PostOp;

// The depthwise conv in double, nchw, then the activations.
std::vector<double> reference(const Tensor& x, const Tensor& w, const Tensor* b, const DepthwiseProblem& p,
                              const std::vector<PostOp>& post) {
  std::vector<double> y(static_cast<size_t>(p.batch * p.channels * p.oh * p.ow));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t c = 0; c < p.channels; ++c)
      for (int64_t r = 0; r < p.oh; ++r)
        for (int64_t o = 0; o < p.ow; ++o) {
          double acc = b ? b->data<float>()[c] : 0.0;
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              const int64_t ih = r * p.sh - p.ph + i, iw = o * p.sw - p.pw + j;
              if (ih < 0 || iw < 0 || ih >= p.ih || iw >= p.iw) continue;
              acc += static_cast<double>(x.data<float>()[((n * p.channels + c) * p.ih + ih) * p.iw + iw]) *
                     w.data<float>()[(c * p.kh + i) * p.kw + j];
            }
          for (const PostOp& q : post) {
            if (q.kind == PostOp::Kind::Clip) acc = std::min<double>(std::max<double>(acc, q.alpha), q.beta);
            if (q.kind == PostOp::Kind::Swish) acc = acc / (1.0 + std::exp(-q.alpha * acc));
            if (q.kind == PostOp::Kind::Sigmoid) acc = 1.0 / (1.0 + std::exp(-acc));
            if (q.kind == PostOp::Kind::Relu) acc = std::max(acc, 0.0);
          }
          y[static_cast<size_t>(((n * p.channels + c) * p.oh + r) * p.ow + o)] = acc;
        }
  return y;
}

struct DwCase {
  int64_t batch, channels, h, w, k, stride, pad;
  bool bias;
  std::vector<PostOp> post;
};

TEST(DepthwiseConv, MatchesTheConvInDoubleAcrossShapesAndActivations) {
  const PostOp silu{PostOp::Kind::Swish, 1.f, 0.f}, relu6{PostOp::Kind::Clip, 0.f, 6.f},
      sigmoid{PostOp::Kind::Sigmoid, 0.f, 0.f};
  const std::vector<DwCase> cases{
      {1, 32, 12, 12, 3, 1, 1, true, {silu}},       // EfficientNet's 3x3 with SiLU
      {1, 32, 13, 11, 3, 2, 1, true, {relu6}},      // MobileNetV2's stride 2, odd sizes
      {2, 16, 9, 10, 5, 1, 2, true, {silu}},        // a 5x5, two images
      {1, 48, 15, 15, 5, 2, 2, false, {}},          // stride 2 5x5, no bias nor activation
      {1, 16, 7, 7, 7, 1, 3, true, {sigmoid}},      // a 7x7 (ConvNeXt's) on a 7x7 input
      {1, 16, 4, 6, 3, 1, 0, true, {relu6, silu}},  // no padding: every output interior
      {1, 16, 2, 3, 3, 1, 1, true, {silu}},         // narrower than four outputs
  };
  for (int64_t block : {int64_t{8}, int64_t{16}}) {
    for (const DwCase& c : cases) {
      SCOPED_TRACE("block " + std::to_string(block) + ", " + std::to_string(c.channels) + "x" + std::to_string(c.h) +
                   "x" + std::to_string(c.w) + " k" + std::to_string(c.k) + " s" + std::to_string(c.stride));
      if (c.channels % block != 0) continue;
      DepthwiseProblem p{.batch = c.batch,
                         .channels = c.channels,
                         .block = block,
                         .ih = c.h,
                         .iw = c.w,
                         .oh = (c.h + 2 * c.pad - c.k) / c.stride + 1,
                         .ow = (c.w + 2 * c.pad - c.k) / c.stride + 1,
                         .kh = c.k,
                         .kw = c.k,
                         .sh = c.stride,
                         .sw = c.stride,
                         .ph = c.pad,
                         .pw = c.pad};
      const Tensor x = random_f32({c.batch, c.channels, c.h, c.w}, 31);
      const Tensor w = random_f32({c.channels, 1, c.k, c.k}, 32);
      const Tensor b = random_f32({c.channels}, 33);
      const std::vector<float> packed = cpu::nn::pack_depthwise_weights(w.data<float>(), c.channels, c.k, c.k, block);
      const Tensor xb = to_blocked(x, block);
      Tensor yb = Tensor::empty(DType::F32, {c.batch, c.channels, p.oh, p.ow});
      cpu::nn::depthwise_blocked(xb.data<float>(), packed.data(), c.bias ? b.data<float>() : nullptr, yb.data<float>(),
                                 p, c.post);
      const Tensor y = from_blocked(yb, block);
      const std::vector<double> want = reference(x, w, c.bias ? &b : nullptr, p, c.post);
      for (int64_t i = 0; i < y.numel(); ++i) {
        ASSERT_NEAR(y.data<float>()[i], want[static_cast<size_t>(i)], 2e-5) << "element " << i;
      }
    }
  }
}

// The FusedConv kernel on a Graph's blocked depthwise conv (input and output blocked in memory)
// runs ours, and leaves one with a residual to oneDNN.
TEST(DepthwiseConv, TheBlockedFusedDepthwiseConvRunsOursAndTheResidualOneOneDnn) {
  if (cpu::cpu_simd_width() < 8) GTEST_SKIP() << "the blocked layout is nChw8c only with AVX2 (this CPU has none)";
  const int64_t block = cpu::cpu_simd_width() >= 16 ? 16 : 8;
  const Tensor x = random_f32({1, 32, 14, 14}, 41);
  Tensor w = random_f32({32, 1, 3, 3}, 42);
  w.buffer()->freeze();
  const Tensor b = random_f32({32}, 43);
  auto node = [&](bool residual) {
    std::vector<std::string> post{"Clip", "Swish"};
    std::vector<float> alphas{0.f, 1.f}, betas{6.f, 0.f};
    if (residual) {
      post.insert(post.begin(), "Add");
      alphas.insert(alphas.begin(), 0.f);
      betas.insert(betas.begin(), 0.f);
    }
    ir::Node n = make_node("FusedConv", residual ? 4 : 3, 1,
                           {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"group", int64_t{32}},
                            {"activation_layout", std::string("blocked")},
                            {"src_blocked", int64_t{1}},
                            {"dst_blocked", int64_t{1}},
                            {"residual_blocked", int64_t{residual ? 1 : 0}},
                            {"layout_block", block},
                            {"post_ops", post},
                            {"post_alphas", alphas},
                            {"post_betas", betas}});
    n.domain = ops::kFusedDomain;
    return n;
  };
  const DepthwiseProblem p{.channels = 32,
                           .block = block,
                           .ih = 14,
                           .iw = 14,
                           .oh = 7,
                           .ow = 7,
                           .kh = 3,
                           .kw = 3,
                           .sh = 2,
                           .sw = 2,
                           .ph = 1,
                           .pw = 1};
  const std::vector<double> want =
      reference(x, w, &b, p, {{PostOp::Kind::Clip, 0.f, 6.f}, {PostOp::Kind::Swish, 1.f, 0.f}});
  auto got = run_kernel_full(node(false), {to_blocked(x, block), w, b});
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_EQ(got->impl.rfind("fused:depthwise:", 0), 0u) << got->impl;
  const Tensor y = from_blocked(got->outputs[0], block);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data<float>()[i], want[static_cast<size_t>(i)], 2e-5);
  const Tensor r = random_f32({1, 32, 7, 7}, 44);
  auto with_residual = run_kernel_full(node(true), {to_blocked(x, block), w, b, to_blocked(r, block)});
  ASSERT_TRUE(with_residual) << with_residual.status().message();
  EXPECT_EQ(with_residual->impl.rfind("fused:onednn:", 0), 0u) << with_residual->impl;
}

}  // namespace
}  // namespace ms::test
