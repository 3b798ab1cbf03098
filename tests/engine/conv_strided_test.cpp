// Our direct 3x3 convs (engine/backends/cpu/conv_strided.h) against a direct conv in double, on the
// 16-channel blocks they take: stride 2 on rows of more and fewer than 7 pixels (single rows against
// 32- and 64-channel panels, pairs of rows against 32), rows split into tiles, a last narrower panel,
// pads of 0 and 1, a batch, bias, a residual (also in place) and activations; stride 1 on rows of 7
// or fewer; what they refuse; and through the FusedConv kernel as Graph mode calls it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/backends/cpu/conv_strided.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/fused.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

struct S2Case {
  int64_t n, c, m, h, w, pad;
  bool residual, in_place, relu;
  int64_t stride = 2;
};

bool runs_avx512() { return cpu::cpu_simd_width() >= 16; }

void check_case(const S2Case& k) {
  SCOPED_TRACE("n" + std::to_string(k.n) + " c" + std::to_string(k.c) + " m" + std::to_string(k.m) + " " +
               std::to_string(k.h) + "x" + std::to_string(k.w) + " pad " + std::to_string(k.pad) +
               (k.residual ? (k.in_place ? " residual in place" : " residual") : "") + (k.relu ? " relu" : "") +
               " stride " + std::to_string(k.stride));
  const int64_t oh = (k.h + 2 * k.pad - 3) / k.stride + 1, ow = (k.w + 2 * k.pad - 3) / k.stride + 1;
  const auto [x, w, b, r] = conv3x3_operands(k.n, k.c, k.h, k.w, k.m, oh, ow, 31);
  const std::vector<double> want =
      conv3x3_reference(x, w, b, k.residual ? &r : nullptr, k.stride, k.pad, k.pad, oh, ow, k.relu);

  BlockedOperands o = blocked_operands(x, r, 16, k.residual, k.in_place, k.relu);
  Tensor& yb = o.yb;
  const cpu::nn::StridedConvArgs a{.x = o.xb,
                                   .w = w,
                                   .b = &b,
                                   .residual = k.residual ? &o.residual : nullptr,
                                   .y = yb,
                                   .pad_top = k.pad,
                                   .pad_left = k.pad,
                                   .post = &o.post};
  ASSERT_TRUE(k.stride == 2 ? cpu::nn::strided_conv_applies(a) : cpu::nn::small_plane_conv_applies(a));
  auto impl = run_in_kernel_context(make_node("FusedConv", 2), {&o.xb, &w}, {yb}, [&](runtime::KernelContext& ctx) {
    return cpu::nn::strided_conv(ctx, a, "fused:", static_cast<int>(k.stride));
  });
  ASSERT_TRUE(impl) << impl.status().message();
  EXPECT_EQ(*impl, k.stride == 2 ? "fused:modescope:conv3x3s2" : "fused:modescope:conv3x3");
  const Tensor y = from_blocked(yb, 16);
  EXPECT_EQ(first_far_element(y, want, 2e-5), -1);
}

TEST(StridedConv, MatchesTheDirectConv) {
  if (!runs_avx512()) GTEST_SKIP() << "our 3x3 stride-2 conv needs AVX-512 (this CPU has none)";
  const std::vector<S2Case> cases = {
      {1, 32, 64, 56, 56, 1, false, false, true},  // 28 pixels a row: two tiles of 14, 32-channel panels
      {2, 16, 80, 14, 14, 1, true, false, true},   // 7 a row: 64-channel panels, a last one of 16; a batch
      {1, 32, 96, 14, 10, 1, true, true, false},   // 7x5 out: a last panel of 32, the residual in place
      {1, 16, 32, 9, 9, 0, false, false, true},    // no padding: 4x4 out
      {1, 48, 32, 62, 62, 1, true, false, true},   // 31 a row: tiles of 10, 10 and 11
      // Stride 1 on rows of at most 7: two rows a tile against 32 channels, a last row alone where
      // the count is odd, each row alone against a last panel of 16.
      {1, 32, 96, 7, 7, 1, true, false, true, 1},
      {2, 16, 48, 6, 5, 1, true, true, false, 1},
      {1, 16, 32, 3, 2, 1, false, false, true, 1},
  };
  for (const S2Case& k : cases) check_case(k);
}

TEST(StridedConv, TakesOnlyWhatItComputes) {
  if (!runs_avx512()) GTEST_SKIP() << "our 3x3 stride-2 conv needs AVX-512 (this CPU has none)";
  const Tensor x = random_f32({1, 16, 8, 8}, 1);
  Tensor w = random_f32({16, 16, 3, 3}, 2);
  Tensor y = Tensor::empty(DType::F32, {1, 16, 4, 4});
  auto args = [&](const Tensor& wt, int64_t pad) {
    return cpu::nn::StridedConvArgs{
        .x = x, .w = wt, .b = nullptr, .residual = nullptr, .y = y, .pad_top = pad, .pad_left = pad};
  };
  EXPECT_FALSE(cpu::nn::strided_conv_applies(args(w, 1))) << "weights that may change are not packed once";
  w.buffer()->freeze();
  EXPECT_TRUE(cpu::nn::strided_conv_applies(args(w, 1)));
  EXPECT_FALSE(cpu::nn::strided_conv_applies(args(w, 2))) << "pads of 2";
  // 8x8 with pad 0 has 3x3 outputs; a 4x4 output would read the column and row past the input.
  EXPECT_FALSE(cpu::nn::strided_conv_applies(args(w, 0)));
  // A 5x5 kernel, and 12 input channels (no whole block).
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{16, 16, 5, 5}, std::vector<int64_t>{16, 12, 3, 3}}) {
    Tensor other = random_f32(shape, 3);
    other.buffer()->freeze();
    const Tensor xo = random_f32({1, shape[1], 8, 8}, 4);
    EXPECT_FALSE(cpu::nn::strided_conv_applies(
        {.x = xo, .w = other, .b = nullptr, .residual = nullptr, .y = y, .pad_top = 1, .pad_left = 1}))
        << shape[1] << " channels, kernel " << shape[2];
  }
}

// The FusedConv kernel on a stride-2 3x3 conv of 128 input channels on the blocked layout
// (AVX-512): ours runs, and the values are the direct conv's.
TEST(StridedConv, TheBlockedFusedConvRunsOursAndMatches) {
  if (!runs_avx512()) GTEST_SKIP() << "our 3x3 stride-2 conv needs AVX-512 (this CPU has none)";
  const Tensor x = random_f32({1, 128, 28, 28}, 41);
  Tensor w = random_f32({64, 128, 3, 3}, 42);
  w.buffer()->freeze();
  const Tensor b = random_f32({64}, 43);
  ir::Node n = make_node("FusedConv", 3, 1,
                         {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                          {"strides", std::vector<int64_t>{2, 2}},
                          {"activation_layout", std::string("blocked")},
                          {"src_blocked", int64_t{1}},
                          {"dst_blocked", int64_t{1}},
                          {"layout_block", int64_t{16}},
                          {"post_ops", std::vector<std::string>{"Relu"}},
                          {"post_alphas", std::vector<float>{0.f}},
                          {"post_betas", std::vector<float>{0.f}}});
  n.domain = ops::kFusedDomain;
  auto got = run_kernel_full(n, {to_blocked(x, 16), w, b});
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_EQ(got->impl, "fused:modescope:conv3x3s2");
  const std::vector<double> want = conv3x3_reference(x, w, b, nullptr, 2, 1, 1, 14, 14, true);
  EXPECT_EQ(first_far_element(from_blocked(got->outputs[0], 16), want, 2e-5), -1);
}

}  // namespace
}  // namespace ms::test
