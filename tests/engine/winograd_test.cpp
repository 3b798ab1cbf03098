// Our Winograd 3x3 convs (engine/backends/cpu/winograd.h) against a direct conv in double, on the
// blocked activations they take: both tile sizes, partial tiles, pads, a batch, bias, a residual
// (also in place) and activations; and through the FusedConv kernel as Graph mode calls it. The bf16
// form (F(2x2,3x3) with bf16 products) against the same conv of the bf16 values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/backends/cpu/conv_inverted_residual.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/winograd.h"
#include "engine/backends/select.h"
#include "engine/ops/fused.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

// relu(conv(x, w) + b + r) in double, nchw, stride 1; pads (top, left) and the output's size given.
std::vector<double> direct(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor* r, int64_t pt, int64_t pl,
                           int64_t oh, int64_t ow, bool relu) {
  return conv3x3_reference(x, w, b, r, 1, pt, pl, oh, ow, relu);
}

struct WinoCase {
  int64_t n, c, m, h, w, pad;
  bool residual, in_place;
};

void check_case(const WinoCase& k, int64_t block) {
  SCOPED_TRACE("n" + std::to_string(k.n) + " c" + std::to_string(k.c) + " m" + std::to_string(k.m) + " " +
               std::to_string(k.h) + "x" + std::to_string(k.w) + " pad " + std::to_string(k.pad) + " block " +
               std::to_string(block) + (k.residual ? (k.in_place ? " residual in place" : " residual") : ""));
  const int64_t oh = k.h + 2 * k.pad - 2, ow = k.w + 2 * k.pad - 2;
  const auto [x, w, b, r] = conv3x3_operands(k.n, k.c, k.h, k.w, k.m, oh, ow, 11);
  const std::vector<double> want = direct(x, w, b, k.residual ? &r : nullptr, k.pad, k.pad, oh, ow, true);

  BlockedOperands o = blocked_operands(x, r, block, k.residual, k.in_place, true);
  Tensor& yb = o.yb;
  const cpu::nn::WinogradConvArgs a{.x = o.xb,
                                    .w = w,
                                    .b = &b,
                                    .residual = k.residual ? &o.residual : nullptr,
                                    .y = yb,
                                    .pad_top = k.pad,
                                    .pad_left = k.pad,
                                    .block = block,
                                    .post = &o.post};
  ASSERT_TRUE(cpu::nn::winograd_conv_applies(a));
  auto impl = run_in_kernel_context(make_node("FusedConv", 2), {&o.xb, &w}, {yb}, [&](runtime::KernelContext& ctx) {
    return cpu::nn::winograd_conv(ctx, a, "fused:");
  });
  ASSERT_TRUE(impl) << impl.status().message();
  const int tile = cpu::nn::winograd_tile(oh, ow);
  // F(4x4,3x3) on 16-channel blocks with more than 16 tiles and U (36 C M floats) of at most 2.5 MiB
  // runs its three steps fused, runs of at most 14 tiles at a time.
  const bool fused = tile == 4 && block == 16 && k.n * (oh / 4) * (ow / 4) > 16 && 36 * k.c * k.m * 4 <= (5 << 19);
  EXPECT_EQ(*impl, fused ? "fused:modescope:wino_4x3_rows"
                         : (tile == 4 ? "fused:modescope:wino_4x3" : "fused:modescope:wino_2x3"));
  const Tensor y = from_blocked(yb, block);
  EXPECT_EQ(first_far_element(y, want, 2e-5), -1);
}

TEST(Winograd, MatchesTheDirectConvAtBothTileSizes) {
  if (cpu::cpu_simd_width() < 8) GTEST_SKIP() << "the Winograd transforms need AVX2 (this CPU has none)";
  const std::vector<WinoCase> cases = {
      {1, 16, 24, 8, 12, 1, false, false},  // F(4x4,3x3), whole tiles
      {2, 8, 16, 9, 7, 1, true, false},     // F(2x2,3x3), partial tiles, a batch, a residual
      {1, 16, 8, 6, 6, 0, true, true},      // no padding (4x4 out), the residual in place
      {1, 8, 8, 5, 3, 2, false, false},     // pads of 2 (7x5 out: partial tiles)
      {1, 64, 64, 14, 14, 1, true, false},  // ResNet-like: 14x14 takes the small tiles
      // Our products on AVX-512 (16-channel blocks): one group of at most 16 tiles (16-channel panels
      // of U), and groups of up to 14 tiles against 32-channel panels with a last panel of 16.
      {1, 32, 48, 7, 7, 1, true, true},      // 16 tiles
      {2, 16, 48, 4, 6, 1, false, false},    // 2 x 2 x 3 = 12 tiles (F(2x2,3x3): 6 is no multiple of 4)
      {1, 48, 48, 20, 20, 1, true, false},   // 25 tiles (F(4x4,3x3)): groups of 13 and 12
      {3, 32, 32, 12, 12, 1, false, false},  // 27 tiles: groups of 14 and 13
      // Fused F(4x4,3x3) (16-channel blocks): runs of tiles a work item, across rows, patches inside
      // the plane and on each edge, a batch, a residual in place, a last panel of 16.
      {2, 64, 48, 28, 28, 1, true, true},     // 49 tiles an image: items of 12 and 13 across rows
      {1, 32, 64, 56, 56, 1, true, false},    // 196 tiles: items of 14, one row each
      {3, 16, 32, 6, 14, 2, false, false},    // pads of 2 (8x16 out): every patch crosses an edge
      {1, 64, 64, 20, 36, 1, false, true},    // 45 tiles: items of 11 and 12
      {1, 128, 128, 20, 20, 1, true, false},  // 2.4 MiB of U, 25 tiles
  };
  for (int64_t block : {int64_t{8}, int64_t{16}}) {
    if (cpu::cpu_simd_width() < block) continue;
    for (const WinoCase& k : cases) {
      if (k.c % block || k.m % block) continue;
      check_case(k, block);
    }
  }
}

TEST(Winograd, TakesOnlyWhatItComputes) {
  if (cpu::cpu_simd_width() < 8) GTEST_SKIP() << "the Winograd transforms need AVX2 (this CPU has none)";
  const Tensor x = random_f32({1, 16, 8, 8}, 1);
  Tensor w = random_f32({16, 16, 3, 3}, 2);
  Tensor y = Tensor::empty(DType::F32, {1, 16, 8, 8});
  auto args = [&](const Tensor& wt, int64_t block) {
    return cpu::nn::WinogradConvArgs{
        .x = x, .w = wt, .b = nullptr, .residual = nullptr, .y = y, .pad_top = 1, .pad_left = 1, .block = block};
  };
  EXPECT_FALSE(cpu::nn::winograd_conv_applies(args(w, 8))) << "weights that may change are not transformed once";
  w.buffer()->freeze();
  EXPECT_TRUE(cpu::nn::winograd_conv_applies(args(w, 8)));
  EXPECT_FALSE(cpu::nn::winograd_conv_applies(args(w, 4)));
  Tensor w5 = random_f32({16, 16, 5, 5}, 3);
  w5.buffer()->freeze();
  EXPECT_FALSE(cpu::nn::winograd_conv_applies(args(w5, 8)));
  Tensor narrow = random_f32({16, 12, 3, 3}, 4);
  narrow.buffer()->freeze();
  const Tensor x12 = random_f32({1, 12, 8, 8}, 5);
  EXPECT_FALSE(cpu::nn::winograd_conv_applies(
      {.x = x12, .w = narrow, .b = nullptr, .residual = nullptr, .y = y, .pad_top = 1, .pad_left = 1, .block = 8}));
}

// The FusedConv kernel on a conv the conv-algorithm pass marked, on the blocked layout: where oneDNN
// has no Winograd for the CPU, ours runs; either way the values are the direct conv's.
TEST(Winograd, TheMarkedFusedConvRunsWinogradAndMatches) {
  if (cpu::cpu_simd_width() < 8) GTEST_SKIP() << "the Winograd transforms need AVX2 (this CPU has none)";
  const int64_t block = cpu::cpu_simd_width() >= 16 ? 16 : 8;
  const Tensor x = random_f32({1, 64, 16, 16}, 21);
  Tensor w = random_f32({64, 64, 3, 3}, 22);
  w.buffer()->freeze();
  const Tensor b = random_f32({64}, 23);
  ir::Node n = make_node("FusedConv", 3, 1,
                         {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                          {"activation_layout", std::string("blocked")},
                          {"src_blocked", int64_t{1}},
                          {"dst_blocked", int64_t{1}},
                          {"layout_block", block},
                          {"algorithm", std::string("winograd")},
                          {"post_ops", std::vector<std::string>{"Relu"}},
                          {"post_alphas", std::vector<float>{0.f}},
                          {"post_betas", std::vector<float>{0.f}}});
  n.domain = ops::kFusedDomain;
  auto got = run_kernel_full(n, {to_blocked(x, block), w, b});
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_NE(got->impl.find("wino"), std::string::npos) << got->impl;
  if (!__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(got->impl, "fused:modescope:wino_4x3");
  }
  const std::vector<double> want = direct(x, w, b, nullptr, 1, 1, 16, 16, true);
  EXPECT_EQ(first_far_element(from_blocked(got->outputs[0], block), want, 2e-5), -1);
}

// f32 values rounded to bf16 (still f32: the reference's operands), and bf16 widened.
Tensor bf16_exact(const Tensor& t) {
  Tensor o = Tensor::empty(DType::F32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) o.data<float>()[i] = static_cast<float>(bf16(t.data<float>()[i]));
  return o;
}
Tensor widened(const Tensor& t) {
  Tensor o = Tensor::empty(DType::F32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) o.data<float>()[i] = static_cast<float>(t.data<bf16>()[i]);
  return o;
}

// Whether this CPU runs the bf16 form (AVX-512-BF16 without AMX) and the build has the bf16 gemm.
bool runs_bf16_winograd() {
  auto be = backends::create_cpu_backend(1);
  return cpu::nn::cpu_has_avx512_bf16() && be->native_bf16() && !be->bf16_matrix_units();
}

// The largest |got - want| over the output, relative to its largest |want|.
double relative_error(const Tensor& got, const std::vector<double>& want) {
  double scale = 0, err = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (int64_t i = 0; i < got.numel(); ++i)
    err = std::max(err, std::abs(got.data<float>()[i] - want[static_cast<size_t>(i)]));
  return err / scale;
}

// bf16 in, bf16 out: within 1e-2 of the output's scale of the conv of the bf16 values in double (the
// direct bf16 conv's error is about half that; the f32 Winograd's 1e-6), at 16x16 (whole tiles) and
// 15x14 (a partial row of tiles), a batch, a residual in place and not; and in chunks of rows of
// tiles that cross from one image to the next (3 images of 12 rows of tiles, chunks of 18 rows).
TEST(Winograd, Bf16ProductsMatchTheConvOfTheBf16Values) {
  if (!runs_bf16_winograd()) GTEST_SKIP() << "the bf16 Winograd needs AVX-512-BF16 without AMX (this CPU differs)";
  const std::vector<WinoCase> cases = {
      {1, 64, 32, 16, 16, 1, false, false},
      {2, 32, 48, 15, 14, 1, true, false},
      {1, 16, 16, 14, 14, 1, true, true},
      {3, 64, 64, 24, 24, 1, true, false},
  };
  for (const WinoCase& k : cases) {
    SCOPED_TRACE("n" + std::to_string(k.n) + " c" + std::to_string(k.c) + " m" + std::to_string(k.m) + " " +
                 std::to_string(k.h) + "x" + std::to_string(k.w) + (k.in_place ? " in place" : ""));
    const int64_t oh = k.h, ow = k.w;
    const Tensor x = bf16_exact(random_f32({k.n, k.c, k.h, k.w}, 31));
    const Tensor wf = bf16_exact(random_f32({k.m, k.c, 3, 3}, 32));
    const Tensor b = bf16_exact(random_f32({k.m}, 33));
    const Tensor r = bf16_exact(random_f32({k.n, k.m, oh, ow}, 34));
    const std::vector<double> want = direct(x, wf, b, k.residual ? &r : nullptr, 1, 1, oh, ow, true);
    const Tensor xb = to_bf16(to_blocked(x, 16));
    Tensor w = to_bf16(wf);
    w.buffer()->freeze();
    const Tensor bb = to_bf16(b);
    const Tensor rb = to_bf16(to_blocked(r, 16));
    Tensor yb = k.in_place ? rb.clone() : Tensor::empty(DType::BF16, {k.n, k.m, oh, ow});
    const Tensor residual = k.in_place ? yb : rb;
    std::vector<ops::PostOp> post;
    if (k.residual) post.push_back({ops::PostOp::Kind::Add, 0, 0});
    post.push_back({ops::PostOp::Kind::Relu, 0, 0});
    const cpu::nn::WinogradConvArgs a{.x = xb,
                                      .w = w,
                                      .b = &bb,
                                      .residual = k.residual ? &residual : nullptr,
                                      .y = yb,
                                      .pad_top = 1,
                                      .pad_left = 1,
                                      .block = 16,
                                      .post = &post};
    EXPECT_FALSE(cpu::nn::winograd_conv_applies(a)) << "bf16 only where the caller says its products may be";
    ASSERT_TRUE(cpu::nn::winograd_conv_applies(a, true));
    auto impl = run_in_kernel_context(make_node("FusedConv", 2), {&xb, &w}, {yb}, [&](runtime::KernelContext& ctx) {
      return cpu::nn::winograd_conv(ctx, a, "fused:");
    });
    ASSERT_TRUE(impl) << impl.status().message();
    EXPECT_EQ(*impl, "fused:modescope:wino_2x3_bf16");
    const double err = relative_error(from_blocked(widened(yb), 16), want);
    EXPECT_LT(err, 1e-2);
    EXPECT_GT(err, 1e-5) << "the products are bf16, not f32";
  }
  // 7x7 planes stay with the direct conv (their transformed weights would stream from memory).
  const Tensor x7 = to_bf16(random_f32({1, 16, 7, 7}, 1));
  Tensor w7 = to_bf16(random_f32({16, 16, 3, 3}, 2));
  w7.buffer()->freeze();
  Tensor y7 = Tensor::empty(DType::BF16, {1, 16, 7, 7});
  EXPECT_FALSE(cpu::nn::winograd_conv_applies(
      {.x = x7, .w = w7, .b = nullptr, .residual = nullptr, .y = y7, .pad_top = 1, .pad_left = 1, .block = 16}, true));
}

// A bf16 graph's marked FusedConv on the blocked layout runs the bf16 form where the CPU has it.
TEST(Winograd, TheMarkedBf16FusedConvRunsTheBf16Form) {
  if (!runs_bf16_winograd()) GTEST_SKIP() << "the bf16 Winograd needs AVX-512-BF16 without AMX (this CPU differs)";
  const Tensor x = bf16_exact(random_f32({1, 64, 16, 16}, 41));
  const Tensor wf = bf16_exact(random_f32({64, 64, 3, 3}, 42));
  const Tensor b = bf16_exact(random_f32({64}, 43));
  Tensor w = to_bf16(wf);
  w.buffer()->freeze();
  ir::Node n = make_node("FusedConv", 3, 1,
                         {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                          {"activation_layout", std::string("blocked")},
                          {"src_blocked", int64_t{1}},
                          {"dst_blocked", int64_t{1}},
                          {"layout_block", int64_t{16}},
                          {"algorithm", std::string("winograd")},
                          {"post_ops", std::vector<std::string>{"Relu"}},
                          {"post_alphas", std::vector<float>{0.f}},
                          {"post_betas", std::vector<float>{0.f}}});
  n.domain = ops::kFusedDomain;
  auto got = run_kernel_full(n, {to_bf16(to_blocked(x, 16)), w, to_bf16(b)});
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_EQ(got->impl, "fused:modescope:wino_2x3_bf16");
  EXPECT_LT(relative_error(from_blocked(widened(got->outputs[0]), 16), direct(x, wf, b, nullptr, 1, 1, 16, 16, true)),
            1e-2);
}

}  // namespace
}  // namespace ms::test
