// Narrow-type Cast/CastLike and the quantization kernels (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv) against values
// computed with numpy/ml_dtypes and onnx.reference, plus their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "engine/backends/cpu/byte_transpose.h"
#include "engine/core/narrow.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;

constexpr int64_t kOpset = 25;

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = {}, size_t outputs = 1) {
  const ir::Node node = test::make_node(op, inputs.size(), outputs, std::move(attrs));
  auto r = test::run_kernel(node, inputs, kOpset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r ? *r : std::vector<Tensor>{};
}

std::string error_of(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = {}, size_t outputs = 1) {
  const ir::Node node = test::make_node(op, inputs.size(), outputs, std::move(attrs));
  auto r = test::run_kernel(node, inputs, kOpset);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

// A narrow tensor from its element codes.
Tensor codes(DType t, const std::vector<uint8_t>& c, const Shape& shape) {
  Tensor out = Tensor::empty(t, shape);
  for (size_t i = 0; i < c.size(); ++i) out.data<uint8_t>()[i] = c[i];
  return out;
}

std::vector<uint8_t> codes_of(const Tensor& t) {
  const auto* p = t.data<uint8_t>();
  return std::vector<uint8_t>(p, p + t.numel());
}

Tensor narrow_ints(DType t, const std::vector<int>& v, const Shape& shape) {
  Tensor out = Tensor::empty(t, shape);
  for (size_t i = 0; i < v.size(); ++i) out.data<uint8_t>()[i] = narrow::from_int(t, v[i]);
  return out;
}

int64_t onnx_type(DType t) { return dtype_to_onnx(t); }

// --- Cast / CastLike ---------------------------------------------------------------------------------

TEST(NarrowCast, Float8SaturateAndNoSaturate) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({0.4789f, 1e6f, -inf, nan, 0.001f, -300.f}, {6});
  auto sat = run("Cast", {x}, {{"to", onnx_type(DType::F8E4M3FN)}});
  ASSERT_EQ(sat[0].dtype(), DType::F8E4M3FN);
  EXPECT_EQ(codes_of(sat[0]), (std::vector<uint8_t>{47, 126, 254, 127, 1, 249}));  // ml_dtypes saturate_cast
  auto raw = run("Cast", {x}, {{"to", onnx_type(DType::F8E5M2)}, {"saturate", int64_t{0}}});
  EXPECT_EQ(codes_of(raw[0]), (std::vector<uint8_t>{56, 124, 252, 126, 20, 221}));  // 1e6 -> inf
  // Round trip back to f32 gives the representable values.
  auto back = run("Cast", {sat[0]}, {{"to", onnx_type(DType::F32)}});
  const auto v = test::values_of(back[0]);
  EXPECT_EQ(v[0], 0.46875);
  EXPECT_EQ(v[1], 448.0);
  EXPECT_EQ(v[2], -448.0);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[5], -288.0);
}

TEST(NarrowCast, Int4FromFloatAndIntegers) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Floats truncate; out of range and NaN give 0 (ml_dtypes).
  auto f =
      run("Cast", {Tensor::from_vector<float>({-9, -8, 7, 8, 2.7f, -2.7f, nan}, {7})}, {{"to", onnx_type(DType::I4)}});
  EXPECT_EQ(test::values_of(f[0]), (std::vector<double>{0, -8, 7, 0, 2, -2, 0}));
  // Integers wrap to the low bits.
  auto i = run("Cast", {Tensor::from_vector<int32_t>({300, -9, 15}, {3})}, {{"to", onnx_type(DType::I4)}});
  EXPECT_EQ(test::values_of(i[0]), (std::vector<double>{-4, 7, -1}));
  // int4 -> uint8 -> int4 round trip through CastLike.
  const Tensor s = narrow_ints(DType::I4, {-8, -1, 0, 7}, {4});
  auto u = run("Cast", {s}, {{"to", onnx_type(DType::I8)}});
  EXPECT_EQ(test::values_of(u[0]), (std::vector<double>{-8, -1, 0, 7}));
  auto again = run("CastLike", {u[0], narrow_ints(DType::I4, {0}, {1})});
  EXPECT_EQ(codes_of(again[0]), codes_of(s));
}

TEST(NarrowCast, E8M0RoundModesAndFloat4) {
  const Tensor x = Tensor::from_vector<float>({1.1f, 1.6f, 0.3f}, {3});
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> modes{
      {"up", {128, 128, 126}}, {"down", {127, 127, 125}}, {"nearest", {127, 128, 125}}};
  for (const auto& [mode, want] : modes) {
    auto y = run("Cast", {x}, {{"to", onnx_type(DType::F8E8M0)}, {"round_mode", mode}});
    EXPECT_EQ(codes_of(y[0]), want) << mode;
  }
  // float4 e2m1 always saturates; NaN becomes -0 (code 8) as in ml_dtypes.
  auto f4 = run("Cast", {Tensor::from_vector<float>({0.48f, 9.f, -3.5f, std::nanf("")}, {4})},
                {{"to", onnx_type(DType::F4E2M1)}});
  EXPECT_EQ(test::values_of(f4[0]), (std::vector<double>{0.5, 6, -4, 0}));
  EXPECT_EQ(codes_of(f4[0])[3], 8);
  EXPECT_NE(error_of("Cast", {x}, {{"to", onnx_type(DType::F8E8M0)}, {"round_mode", std::string("sideways")}})
                .find("round_mode"),
            std::string::npos);
}

// --- QuantizeLinear / DequantizeLinear -------------------------------------------------------------

TEST(QuantizeLinear, PerAxisUint8) {
  const Tensor x = Tensor::from_vector<float>({-1.f, 0.5f, 2.f, 10.f, -3.3f, 1.25f}, {2, 3});
  const Tensor s = Tensor::from_vector<float>({0.5f, 0.25f, 2.f}, {3});
  const Tensor z = Tensor::from_vector<uint8_t>({128, 10, 3}, {3});
  auto y = run("QuantizeLinear", {x, s, z}, {{"axis", int64_t{1}}});
  ASSERT_EQ(y[0].dtype(), DType::U8);
  EXPECT_EQ(test::values_of(y[0]), (std::vector<double>{126, 12, 4, 148, 0, 4}));
}

// The per-tensor loops (one scale and zero point: the fast path, a clone per instruction set)
// against the general per-axis loop given the same scale twice: ties to even, saturation,
// negatives (NaN, which ONNX leaves unspecified, goes to the low end there), over more values than one vector and a
// remainder, uint8 and int8, both ways.
TEST(QuantizeLinear, PerTensorLoopsEqualTheGeneralLoop) {
  constexpr int64_t n = 1003;
  std::vector<float> v(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) v[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i % 2007 - 1003);
  v[8] = 1e9f;
  v[9] = -1e9f;
  const Tensor x = Tensor::from_vector<float>(v, {2, n});
  const Tensor s1 = Tensor::from_vector<float>({0.5f}, {1});
  const Tensor s2 = Tensor::from_vector<float>({0.5f, 0.5f}, {2});
  for (DType zt : {DType::U8, DType::I8}) {
    SCOPED_TRACE(dtype_name(zt));
    const Tensor z1 =
        zt == DType::U8 ? Tensor::from_vector<uint8_t>({131}, {1}) : Tensor::from_vector<int8_t>({-3}, {1});
    const Tensor z2 =
        zt == DType::U8 ? Tensor::from_vector<uint8_t>({131, 131}, {2}) : Tensor::from_vector<int8_t>({-3, -3}, {2});
    const auto fast = run("QuantizeLinear", {x, s1.reshaped({}), z1.reshaped({})});
    const auto general = run("QuantizeLinear", {x, s2, z2}, {{"axis", int64_t{0}}});
    ASSERT_EQ(fast.size(), 1u);
    ASSERT_EQ(general.size(), 1u);
    EXPECT_EQ(test::values_of(fast[0]), test::values_of(general[0]));
    const auto back = run("DequantizeLinear", {fast[0], s1.reshaped({}), z1.reshaped({})});
    const auto back_general = run("DequantizeLinear", {fast[0], s2, z2}, {{"axis", int64_t{0}}});
    EXPECT_EQ(test::values_of(back[0]), test::values_of(back_general[0]));
  }
}

TEST(DequantizeLinear, PerAxisLoopsMatchTheDefinition) {
  // Per-channel weights: one scale and zero point per index of the axis, along the last axis (the
  // matmuls' per-column weights), the first and a middle one; y = (x - zp) * scale, in float.
  const Shape shape{3, 5, 17};
  for (DType xt : {DType::U8, DType::I8}) {
    for (int64_t axis : {int64_t{0}, int64_t{1}, int64_t{-1}}) {
      SCOPED_TRACE(std::string(dtype_name(xt)) + " axis " + std::to_string(axis));
      const int64_t a = axis < 0 ? axis + 3 : axis, dim = shape[static_cast<size_t>(a)];
      std::vector<double> xv(static_cast<size_t>(numel(shape))), zv(static_cast<size_t>(dim));
      std::vector<float> sv(static_cast<size_t>(dim));
      for (size_t i = 0; i < xv.size(); ++i)
        xv[i] = static_cast<double>((i * 29 + 3) % 256) - (xt == DType::I8 ? 128 : 0);
      for (int64_t d = 0; d < dim; ++d) {
        zv[static_cast<size_t>(d)] = static_cast<double>(d * 37 % 200) - (xt == DType::I8 ? 100 : 0);
        sv[static_cast<size_t>(d)] = 0.013f * static_cast<float>(d + 1) + 1e-7f;
      }
      const auto eight_bit = [&](const std::vector<double>& v, const Shape& sh) {
        if (xt == DType::U8) return Tensor::from_vector<uint8_t>(std::vector<uint8_t>(v.begin(), v.end()), sh);
        return Tensor::from_vector<int8_t>(std::vector<int8_t>(v.begin(), v.end()), sh);
      };
      const Tensor x = eight_bit(xv, shape);
      const Tensor z = eight_bit(zv, {dim});
      const auto y = run("DequantizeLinear", {x, Tensor::from_vector<float>(sv, {dim}), z}, {{"axis", axis}});
      ASSERT_EQ(y.size(), 1u);
      const auto got = test::values_of(y[0]);
      const int64_t inner = a == 2 ? 1 : a == 1 ? shape[2] : shape[1] * shape[2];
      for (size_t i = 0; i < xv.size(); ++i) {
        const auto d = static_cast<size_t>((static_cast<int64_t>(i) / inner) % dim);
        const auto want = static_cast<float>((xv[i] - zv[d]) * static_cast<double>(sv[d]));
        ASSERT_EQ(got[i], want) << i;
      }
    }
  }
}

TEST(QuantizeLinear, BlockedInt8AndInt4) {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, -1, -2, -3, -40}, {2, 4});
  const Tensor s = Tensor::from_vector<float>({0.5f, 2.f, 1.f, 4.f}, {2, 2});
  auto y = run("QuantizeLinear", {x, s},
               {{"axis", int64_t{1}}, {"block_size", int64_t{2}}, {"output_dtype", onnx_type(DType::I8)}});
  ASSERT_EQ(y[0].dtype(), DType::I8);
  EXPECT_EQ(test::values_of(y[0]), (std::vector<double>{2, 4, 2, 2, -1, -2, -1, -10}));
  auto q4 = run("QuantizeLinear", {Tensor::from_vector<float>({-20, -3, 0, 3.5f, 2.5f, 40}, {6}), Tensor::scalar(1.f),
                                   narrow_ints(DType::I4, {1}, {})});
  ASSERT_EQ(q4[0].dtype(), DType::I4);
  EXPECT_EQ(test::values_of(q4[0]), (std::vector<double>{-8, -2, 1, 5, 3, 7}));  // round half to even, clip
}

TEST(DequantizeLinear, Int4PerAxisAndFloat8) {
  const Tensor x = narrow_ints(DType::I4, {-8, 7, 3, 0, -1, 5}, {2, 3});
  auto y =
      run("DequantizeLinear", {x, Tensor::from_vector<float>({0.5f, 2.f}, {2}), narrow_ints(DType::I4, {1, -2}, {2})},
          {{"axis", int64_t{0}}});
  ASSERT_EQ(y[0].dtype(), DType::F32);
  EXPECT_EQ(test::values_of(y[0]), (std::vector<double>{-4.5, 3, 1, 4, 2, 14}));
  // e4m3fn code 0x48 = 4.0, times 0.5, as f16.
  auto h = run("DequantizeLinear", {codes(DType::F8E4M3FN, {0x48}, {1}), Tensor::scalar(f16(0.5f))});
  ASSERT_EQ(h[0].dtype(), DType::F16);
  EXPECT_EQ(test::values_of(h[0]), (std::vector<double>{2.0}));
}

TEST(QuantizeLinear, Errors) {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_NE(
      error_of("QuantizeLinear", {x, Tensor::from_vector<float>({1, 2}, {2})}, {{"axis", int64_t{1}}}).find("y_scale"),
      std::string::npos);
  EXPECT_NE(
      error_of("QuantizeLinear", {x, Tensor::from_vector<float>({1, 2, 3}, {3})}, {{"axis", int64_t{2}}}).find("axis"),
      std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {x, Tensor::scalar(1.f), Tensor::scalar(uint8_t{0})},
                     {{"output_dtype", onnx_type(DType::I8)}})
                .find("output_dtype"),
            std::string::npos);
  EXPECT_NE(error_of("QuantizeLinear", {x, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})},
                     {{"axis", int64_t{1}}, {"block_size", int64_t{1}}})
                .find("block"),
            std::string::npos);
  EXPECT_NE(error_of("DequantizeLinear",
                     {Tensor::from_vector<uint8_t>({1}, {1}), Tensor::scalar(1.f), Tensor::scalar(int8_t{0})})
                .find("x_zero_point"),
            std::string::npos);
}

// Past one block of the parallel range scan (16,384 values): the range's ends in different blocks
// and in the tail, a NaN left out of the range and quantized to 0, against the formula in float.
TEST(DynamicQuantizeLinear, LargeTensorAcrossBlocksMatchesTheFormula) {
  constexpr int64_t n = 50001;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.001f * static_cast<float>((i * 7919) % 4001 - 1500);
  v[20000] = 9.5f;    // the maximum, in the second block
  v[n - 1] = -4.25f;  // the minimum, in the tail
  v[123] = std::numeric_limits<float>::quiet_NaN();
  auto y = run("DynamicQuantizeLinear", {Tensor::from_vector<float>(v, {n})}, {}, 3);
  ASSERT_EQ(y.size(), 3u);
  const float scale = (9.5f - -4.25f) / 255.0f;
  const float zp = std::nearbyint(std::clamp(0.0f - -4.25f / scale, 0.0f, 255.0f));
  EXPECT_EQ(static_cast<float>(test::value_at(y[1], 0)), scale);
  EXPECT_EQ(test::value_at(y[2], 0), zp);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = v[static_cast<size_t>(i)];
    const float want = std::isnan(x) ? 0.f : std::clamp(std::nearbyint(x / scale) + zp, 0.f, 255.f);
    bad += test::value_at(y[0], i) != want;
  }
  EXPECT_EQ(bad, 0);
}

TEST(DynamicQuantizeLinear, ScaleZeroPointAndValues) {
  auto y = run("DynamicQuantizeLinear", {Tensor::from_vector<float>({-1.f, 0.5f, 2.f, 3.1f}, {4})}, {}, 3);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(test::values_of(y[0]), (std::vector<double>{0, 93, 186, 255}));
  EXPECT_FLOAT_EQ(static_cast<float>(test::value_at(y[1], 0)), 0.01607843115925789f);
  EXPECT_EQ(test::value_at(y[2], 0), 62);
}

// --- integer matmul / conv ---------------------------------------------------------------------------

TEST(IntegerMatMul, MatMulIntegerAndQLinearMatMul) {
  const Tensor a = Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = Tensor::from_vector<uint8_t>({7, 8, 9, 10, 11, 12}, {3, 2});
  auto y = run("MatMulInteger", {a, b, Tensor::scalar(uint8_t{1}), Tensor::from_vector<uint8_t>({2, 3}, {2})});
  ASSERT_EQ(y[0].dtype(), DType::I32);
  EXPECT_EQ(test::values_of(y[0]), (std::vector<double>{25, 25, 88, 88}));
  const Tensor qa = Tensor::from_vector<int8_t>({10, -20, 30, 0, 5, -7}, {2, 3});
  const Tensor qb = Tensor::from_vector<int8_t>({1, 2, 3, -4, 5, 6}, {3, 2});
  auto q = run("QLinearMatMul", {qa, Tensor::scalar(0.1f), Tensor::scalar(int8_t{2}), qb, Tensor::scalar(0.2f),
                                 Tensor::scalar(int8_t{-1}), Tensor::scalar(0.05f), Tensor::scalar(int8_t{3})});
  ASSERT_EQ(q[0].dtype(), DType::I8);
  EXPECT_EQ(test::values_of(q[0]), (std::vector<double>{41, 117, -15, -28}));
  EXPECT_NE(error_of("MatMulInteger", {Tensor::from_vector<float>({1}, {1, 1}), b}).find("int8"), std::string::npos);
  EXPECT_NE(error_of("MatMulInteger", {a, a}).find("inner dims"), std::string::npos);
}

TEST(IntegerConv, ConvIntegerAndQLinearConv) {
  std::vector<uint8_t> xs(16);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<uint8_t>(i);
  const Tensor x = Tensor::from_vector<uint8_t>(xs, {1, 1, 4, 4});
  const Tensor w = Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 1, 2, 2});
  const Attrs geo{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}};
  auto y = run("ConvInteger", {x, w, Tensor::scalar(uint8_t{3}), Tensor::from_vector<uint8_t>({1, 2}, {2})}, geo);
  ASSERT_EQ(y[0].shape(), (Shape{1, 2, 3, 3}));
  EXPECT_EQ(test::values_of(y[0]),
            (std::vector<double>{-9, -7, 0, 16, 36, 16, 9, 11, 0, -18, -16, 0, 34, 90, 52, 36, 74, 36}));
  const Tensor ws = Tensor::from_vector<int8_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 1, 2, 2});
  auto q = run("QLinearConv",
               {x, Tensor::scalar(0.5f), Tensor::scalar(uint8_t{3}), ws, Tensor::from_vector<float>({0.1f, 0.3f}, {2}),
                Tensor::from_vector<int8_t>({1, 2}, {2}), Tensor::scalar(0.7f), Tensor::scalar(uint8_t{100}),
                Tensor::from_vector<int32_t>({5, -50}, {2})},
               geo);
  ASSERT_EQ(q[0].dtype(), DType::U8);
  EXPECT_EQ(test::values_of(q[0]),
            (std::vector<double>{100, 100, 100, 102, 103, 102, 101, 101, 100, 85, 86, 89, 97, 109, 100, 97, 105, 97}));
  EXPECT_NE(error_of("ConvInteger", {x, Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {1, 2, 2})}).find("rank"),
            std::string::npos);
  EXPECT_NE(error_of("ConvInteger", {x, Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2})})
                .find("channels"),
            std::string::npos);
}

// int8 weights without zero points take oneDNN's int8 convolution where the CPU has one; either way
// the result must equal a naive int32 conv requantized in double.
// Byte transposes (the int8 kernels' channels-first <-> channels-last moves) against a naive one:
// whole 16x16 blocks, edges past them, matrices narrower than a block, a batch.
TEST(ByteTranspose, MatchesTheNaiveTranspose) {
  for (const auto& [batch, rows, cols] : std::vector<std::array<int64_t, 3>>{
           {1, 16, 16}, {1, 64, 3136}, {2, 37, 53}, {3, 3, 1000}, {1, 1000, 3}, {1, 15, 17}, {2, 128, 49}}) {
    SCOPED_TRACE(std::to_string(batch) + "x" + std::to_string(rows) + "x" + std::to_string(cols));
    std::vector<uint8_t> src(static_cast<size_t>(batch * rows * cols)), dst(src.size());
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + i / 7);
    cpu::transpose_bytes(src.data(), dst.data(), batch, rows, cols);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(dst[static_cast<size_t>((b * cols + c) * rows + r)],
                    src[static_cast<size_t>((b * rows + r) * cols + c)])
              << b << "," << r << "," << c;
        }
  }
}

// One QLinearConv case through the kernel against int32 loops written here; the kernel's impl.
struct QConvCase {
  int64_t batch = 1, c = 8, h = 9, m = 12, k = 3, group = 1, stride = 1, dilation = 1;
  std::vector<int64_t> pads{1, 1, 1, 1};  // top, left, bottom, right
  int past127_every = 2;                  // about one activation in this many is past 127
};

std::string check_qlinear_conv(const QConvCase& t) {
  const int64_t C = t.c, H = t.h, M = t.m, K = t.k, cg = C / t.group, mg = M / t.group;
  std::vector<uint8_t> xs(static_cast<size_t>(t.batch * C * H * H));
  std::vector<int8_t> ws(static_cast<size_t>(M * cg * K * K));
  for (size_t i = 0; i < xs.size(); ++i) {
    const auto v = static_cast<uint8_t>((i * 37 + 11) % 128);
    xs[i] = (i * 7919) % static_cast<size_t>(t.past127_every) == 0 ? static_cast<uint8_t>(128 + v) : v;
  }
  // The whole int8 range, -128 and 127 included.
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = static_cast<int8_t>(static_cast<int>((i * 53 + 7) % 256) - 128);
  const int32_t zx = 7, zy = 120;
  const float sx = 0.02f, sw = 0.003f, sy = 0.5f;
  const ir::Node node = test::make_node("QLinearConv", 8, 1,
                                        {{"pads", t.pads},
                                         {"group", t.group},
                                         {"strides", std::vector<int64_t>{t.stride, t.stride}},
                                         {"dilations", std::vector<int64_t>{t.dilation, t.dilation}}});
  auto r = test::run_kernel_full(
      node,
      {Tensor::from_vector<uint8_t>(xs, {t.batch, C, H, H}), Tensor::scalar(sx), Tensor::scalar(uint8_t{zx}),
       Tensor::from_vector<int8_t>(ws, {M, cg, K, K}), Tensor::scalar(sw), Tensor::scalar(int8_t{0}),
       Tensor::scalar(sy), Tensor::scalar(uint8_t{zy})},
      kOpset);
  EXPECT_TRUE(r) << r.status().message();
  if (!r) return "";
  const int64_t ext = (K - 1) * t.dilation + 1;
  const int64_t OH = (H + t.pads[0] + t.pads[2] - ext) / t.stride + 1;
  const int64_t OW = (H + t.pads[1] + t.pads[3] - ext) / t.stride + 1;
  const Tensor& y = r->outputs[0];
  EXPECT_EQ(y.shape(), (Shape{t.batch, M, OH, OW}));
  const double mult = static_cast<double>(static_cast<float>(sx * sw) / sy);
  const auto got = test::values_of(y);
  int64_t wrong = 0;
  for (int64_t n = 0; n < t.batch; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int32_t acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < K; ++kh)
              for (int64_t kw = 0; kw < K; ++kw) {
                const int64_t ih = oh * t.stride + kh * t.dilation - t.pads[0];
                const int64_t iw = ow * t.stride + kw * t.dilation - t.pads[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= H) continue;
                const int64_t ic = (m / mg) * cg + c;
                acc += (xs[static_cast<size_t>(((n * C + ic) * H + ih) * H + iw)] - zx) *
                       ws[static_cast<size_t>(((m * cg + c) * K + kh) * K + kw)];
              }
          const double want = std::clamp(std::nearbyint(acc * mult + zy), 0.0, 255.0);
          if (got[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] != want && wrong++ < 3)
            ADD_FAILURE() << "y[" << n << "," << m << "," << oh << "," << ow
                          << "] = " << got[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] << ", want " << want;
        }
  EXPECT_EQ(wrong, 0);
  return r->impl;
}

// oneDNN's int8 convs on a CPU without VNNI add pairs of u8 x s8 products in a saturating int16.
bool int8_pairs_saturate_here() { return __builtin_cpu_supports("avx2") && !__builtin_cpu_supports("avx512vnni"); }

TEST(IntegerConv, Int8WeightsMatchNaive) {
  // Half the activations past 127 and 64 channels x 3x3 a sum: the weights run in two halves (each
  // pair of products within int16), not the int32 loops (~60x slower on ResNet-18's convs).
  QConvCase wide;
  wide.c = 64;
  wide.m = 16;
  const std::string impl = check_qlinear_conv(wide);
  if (int8_pairs_saturate_here() && impl.find("vnni") == std::string::npos) {
    EXPECT_NE(impl.find("int8-halves"), std::string::npos) << impl;
  }
}

TEST(IntegerConv, FewTermsASumRunAsAnExactFloatConv) {
  // At most 514 products a sum (ResNet's stem: 3 channels x 7x7) keep every partial sum an integer
  // below 2^24: oneDNN's f32 conv gives the int32 sums exactly, whatever the activations.
  QConvCase stem;  // 3 channels, 7x7, stride 2, pad 3
  stem.c = 3;
  stem.h = 20;
  stem.k = 7;
  stem.stride = 2;
  stem.pads = {3, 3, 3, 3};
  QConvCase edge = stem;  // 10 x 7 x 7 = 490 terms, a batch of 2, uneven pads, dilation 2
  edge.c = 10;
  edge.batch = 2;
  edge.dilation = 2;
  edge.pads = {1, 0, 2, 3};
  for (const QConvCase& t : {stem, edge}) {
    SCOPED_TRACE("channels " + std::to_string(t.c));
    const std::string impl = check_qlinear_conv(t);
    if (int8_pairs_saturate_here() && impl.find("vnni") == std::string::npos) {
      EXPECT_NE(impl.find("int8-as-exact-f32"), std::string::npos) << impl;
    }
  }
}

TEST(IntegerConv, FewActivationsPast127RunOnePassAndACorrection) {
  // A ReLU's activations quantized with zero point 0: few past 127. One pass over min(x, 127)
  // (pairs of products then within int16 whatever the weights) and the rest added back exactly.
  QConvCase plain;
  plain.past127_every = 29;
  QConvCase strided = plain;  // stride 2, dilation 2, uneven pads, a batch of 2
  strided.batch = 2;
  strided.h = 13;
  strided.stride = 2;
  strided.dilation = 2;
  strided.pads = {2, 0, 1, 3};
  QConvCase grouped = plain;
  grouped.group = 2;
  grouped.c = 16;
  grouped.m = 16;
  QConvCase depthwise = plain;
  depthwise.group = depthwise.c = depthwise.m = 16;
  QConvCase pointwise = plain;  // 1x1 stride 2, as ResNet's downsample
  pointwise.k = 1;
  pointwise.stride = 2;
  pointwise.pads = {0, 0, 0, 0};
  pointwise.c = 32;
  for (const QConvCase& t : {plain, strided, grouped, depthwise, pointwise}) {
    SCOPED_TRACE("group " + std::to_string(t.group) + " k " + std::to_string(t.k) + " stride " +
                 std::to_string(t.stride));
    const std::string impl = check_qlinear_conv(t);
    if (int8_pairs_saturate_here() && impl.rfind("onednn:jit", 0) == 0) {
      EXPECT_NE(impl.find("int8-cut127"), std::string::npos) << impl;
    }
  }
}

}  // namespace
}  // namespace ms
