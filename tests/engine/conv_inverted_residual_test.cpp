// The inverted-residual kernel (conv_inverted_residual.h): expand 1x1 -> depthwise -> project 1x1
// (+ residual) over blocked channels against the three convs in double, across strides, kernels,
// plane sizes (both thread splits), channel counts that pad the block, batches and both blocks,
// with and without its optional stages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/backends/cpu/conv_inverted_residual.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/fused.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

using cpu::nn::InvertedResidualProblem;
using ops::PostOp;

double act(double v, const std::vector<PostOp>& post, const double* residual) {
  for (const PostOp& q : post) {
    if (q.kind == PostOp::Kind::Add) v += *residual;
    if (q.kind == PostOp::Kind::Clip) v = std::min<double>(std::max<double>(v, q.alpha), q.beta);
    if (q.kind == PostOp::Kind::Swish) v = v / (1.0 + std::exp(-q.alpha * v));
    if (q.kind == PostOp::Kind::Sigmoid) v = 1.0 / (1.0 + std::exp(-v));
    if (q.kind == PostOp::Kind::Relu) v = std::max(v, 0.0);
  }
  return v;
}

// nchw in double: [N, C, H, W] vectors.
std::vector<double> pointwise(const std::vector<double>& x, int64_t n, int64_t cin, int64_t hw, const Tensor& w,
                              const Tensor& b, int64_t cout, const std::vector<PostOp>& post,
                              const std::vector<double>* residual) {
  std::vector<double> y(static_cast<size_t>(n * cout * hw));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t p = 0; p < hw; ++p) {
        double acc = b.data<float>()[o];
        for (int64_t c = 0; c < cin; ++c)
          acc += x[static_cast<size_t>((i * cin + c) * hw + p)] * w.data<float>()[o * cin + c];
        const size_t at = static_cast<size_t>((i * cout + o) * hw + p);
        y[at] = act(acc, post, residual ? &(*residual)[at] : nullptr);
      }
  return y;
}

std::vector<double> depthwise(const std::vector<double>& x, const InvertedResidualProblem& p, const Tensor& w,
                              const Tensor& b, const std::vector<PostOp>& post) {
  std::vector<double> y(static_cast<size_t>(p.batch * p.cexp * p.oh * p.ow));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t c = 0; c < p.cexp; ++c)
      for (int64_t r = 0; r < p.oh; ++r)
        for (int64_t o = 0; o < p.ow; ++o) {
          double acc = b.data<float>()[c];
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              const int64_t ih = r * p.sh - p.ph + i, iw = o * p.sw - p.pw + j;
              if (ih < 0 || iw < 0 || ih >= p.ih || iw >= p.iw) continue;
              acc += x[static_cast<size_t>(((n * p.cexp + c) * p.ih + ih) * p.iw + iw)] *
                     w.data<float>()[(c * p.kh + i) * p.kw + j];
            }
          y[static_cast<size_t>(((n * p.cexp + c) * p.oh + r) * p.ow + o)] = act(acc, post, nullptr);
        }
  return y;
}

// A value rounded to bf16 (nearest even) and back.
double bf16_round(double v) { return static_cast<double>(static_cast<float>(bf16(static_cast<float>(v)))); }

// An f32 tensor with its values rounded to bf16, still f32.
Tensor bf16_rounded(const Tensor& t) {
  Tensor o = t.clone();
  for (int64_t i = 0; i < o.numel(); ++i) o.data<float>()[i] = static_cast<float>(bf16_round(o.data<float>()[i]));
  return o;
}

// nchw f32 as nChw<block>c with the channels padded to the block (zeros), or back.
std::vector<float> blocked(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw, int64_t block) {
  const int64_t cb = (c + block - 1) / block;
  std::vector<float> out(static_cast<size_t>(n * cb * block * hw), 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[static_cast<size_t>(((i * cb + ch / block) * hw + p) * block + ch % block)] =
            x[static_cast<size_t>((i * c + ch) * hw + p)];
  return out;
}

struct IrCase {
  int64_t batch, cin, cexp, cout, h, w, k, stride;
  bool expand, project, residual;
  std::vector<PostOp> post1, post2, post3;
};

TEST(InvertedResidual, MatchesTheThreeConvsInDouble) {
  const PostOp relu6{PostOp::Kind::Clip, 0.f, 6.f}, silu{PostOp::Kind::Swish, 1.f, 0.f},
      relu{PostOp::Kind::Relu, 0.f, 0.f}, add{PostOp::Kind::Add, 0.f, 0.f}, sigmoid{PostOp::Kind::Sigmoid, 0.f, 0.f};
  const std::vector<IrCase> cases{
      {1, 24, 144, 24, 20, 20, 3, 1, true, true, true, {relu6}, {relu6}, {add}},   // MobileNetV2, rows split
      {1, 16, 96, 24, 23, 21, 3, 2, true, true, false, {relu6}, {relu6}, {}},      // stride 2, odd sizes
      {2, 32, 192, 32, 7, 7, 3, 1, true, true, true, {relu6}, {relu6}, {add}},     // small plane: channels split
      {1, 40, 240, 40, 9, 9, 5, 1, true, true, true, {silu}, {silu}, {add}},       // 5x5, SiLU (generic tails)
      {1, 24, 144, 40, 14, 14, 5, 2, true, true, false, {silu}, {silu}, {}},       // 5x5 stride 2
      {1, 32, 32, 16, 16, 16, 3, 1, false, true, false, {}, {relu6}, {}},          // no expansion (t = 1)
      {1, 16, 96, 16, 12, 12, 3, 1, true, false, false, {relu6}, {silu}, {}},      // no projection
      {1, 12, 48, 20, 8, 8, 3, 1, true, true, false, {relu}, {relu6}, {sigmoid}},  // padded channels, tail
      {1, 16, 64, 24, 6, 5, 3, 1, true, true, true, {relu6}, {relu6}, {add, relu}},
      {1, 40, 320, 64, 7, 7, 3, 1, true, true, true, {relu6}, {relu6}, {add}},  // channel passes, split outputs
      {1, 32, 192, 72, 5, 5, 3, 1, true, true, false, {relu6}, {relu6}, {}},    // split outputs, a half block
  };
  // bf16 products (16-lane blocks on a CPU with AVX-512-BF16): held to the same convs with x, the
  // depthwise result and the 1x1 weights rounded to bf16 as the kernel rounds them.
  std::vector<std::pair<int64_t, bool>> variants{{8, false}, {16, false}};
  if (cpu::nn::cpu_has_avx512_bf16()) variants.push_back({16, true});
  for (const auto& [block, bf16] : variants) {
    for (const IrCase& c : cases) {
      SCOPED_TRACE(std::string(bf16 ? "bf16, " : "") + "block " + std::to_string(block) + ", " + std::to_string(c.cin) +
                   "->" + std::to_string(c.cexp) + "->" + std::to_string(c.cout) + " at " + std::to_string(c.h) + "x" +
                   std::to_string(c.w) + " k" + std::to_string(c.k) + " s" + std::to_string(c.stride));
      if (c.cexp % block != 0) continue;
      const int64_t pad = c.k / 2;
      InvertedResidualProblem p{.batch = c.batch,
                                .block = block,
                                .cin = c.cin,
                                .cexp = c.cexp,
                                .cout = c.project ? c.cout : c.cexp,
                                .ih = c.h,
                                .iw = c.w,
                                .oh = (c.h + 2 * pad - c.k) / c.stride + 1,
                                .ow = (c.w + 2 * pad - c.k) / c.stride + 1,
                                .kh = c.k,
                                .kw = c.k,
                                .sh = c.stride,
                                .sw = c.stride,
                                .ph = pad,
                                .pw = pad,
                                .expand = c.expand,
                                .project = c.project,
                                .bf16 = bf16};
      const Tensor x = random_f32({c.batch, c.cin, c.h, c.w}, 51);
      const Tensor w1 = random_f32({c.cexp, c.cin, 1, 1}, 52), b1 = random_f32({c.cexp}, 53);
      const Tensor wd = random_f32({c.cexp, 1, c.k, c.k}, 54), bd = random_f32({c.cexp}, 55);
      const Tensor w3 = random_f32({c.cout, c.cexp, 1, 1}, 56), b3 = random_f32({c.cout}, 57);
      const int64_t ohw = p.oh * p.ow;
      const Tensor r = random_f32({c.batch, p.cout, p.oh, p.ow}, 58);

      std::vector<double> xd(x.data<float>(), x.data<float>() + x.numel());
      auto round_all = [&](std::vector<double> v) {
        if (bf16)
          for (double& e : v) e = bf16_round(e);
        return v;
      };
      std::vector<double> want = c.expand ? pointwise(round_all(xd), c.batch, c.cin, c.h * c.w,
                                                      bf16 ? bf16_rounded(w1) : w1, b1, c.cexp, c.post1, nullptr)
                                          : xd;
      want = depthwise(want, p, wd, bd, c.post2);
      const std::vector<double> rd(r.data<float>(), r.data<float>() + r.numel());
      if (c.project)
        want = pointwise(round_all(want), c.batch, c.cexp, ohw, bf16 ? bf16_rounded(w3) : w3, b3, c.cout, c.post3,
                         c.residual ? &rd : nullptr);

      const auto packed =
          cpu::nn::pack_inverted_residual(p, c.expand ? w1.data<float>() : nullptr, b1.data<float>(), wd.data<float>(),
                                          bd.data<float>(), c.project ? w3.data<float>() : nullptr, b3.data<float>());
      const std::vector<float> xb =
          blocked(std::vector<float>(x.data<float>(), x.data<float>() + x.numel()), c.batch, c.cin, c.h * c.w, block);
      const std::vector<float> rb =
          blocked(std::vector<float>(r.data<float>(), r.data<float>() + r.numel()), c.batch, p.cout, ohw, block);
      const int64_t cob = (p.cout + block - 1) / block;
      std::vector<float> yb(static_cast<size_t>(c.batch * cob * block * ohw), -1.f);
      cpu::nn::inverted_residual_blocked(xb.data(), packed, c.residual ? rb.data() : nullptr, yb.data(), p, c.post1,
                                         c.post2, c.project ? c.post3 : std::vector<PostOp>{});
      for (int64_t n = 0; n < c.batch; ++n)
        for (int64_t ch = 0; ch < cob * block; ++ch)
          for (int64_t px = 0; px < ohw; ++px) {
            const float got = yb[static_cast<size_t>(((n * cob + ch / block) * ohw + px) * block + ch % block)];
            if (ch >= p.cout) {
              ASSERT_EQ(got, 0.f) << "padding channel " << ch << " pixel " << px;
              continue;
            }
            const double ref = want[static_cast<size_t>((n * p.cout + ch) * ohw + px)];
            // bf16: the depthwise result rounds from f32 in the kernel, from double here; where the
            // two sit either side of a rounding boundary a product differs by one bf16 step.
            ASSERT_NEAR(got, ref, (bf16 ? 2e-3 : 1e-4) * std::max(1.0, std::abs(ref)))
                << "image " << n << " channel " << ch << " pixel " << px;
          }
    }
  }
}

}  // namespace
}  // namespace ms::test
