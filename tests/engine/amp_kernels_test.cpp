// bf16 kernels of mixed precision against f32: Conv, ConvTranspose, MatMul and Gemm run oneDNN
// with bf16 src and weights (f32 accumulation inside) and match the f32 result within bf16
// tolerances; the elementwise and pooling ops a bf16 ResNet or MLP needs run too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/ops/fused.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

// The op in f32 on bf16-rounded inputs (the exact products bf16 sees) and in bf16; the bf16
// output is within a few bf16 ulps of the largest magnitude.
// oneDNN 2.6 computes bf16 on AVX-512 (avx512_core, natively with avx512_bf16); on AVX2 its bf16
// primitives are not implemented and the kernels take their reference loops (still checked below).
bool amp_cpu_has_onednn_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

void expect_bf16_close(const ir::Node& node, const std::vector<Tensor>& f32_inputs, bool want_onednn = true) {
  std::vector<Tensor> rounded, low;
  for (const Tensor& t : f32_inputs) {
    low.push_back(to_bf16(t));
    Tensor r = Tensor::empty(DType::F32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = static_cast<float>(low.back().data<bf16>()[i]);
    rounded.push_back(r);
  }
  auto ref = run_kernel_full(node, rounded);
  ASSERT_TRUE(ref) << ref.status().message();
  auto got = run_kernel_full(node, low);
  ASSERT_TRUE(got) << got.status().message();
  const Tensor& a = ref->outputs[0];
  const Tensor& b = got->outputs[0];
  ASSERT_EQ(b.dtype(), DType::BF16) << node.op_type;
  ASSERT_EQ(a.shape(), b.shape());
  if (want_onednn && amp_cpu_has_onednn_bf16()) {
    EXPECT_EQ(got->impl.rfind("onednn:", 0), 0u) << node.op_type << " ran " << got->impl;
  }
  double scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::abs(value_at(a, i)));
  for (int64_t i = 0; i < a.numel(); ++i) {
    ASSERT_NEAR(value_at(b, i), value_at(a, i), 1.5e-2 * scale + 1e-3) << node.op_type << " element " << i;
  }
}

TEST(AmpKernels, ConvBf16MatchesF32) {
  expect_bf16_close(make_node("Conv", 3, 1, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                    {random_f32({2, 16, 10, 10}, 1), random_f32({32, 16, 3, 3}, 2), random_f32({32}, 3)});
  expect_bf16_close(make_node("Conv", 2, 1, {{"strides", std::vector<int64_t>{2, 2}}, {"group", int64_t{2}}}),
                    {random_f32({1, 8, 9, 9}, 4), random_f32({8, 4, 1, 1}, 5)});
}

TEST(AmpKernels, ConvTransposeBf16MatchesF32) {
  expect_bf16_close(make_node("ConvTranspose", 2, 1,
                              {{"strides", std::vector<int64_t>{2, 2}},
                               {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                               {"output_padding", std::vector<int64_t>{1, 1}}}),
                    {random_f32({2, 16, 5, 5}, 6), random_f32({16, 8, 3, 3}, 7)});
}

Tensor to_f64(const Tensor& t) {
  Tensor o = Tensor::empty(DType::F64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) o.data<double>()[i] = t.data<float>()[i];
  return o;
}

TEST(AmpKernels, ConvTransposeWithOutputPaddingPastThePadsRunsOneDnn) {
  // The input gradient of a strided 1x1 conv: output_padding 1 over no end padding. oneDNN
  // computes the smaller output; the last row and column are the bias. f64 runs the reference loop.
  const ir::Node node = make_node(
      "ConvTranspose", 3, 1, {{"strides", std::vector<int64_t>{2, 2}}, {"output_padding", std::vector<int64_t>{1, 1}}});
  const std::vector<Tensor> in{random_f32({2, 8, 4, 4}, 16), random_f32({8, 4, 1, 1}, 17), random_f32({4}, 18)};
  auto f32 = run_kernel_full(node, in);
  ASSERT_TRUE(f32) << f32.status().message();
  EXPECT_EQ(f32->impl.rfind("onednn:", 0), 0u) << f32->impl;
  auto f64 = run_kernel(node, {to_f64(in[0]), to_f64(in[1]), to_f64(in[2])});
  ASSERT_TRUE(f64) << f64.status().message();
  ASSERT_EQ(f32->outputs[0].shape(), (Shape{2, 4, 8, 8}));
  for (int64_t i = 0; i < f32->outputs[0].numel(); ++i) {
    ASSERT_NEAR(value_at(f32->outputs[0], i), value_at((*f64)[0], i), 1e-5) << i;
  }
  expect_bf16_close(node, in);
}

TEST(AmpKernels, MatMulAndGemmBf16MatchF32) {
  expect_bf16_close(make_node("MatMul", 2), {random_f32({3, 17, 64}, 8), random_f32({64, 33}, 9)});
  expect_bf16_close(make_node("Gemm", 3, 1, {{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}),
                    {random_f32({8, 64}, 10), random_f32({10, 64}, 11), random_f32({10}, 12)});
}

// A bf16 graph's projections: A's rows [S, 1, K] (ViT's [seq, batch, hidden]) times 2-D weights run
// as one [S, K] x [K, N] product, not S one-row products.
TEST(AmpKernels, MatMulOfRowsTimesWeightsIsOneProduct) {
  expect_bf16_close(make_node("MatMul", 2), {random_f32({37, 1, 96}, 19), random_f32({96, 80}, 20)});
}

// LayerNormalization on bf16 rows computes in f32 (the statistics of a row) and rounds once.
TEST(AmpKernels, LayerNormalizationBf16RowsComputeInF32) {
  const ir::Node node = make_node("LayerNormalization", 3, 1, {{"axis", int64_t{-1}}});
  expect_bf16_close(node, {random_f32({5, 3, 200}, 21), random_f32({200}, 22), random_f32({200}, 23)}, false);
  auto got = run_kernel_full(
      node, {to_bf16(random_f32({5, 3, 200}, 21)), to_bf16(random_f32({200}, 22)), to_bf16(random_f32({200}, 23))});
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_EQ(got->impl, "rows-bf16");
}

// Cast f32 -> bf16 before opset 19 drops the low bits as the ONNX reference did; the casts a
// compiler pass makes (round_mode "nearest") round to nearest even at any opset.
TEST(AmpKernels, CompilerCastsRoundToNearestAtEveryOpset) {
  Tensor x = Tensor::empty(DType::F32, {2});
  x.data<float>()[0] = 1.005859375f;  // 1 + 2^-8 + 2^-9: nearest bf16 is 1 + 2^-7
  x.data<float>()[1] = -1.005859375f;
  ir::Node cast = make_node("Cast", 1, 1, {{"to", int64_t{16}}});
  auto truncated = run_kernel(cast, {x}, 13);
  ASSERT_TRUE(truncated) << truncated.status().message();
  EXPECT_EQ(value_at((*truncated)[0], 0), 1.0);
  EXPECT_EQ(value_at((*truncated)[0], 1), -1.0);
  cast.attrs["round_mode"] = ir::Attribute(std::string("nearest"));
  auto rounded = run_kernel(cast, {x}, 13);
  ASSERT_TRUE(rounded) << rounded.status().message();
  EXPECT_EQ(value_at((*rounded)[0], 0), 1.0078125);
  EXPECT_EQ(value_at((*rounded)[0], 1), -1.0078125);
}

// Cast f32 -> bf16 at opset 19 (and a pass's casts) and bf16 -> f32 take the vectorized row
// converters: bit for bit Eigen's conversions (nearest even, NaN quiet with its sign, infinities,
// subnormals, ties), over more values than a thread's chunk so the threads split them.
TEST(AmpKernels, CastsBetweenF32AndBf16MatchTheScalarConversionBitForBit) {
  std::vector<float> v = {0.f,        -0.f,    1.005859375f, -1.005859375f, 1.0078125f, 3.3895314e38f, -3.4028235e38f,
                          1e-40f,     -1e-45f, INFINITY,     -INFINITY,     NAN,        -NAN,          1.00390625f,
                          1.01171875f};
  uint32_t bits = 0x12345678u;
  while (v.size() < 200003) {
    bits = bits * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    v.push_back(f);
  }
  Tensor x = Tensor::empty(DType::F32, {static_cast<int64_t>(v.size())});
  std::memcpy(x.raw(), v.data(), v.size() * sizeof(float));
  auto low = run_kernel(make_node("Cast", 1, 1, {{"to", int64_t{16}}}), {x}, 19);
  ASSERT_TRUE(low) << low.status().message();
  const Tensor& b = (*low)[0];
  ASSERT_EQ(b.dtype(), DType::BF16);
  int64_t off = 0;
  for (size_t i = 0; i < v.size(); ++i)
    off += Eigen::numext::bit_cast<uint16_t>(b.data<bf16>()[i]) != Eigen::numext::bit_cast<uint16_t>(bf16(v[i]));
  EXPECT_EQ(off, 0) << "of " << v.size() << " values";
  auto back = run_kernel(make_node("Cast", 1, 1, {{"to", int64_t{1}}}), {b}, 19);
  ASSERT_TRUE(back) << back.status().message();
  off = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const float want = static_cast<float>(b.data<bf16>()[i]), got = (*back)[0].data<float>()[i];
    off += std::memcmp(&want, &got, sizeof got) != 0;
  }
  EXPECT_EQ(off, 0) << "of " << v.size() << " values widened";
}

// A bf16 graph's FusedAttention: bf16 products with f32 scores and softmax, the probabilities
// rounded to bf16 for the product with V, Y written in bf16; a bf16 mask is widened.
TEST(AmpKernels, FusedAttentionBf16MatchesF32) {
  ir::Node node = make_node("FusedAttention", 4, 1,
                            {{"q_layout", std::string("hsd")},
                             {"k_layout", std::string("hsd")},
                             {"v_layout", std::string("hsd")},
                             {"y_layout", std::string("shd")},
                             {"scale", 0.35f}});
  node.domain = "ai.modescope";
  const std::vector<Tensor> in{random_f32({3, 9, 16}, 24), random_f32({3, 11, 16}, 25), random_f32({3, 11, 8}, 26),
                               random_f32({9, 11}, 27)};
  expect_bf16_close(node, in, false);
  std::vector<Tensor> low;
  for (const Tensor& t : in) low.push_back(to_bf16(t));
  auto got = run_kernel_full(node, low);
  ASSERT_TRUE(got) << got.status().message();
  // Without oneDNN's bf16 matmul (AVX2) the same attention runs in f32 on the widened operands.
  const char* want = amp_cpu_has_onednn_bf16() ? "attention-bf16+" : "attention-bf16-in-f32+";
  EXPECT_EQ(got->impl.rfind(want, 0), 0u) << got->impl;
}

// A bf16 FusedMatMul the one-primitive path does not take (batched weights): the MatMul, then the
// bias and activation in f32, rounded once.
TEST(AmpKernels, FusedMatMulBf16WithBatchedWeightsRunsTheTailInF32) {
  ir::Node node = make_node("FusedMatMul", 3, 1, {{"post_ops", std::vector<std::string>{"Relu"}}});
  node.domain = "ai.modescope";
  expect_bf16_close(node, {random_f32({2, 5, 8}, 28), random_f32({2, 8, 6}, 29), random_f32({6}, 30)}, false);
}

TEST(AmpKernels, ElementwiseAndPoolingRunInBf16) {
  const Tensor x = random_f32({2, 8, 6, 6}, 13);
  expect_bf16_close(make_node("Relu", 1), {x}, false);
  expect_bf16_close(make_node("Add", 2), {x, random_f32({2, 8, 6, 6}, 14)}, false);
  expect_bf16_close(make_node("Mul", 2), {x, random_f32({1, 8, 1, 1}, 15)}, false);
  // Pools run oneDNN's bf16 pooling (the loops took 20x as long on a ResNet stem's MaxPool).
  expect_bf16_close(make_node("MaxPool", 1, 1,
                              {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}),
                    {x});
  expect_bf16_close(make_node("MaxPool", 1, 1,
                              {{"kernel_shape", std::vector<int64_t>{3, 3}},
                               {"strides", std::vector<int64_t>{2, 2}},
                               {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                    {x});
  expect_bf16_close(
      make_node("AveragePool", 1, 1,
                {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      {x});
  expect_bf16_close(make_node("GlobalAveragePool", 1), {x}, false);
  expect_bf16_close(make_node("ReduceMean", 1, 1, {{"axes", std::vector<int64_t>{0, 2, 3}}}), {x}, false);
}

// A bf16 squeeze-excite block whose planes span several of the kernel's conversion chunks (2,304
// values a plain plane, 36,864 a block of 16 channels), plain and blocked, against f32.
TEST(AmpKernels, SqueezeExciteBf16OverSeveralChunksMatchesF32) {
  for (int64_t blocked : {0, 1}) {
    SCOPED_TRACE("blocked " + std::to_string(blocked));
    ir::Node node = make_node("FusedSqueezeExcite", 5, 1,
                              {{"post_ops", std::vector<std::string>{"Relu", "Sigmoid"}},
                               {"src_blocked", blocked},
                               {"dst_blocked", blocked},
                               {"layout_block", int64_t{16}}});
    node.domain = ops::kFusedDomain;
    expect_bf16_close(node,
                      {random_f32({1, 32, 48, 48}, 11), random_f32({8, 32, 1, 1}, 12), random_f32({8}, 13),
                       random_f32({32, 8, 1, 1}, 14), random_f32({32}, 15)},
                      false);
  }
}

}  // namespace
}  // namespace ms::test
