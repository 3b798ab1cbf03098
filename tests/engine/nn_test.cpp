// CPU nn kernels against naive references; f32 (oneDNN) and f64 (reference loops) on the same cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "engine/backends/cpu/sgemm_packed.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/fused.h"
#include "tests/engine/nn_test_util.h"

namespace ms::test::nn {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
using std::vector;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// The vector widths this CPU runs (4, 8 and 16 floats): the dispatched kernels (matrix-vector
// products, global pools) are capped to each in turn, so one machine checks every path it can.
vector<int> simd_widths() {
  vector<int> w;
  for (int width : {4, 8, 16})
    if (width <= ms::cpu::cpu_simd_width()) w.push_back(width);
  return w;
}

struct SimdWidthCap {
  explicit SimdWidthCap(int width) : old(ms::cpu::simd_width_cap().exchange(width)) {}
  ~SimdWidthCap() { ms::cpu::simd_width_cap().store(old); }
  int old;
};

// y = alpha op(A) op(B) [+ 2 C] in double.
vector<double> reference_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor* c, int64_t m, int64_t n,
                              int64_t k, double alpha = 1.0) {
  vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        acc += a.at_double(ta ? kk * m + i : i * k + kk) * b.at_double(tb ? j * k + kk : kk * n + j);
      want[static_cast<size_t>(i * n + j)] = alpha * acc + (c ? 2.0 * c->at_double(j) : 0.0);
    }
  return want;
}

void global_pools_match_the_reference();
void few_rows_run_as_matrix_vector_products();

TEST(NnConv, GroupedStridedDilatedPaddedMatchesNaive) {
  const Attrs attrs{{"group", int64_t{2}},
                    {"strides", vector<int64_t>{2, 1}},
                    {"dilations", vector<int64_t>{1, 2}},
                    {"pads", vector<int64_t>{1, 0, 2, 1}}};
  const Conv2dSpec spec{2, 2, 1, 1, 2, 1, 0};
  for (DType t : {DType::F32, DType::F64}) {
    const Tensor x = random_tensor(t, {2, 4, 7, 6}, 1), w = random_tensor(t, {6, 2, 3, 2}, 2);
    const Tensor b = random_tensor(t, {6}, 3);
    auto r = run_kernel_full(make_node("Conv", 3, 1, attrs), {x, w, b});
    ASSERT_TRUE(r.has_value()) << r.status().message();
    const Tensor& y = r->outputs[0];
    // H: (7 + 1 + 2 - 3) / 2 + 1 = 4; W: (6 + 0 + 1 - 3) / 1 + 1 = 5.
    EXPECT_EQ(y.shape(), (Shape{2, 6, 4, 5}));
    expect_close(y, naive_conv2d(x, w, &b, y.shape(), spec), 1e-5, 1e-4, std::string(dtype_name(t)));
    if (t == DType::F32) {
      EXPECT_TRUE(starts_with(r->impl, "onednn:")) << r->impl;
    } else
      EXPECT_EQ(r->impl, "ref");
  }
}

TEST(NnConv, AutoPadSameLowerPutsExtraPaddingFirst) {
  const Attrs attrs{{"auto_pad", std::string("SAME_LOWER")}, {"strides", vector<int64_t>{2, 2}}};
  for (DType t : {DType::F32, DType::F64}) {
    const Tensor x = random_tensor(t, {1, 1, 6, 6}, 4), w = random_tensor(t, {1, 1, 4, 4}, 5);
    auto y = run_kernel(make_node("Conv", 2, 1, attrs), {x, w});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    // out = ceil(6/2) = 3; total pad = (3-1)*2 + 4 - 6 = 2; SAME_LOWER: 1 before, 1 after.
    ASSERT_EQ((*y)[0].shape(), (Shape{1, 1, 3, 3}));
    expect_close((*y)[0], naive_conv2d(x, w, nullptr, {1, 1, 3, 3}, {1, 2, 2, 1, 1, 1, 1}), 1e-5, 1e-4, "same_lower");
  }
}

TEST(NnConv, F16AndThreeSpatialAxesAgreeWithF32) {
  const Tensor x = random_tensor(DType::F32, {1, 2, 4, 5, 3}, 6), w = random_tensor(DType::F32, {3, 2, 2, 3, 2}, 7);
  const Attrs attrs{{"pads", vector<int64_t>{1, 1, 0, 0, 1, 1}}};
  auto f32 = run_kernel(make_node("Conv", 2, 1, attrs), {x, w});
  ASSERT_TRUE(f32.has_value()) << f32.status().message();
  auto f64 = run_kernel(make_node("Conv", 2, 1, attrs),
                        {make(DType::F64, x.shape(), values_of(x)), make(DType::F64, w.shape(), values_of(w))});
  ASSERT_TRUE(f64.has_value()) << f64.status().message();
  expect_close((*f32)[0], values_of((*f64)[0]), 1e-5, 1e-4, "3-D conv f32 vs f64");
  auto f16 = run_kernel(make_node("Conv", 2, 1, attrs),
                        {make(DType::F16, x.shape(), values_of(x)), make(DType::F16, w.shape(), values_of(w))});
  ASSERT_TRUE(f16.has_value()) << f16.status().message();
  expect_close((*f16)[0], values_of((*f64)[0]), 2e-2, 2e-2, "3-D conv f16 vs f64");
}

TEST(NnConv, TransposeMatchesScatterReference) {
  const Attrs attrs{{"strides", vector<int64_t>{2, 3}},
                    {"group", int64_t{2}},
                    {"output_padding", vector<int64_t>{1, 0}},
                    {"pads", vector<int64_t>{0, 1, 1, 0}},
                    {"dilations", vector<int64_t>{1, 2}}};
  const int64_t c = 4, m = 6, g = 2, h = 3, wd = 4, kh = 3, kw = 2;
  // oh = 2*(3-1) + 1 + 3 - 0 - 1 = 7; ow = 3*(4-1) + 0 + (2-1)*2+1 - 1 - 0 = 11.
  const Shape out{1, m, 7, 11};
  for (DType t : {DType::F32, DType::F64}) {
    const Tensor x = random_tensor(t, {1, c, h, wd}, 8), w = random_tensor(t, {c, m / g, kh, kw}, 9);
    auto r = run_kernel_full(make_node("ConvTranspose", 2, 1, attrs), {x, w});
    ASSERT_TRUE(r.has_value()) << r.status().message();
    ASSERT_EQ(r->outputs[0].shape(), out);
    vector<double> want(static_cast<size_t>(numel(out)), 0.0);
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ol = 0; ol < m / g; ++ol)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < wd; ++j)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t oi = i * 2 - 0 + a, oj = j * 3 - 1 + e * 2, oc = (ic / (c / g)) * (m / g) + ol;
                if (oi < 0 || oi >= 7 || oj < 0 || oj >= 11) continue;
                want[static_cast<size_t>((oc * 7 + oi) * 11 + oj)] +=
                    x.at_double((ic * h + i) * wd + j) * w.at_double(((ic * (m / g) + ol) * kh + a) * kw + e);
              }
    expect_close(r->outputs[0], want, 1e-5, 1e-4, std::string("convtranspose ") + std::string(dtype_name(t)));
  }
}

TEST(NnPool, MaxPoolIndicesRowAndColumnMajor) {
  // One 3x3 plane in the second channel; 2x2 window, stride 1.
  const Tensor x = make(DType::F32, {1, 2, 3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9, 2, 3, 4, 5, 8, 7, 6});
  for (int64_t order : {0, 1}) {
    const Attrs attrs{{"kernel_shape", vector<int64_t>{2, 2}}, {"storage_order", order}};
    auto y = run_kernel(make_node("MaxPool", 1, 2, attrs), {x});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    expect_close((*y)[0], {0, 0, 0, 0, 9, 9, 8, 7}, 0, 0, "max");
    // Maxima of channel 1 at (0,1), (0,1), (2,0), (2,1); plane offset 9.
    const vector<double> row{9 + 1, 9 + 1, 9 + 6, 9 + 7}, col{9 + 3, 9 + 3, 9 + 2, 9 + 5};
    const vector<double> got = values_of((*y)[1]);
    EXPECT_EQ(vector<double>(got.begin() + 4, got.end()), order == 0 ? row : col) << "storage_order " << order;
  }
}

TEST(NnPool, AveragePoolCeilModeAndCountIncludePad) {
  const Tensor x = make(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // ceil_mode: (3 + 1 - 2) / 2 ceil + 1 = 2 windows per axis; count_include_pad counts the 1 pad cell
  // but not cells past the pads.
  const Attrs attrs{{"kernel_shape", vector<int64_t>{2, 2}},
                    {"strides", vector<int64_t>{2, 2}},
                    {"pads", vector<int64_t>{1, 1, 0, 0}},
                    {"ceil_mode", int64_t{1}},
                    {"count_include_pad", int64_t{1}}};
  auto y = run_kernel(make_node("AveragePool", 1, 1, attrs), {x});
  ASSERT_TRUE(y.has_value()) << y.status().message();
  ASSERT_EQ((*y)[0].shape(), (Shape{1, 1, 2, 2}));
  expect_close((*y)[0], {1.0 / 4, (2 + 3) / 4.0, (4 + 7) / 4.0, (5 + 6 + 8 + 9) / 4.0}, 1e-6, 1e-6, "avg");
  auto g = run_kernel(make_node("GlobalMaxPool", 1), {x});
  ASSERT_TRUE(g.has_value());
  expect_close((*g)[0], {9}, 0, 0, "global max");
}

// A plain 4-D f32 MaxPool (ResNet's stem pool: 3x3, stride 2, pad 1, over channels that are not a
// multiple of the block) runs oneDNN's jit pooling on the blocked layout with reorders at its edges,
// not its plain-layout loop (simple_nchw: 7.6 ms against ~0.3 on [1,64,112,112]); values as a naive max.
// f32 on the CPU's blocked layout; 8-bit (a QDQ model's pool, folded onto its 8-bit tensor) on
// channels last: oneDNN's jit int8 pooling, where plain nchw would get its reference loops.
template <class T> void plain_max_pool_matches(DType t, double offset) {
  const int64_t c = 20, h = 15;
  Tensor x = Tensor::empty(t, {1, c, h, h});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<T>()[i] = static_cast<T>(static_cast<double>((i * 37) % 101) + offset);
  const Attrs attrs{{"kernel_shape", vector<int64_t>{3, 3}},
                    {"strides", vector<int64_t>{2, 2}},
                    {"pads", vector<int64_t>{1, 1, 1, 1}}};
  auto y = run_kernel_full(make_node("MaxPool", 1, 1, attrs), {x});
  ASSERT_TRUE(y.has_value()) << y.status().message();
  const int64_t o = 8;
  ASSERT_EQ(y->outputs[0].shape(), (Shape{1, c, o, o}));
  ASSERT_EQ(y->outputs[0].dtype(), t);
  if (cpu::cpu_simd_width() >= 8) {
    EXPECT_NE(y->impl.find("jit"), std::string::npos) << y->impl;
  }
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < o; ++i)
      for (int64_t j = 0; j < o; ++j) {
        T m = std::numeric_limits<T>::lowest();
        for (int64_t a = 2 * i - 1; a <= 2 * i + 1; ++a)
          for (int64_t b = 2 * j - 1; b <= 2 * j + 1; ++b)
            if (a >= 0 && a < h && b >= 0 && b < h) m = std::max(m, x.data<T>()[(ch * h + a) * h + b]);
        ASSERT_EQ(y->outputs[0].data<T>()[(ch * o + i) * o + j], m) << ch << "," << i << "," << j;
      }
}

TEST(NnPool, PlainMaxPoolRunsTheJitPoolingOnBlockedChannels) {
  plain_max_pool_matches<float>(DType::F32, -50);
  plain_max_pool_matches<uint8_t>(DType::U8, 100);  // up to 200: past 127 too
  plain_max_pool_matches<int8_t>(DType::I8, -50);
}

// Global pools over planes of every length (a tail past the 16- and 32-float blocks, large planes
// split between threads) against a double-precision reference; a NaN makes the plane's maximum NaN.
TEST(NnPool, GlobalPoolsMatchTheReference) {
  for (int width : simd_widths()) {
    SCOPED_TRACE("vector width " + std::to_string(width));
    const SimdWidthCap cap(width);
    global_pools_match_the_reference();
  }
}

void global_pools_match_the_reference() {
  for (Shape shape : {Shape{2, 3, 7, 9}, Shape{1, 2, 1, 5}, Shape{1, 64, 40, 40}}) {
    const Tensor x = random_tensor(DType::F32, shape, 41);
    const int64_t planes = shape[0] * shape[1], size = x.numel() / planes;
    vector<double> mean(static_cast<size_t>(planes)), mx(static_cast<size_t>(planes));
    for (int64_t p = 0; p < planes; ++p) {
      double s = 0, m = -1e300;
      for (int64_t i = 0; i < size; ++i) {
        s += x.at_double(p * size + i);
        m = std::max(m, x.at_double(p * size + i));
      }
      mean[static_cast<size_t>(p)] = s / static_cast<double>(size);
      mx[static_cast<size_t>(p)] = m;
    }
    auto a = run_kernel(make_node("GlobalAveragePool", 1), {x});
    auto m = run_kernel(make_node("GlobalMaxPool", 1), {x});
    ASSERT_TRUE(a.has_value() && m.has_value());
    expect_close((*a)[0], mean, 1e-5, 1e-6, "global average " + shape_to_string(shape));
    expect_close((*m)[0], mx, 0, 0, "global max " + shape_to_string(shape));
  }
  Tensor x = random_tensor(DType::F32, {1, 2, 5, 7}, 42);
  x.data<float>()[40] = std::numeric_limits<float>::quiet_NaN();  // plane 1
  auto m = run_kernel(make_node("GlobalMaxPool", 1), {x});
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(std::isnan(value_at((*m)[0], 0)));
  EXPECT_TRUE(std::isnan(value_at((*m)[0], 1)));
}

TEST(NnMatMul, GemmTransposesAlphaBetaBroadcastC) {
  const Attrs attrs{{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}};
  for (DType t : {DType::F32, DType::F64}) {
    const Tensor a = random_tensor(t, {4, 3}, 10), b = random_tensor(t, {5, 4}, 11), c = random_tensor(t, {5}, 12);
    auto y = run_kernel(make_node("Gemm", 3, 1, attrs), {a, b, c});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    vector<double> want(15);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 4; ++k) acc += a.at_double(k * 3 + i) * b.at_double(j * 4 + k);
        want[static_cast<size_t>(i * 5 + j)] = 0.5 * acc + 2.0 * c.at_double(j);
      }
    expect_close((*y)[0], want, 1e-5, 1e-5, "gemm");
  }
}

// A few rows (batch-1 inference) run as matrix-vector products: every transpose, alpha and beta*C,
// widths that are not multiples of the 4-column or 16-column blocks, and products large enough to
// be shared between threads (by column blocks, or for weights stored [K, N] with few columns by
// rows of W); MatMul with a [K] or [m, K] A too.
TEST(NnMatMul, FewRowsRunAsMatrixVectorProducts) {
  for (int width : simd_widths()) {
    SCOPED_TRACE("vector width " + std::to_string(width));
    const SimdWidthCap cap(width);
    few_rows_run_as_matrix_vector_products();
  }
}

void few_rows_run_as_matrix_vector_products() {
  for (int64_t m : {1, 2, 3, 4})
    for (int64_t ta : {0, 1})
      for (int64_t tb : {0, 1})
        for (auto [k, n] : {std::pair<int64_t, int64_t>{7, 5}, {300, 203}, {1030, 37}}) {
          SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n) + " ta " +
                       std::to_string(ta) + " tb " + std::to_string(tb));
          const Attrs attrs{{"transA", ta}, {"transB", tb}, {"alpha", 0.5f}, {"beta", 2.0f}};
          const Tensor a = random_tensor(DType::F32, ta ? Shape{k, m} : Shape{m, k}, 20);
          const Tensor b = random_tensor(DType::F32, tb ? Shape{n, k} : Shape{k, n}, 21);
          const Tensor c = random_tensor(DType::F32, {n}, 22);
          auto y = run_kernel_full(make_node("Gemm", 3, 1, attrs), {a, b, c});
          ASSERT_TRUE(y.has_value()) << y.status().message();
          EXPECT_EQ(y->impl, "gemv");
          const vector<double> want = reference_gemm(a, ta, b, tb, &c, m, n, k, 0.5);
          expect_close(y->outputs[0], want, 1e-4, 1e-4, "gemm");
          if (ta || tb) continue;
          auto mm = run_kernel_full(make_node("MatMul", 2), {m == 1 ? a.reshaped({k}) : a, b});
          ASSERT_TRUE(mm.has_value()) << mm.status().message();
          EXPECT_EQ(mm->impl, "gemv");
          for (int64_t i = 0; i < m * n; ++i) {
            EXPECT_NEAR(value_at(mm->outputs[0], i), (want[static_cast<size_t>(i)] - 2.0 * c.at_double(i % n)) * 2.0,
                        1e-4);
          }
        }
}

// bf16 Gemm of a few rows with weights stored [N, K] (a bf16 Graph's classifier head): the bf16
// matrix-vector product, f32 sums, against the product of the same bf16 values in double; every
// vector width, odd K and N, shared between threads, with alpha and beta * C.
TEST(NnMatMul, FewBf16RowsRunAsMatrixVectorProducts) {
  for (int width : simd_widths()) {
    SCOPED_TRACE("vector width " + std::to_string(width));
    const SimdWidthCap cap(width);
    for (int64_t m : {1, 2, 3, 4})
      for (auto [k, n] : {std::pair<int64_t, int64_t>{7, 5}, {300, 203}, {1280, 1000}}) {
        SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n));
        const Tensor a = to_bf16(random_tensor(DType::F32, {m, k}, 60));
        const Tensor b = to_bf16(random_tensor(DType::F32, {n, k}, 61));
        const Tensor c = to_bf16(random_tensor(DType::F32, {n}, 62));
        const Attrs attrs{{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}};
        auto y = run_kernel_full(make_node("Gemm", 3, 1, attrs), {a, b, c});
        ASSERT_TRUE(y.has_value()) << y.status().message();
        EXPECT_EQ(y->impl, "gemv:bf16");
        ASSERT_EQ(y->outputs[0].dtype(), DType::BF16);
        const vector<double> want = reference_gemm(a, false, b, true, &c, m, n, k, 0.5);
        for (int64_t i = 0; i < m * n; ++i) {
          const double w = want[static_cast<size_t>(i)];
          ASSERT_NEAR(value_at(y->outputs[0], i), w, 1e-5 + std::abs(w) * 8e-3) << "output " << i;
        }
      }
  }
}

// A compiled graph's constant (frozen) weights go through the packed sgemm where the build has it:
// every transpose, shapes whose packing rearranges the weights and shapes it keeps as they are;
// Gemm with beta * C, MatMul over a 3-D A, FusedGemm with bias, ReLU and a residual. Each runs twice
// (the second from the cached packing) and once more after the weights change in a new buffer. Fewer
// than kPackedSgemmMinRows rows (8 and 5 here) take another kernel: oneDNN 2.6.3's AVX-512 packed
// sgemm faults on them with transposed weights.
// Forced off (the default from AVX-512 on), the same products take the matmul primitive with the
// weights reordered once (fused::prepacked_product).
void frozen_weight_products(bool prefer_packed) {
  ms::cpu::nn::set_packed_sgemm_preferred(prefer_packed);
  const bool packed = ms::cpu::nn::packed_sgemm_applies([] {
    Tensor w = random_tensor(DType::F32, {2, 2}, 1);
    w.buffer()->freeze();
    return w;
  }());
  EXPECT_TRUE(prefer_packed || !packed);
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1})
      for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{64, 300, 203},
                             {100, 512, 128},
                             {16, 64, 64},
                             {8, 64, 16},
                             {5, 16, 10}})
        for (uint32_t seed : {30u, 40u}) {
          SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n) + " ta " +
                       std::to_string(ta) + " tb " + std::to_string(tb) + " seed " + std::to_string(seed));
          const Tensor a = random_tensor(DType::F32, ta ? Shape{k, m} : Shape{m, k}, seed);
          Tensor b = random_tensor(DType::F32, tb ? Shape{n, k} : Shape{k, n}, seed + 1);
          b.buffer()->freeze();
          const Tensor c = random_tensor(DType::F32, {n}, seed + 2);
          const vector<double> want = reference_gemm(a, ta, b, tb, &c, m, n, k);
          for (int rep = 0; rep < 2; ++rep) {
            const Attrs attrs{{"transA", ta}, {"transB", tb}, {"beta", 2.0f}};
            auto y = run_kernel_full(make_node("Gemm", 3, 1, attrs), {a, b, c});
            ASSERT_TRUE(y.has_value()) << y.status().message();
            if (packed && m >= ms::cpu::nn::kPackedSgemmMinRows) {
              EXPECT_EQ(y->impl, "onednn:sgemm-packed");
            }
            if (!prefer_packed) {
              EXPECT_EQ(y->impl.find("sgemm-packed"), std::string::npos) << y->impl;
            }
            expect_close(y->outputs[0], want, 1e-4, 1e-4, "gemm");
          }
          if (ta) continue;
          // MatMul: A [2, m, k] (the same rows twice) times B [k, n].
          if (!tb) {
            Tensor a3 = Tensor::empty(DType::F32, {2, m, k});
            for (int64_t i = 0; i < 2 * m * k; ++i) a3.data<float>()[i] = a.data<float>()[i % (m * k)];
            auto mm = run_kernel_full(make_node("MatMul", 2), {a3, b});
            ASSERT_TRUE(mm.has_value()) << mm.status().message();
            if (packed && 2 * m >= ms::cpu::nn::kPackedSgemmMinRows) {
              EXPECT_EQ(mm->impl, "onednn:sgemm-packed");
            }
            if (!prefer_packed) {  // the rows product with the weights reordered once, not the plain one
              EXPECT_EQ(mm->impl.rfind("onednn:", 0), 0u) << mm->impl;
              EXPECT_EQ(mm->impl.find("sgemm-packed"), std::string::npos) << mm->impl;
            }
            for (int64_t i = 0; i < 2 * m * n; ++i) {
              EXPECT_NEAR(value_at(mm->outputs[0], i),
                          want[static_cast<size_t>(i % (m * n))] - 2.0 * c.at_double(i % n), 1e-4);
            }
          }
          // FusedGemm: relu(A B + bias) + R.
          ir::Node fused =
              make_node("FusedGemm", 4, 1, {{"transB", tb}, {"post_ops", vector<std::string>{"Relu", "Add"}}});
          fused.domain = ops::kFusedDomain;
          const Tensor r = random_tensor(DType::F32, {m, n}, seed + 3);
          auto f = run_kernel_full(fused, {a, b, c, r});
          ASSERT_TRUE(f.has_value()) << f.status().message();
          if (packed && m >= ms::cpu::nn::kPackedSgemmMinRows) {
            EXPECT_EQ(f->impl, "fused:onednn:sgemm-packed");
          }
          vector<double> fw(want.size());
          for (int64_t i = 0; i < m * n; ++i)
            fw[static_cast<size_t>(i)] =
                std::max(0.0, want[static_cast<size_t>(i)] - c.at_double(i % n)) + r.at_double(i);
          expect_close(f->outputs[0], fw, 1e-4, 1e-4, "fused gemm");
        }
  ms::cpu::nn::set_packed_sgemm_preferred(std::nullopt);
}

TEST(NnMatMul, FrozenWeightsRunThroughThePackedSgemm) { frozen_weight_products(true); }
TEST(NnMatMul, FrozenWeightsRunThroughThePrepackedPrimitive) { frozen_weight_products(false); }

TEST(NnMatMul, BatchBroadcastAndVectors) {
  for (DType t : {DType::F32, DType::F64, DType::I64}) {
    const double scale = t == DType::I64 ? 5 : 1;  // integers in -4..4
    vector<double> av = pseudo_random(24, 13), bv = pseudo_random(24, 14);
    for (auto* v : {&av, &bv})
      for (double& e : *v) e *= scale;
    const Tensor ai = make(t, {2, 1, 3, 4}, av), b = make(t, {3, 4, 2}, bv);
    auto y = run_kernel(make_node("MatMul", 2), {ai, b});
    ASSERT_TRUE(y.has_value()) << y.status().message();
    ASSERT_EQ((*y)[0].shape(), (Shape{2, 3, 3, 2}));
    vector<double> want(36);
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t q = 0; q < 3; ++q)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 2; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < 4; ++k) acc += ai.at_double((p * 3 + i) * 4 + k) * b.at_double((q * 4 + k) * 2 + j);
            want[static_cast<size_t>(((p * 3 + q) * 3 + i) * 2 + j)] = acc;
          }
    expect_close((*y)[0], want, 1e-5, 1e-5, std::string("matmul ") + std::string(dtype_name(t)));
  }
  auto v = run_kernel(make_node("MatMul", 2), {make(DType::F32, {3}, {1, 2, 3}), make(DType::F32, {3}, {4, 5, 6})});
  ASSERT_TRUE(v.has_value()) << v.status().message();
  EXPECT_EQ((*v)[0].rank(), 0);
  expect_close((*v)[0], {32}, 0, 1e-6, "dot");
}

TEST(NnSoftmax, LegacyFlattensWhileOpset13UsesOneAxis) {
  const Tensor x = random_tensor(DType::F32, {2, 3, 4}, 15);
  for (int64_t opset : {11, 13}) {
    auto y = run_kernel(make_node("Softmax", 1, 1, {{"axis", int64_t{1}}}), {x}, opset);
    ASSERT_TRUE(y.has_value()) << y.status().message();
    const vector<double> v = values_of((*y)[0]);
    // Opset 11: each batch row of 12 sums to 1. Opset 13: each of the 8 (batch, col) fibres does.
    double s0 = 0;
    for (int i = 0; i < 12; ++i) s0 += v[static_cast<size_t>(i)];
    EXPECT_NEAR(s0, opset == 11 ? 1.0 : 4.0, 1e-5) << "opset " << opset;
    auto h = run_kernel(make_node("Hardmax", 1, 1, {{"axis", int64_t{1}}}), {x}, opset);
    ASSERT_TRUE(h.has_value());
    double ones = 0;
    for (double e : values_of((*h)[0])) ones += e;
    EXPECT_EQ(ones, opset == 11 ? 2 : 8);
  }
  auto ls = run_kernel(make_node("LogSoftmax", 1), {make(DType::F64, {2}, {0, 0})}, 13);
  ASSERT_TRUE(ls.has_value());
  expect_close((*ls)[0], {-std::log(2.0), -std::log(2.0)}, 1e-12, 0, "logsoftmax f64");
}

TEST(NnNorm, LayerNormalizationWithStatistics) {
  const Tensor x = make(DType::F32, {2, 2}, {1, 3, 2, 6}), s = make(DType::F32, {2}, {1, 2});
  const Tensor b = make(DType::F32, {2}, {0, 1});
  auto y = run_kernel(make_node("LayerNormalization", 3, 3, {{"epsilon", 0.0f}}), {x, s, b});
  ASSERT_TRUE(y.has_value()) << y.status().message();
  expect_close((*y)[0], {-1, 3, -1, 3}, 1e-6, 1e-6, "Y");
  EXPECT_EQ((*y)[1].shape(), (Shape{2, 1}));
  expect_close((*y)[1], {2, 4}, 1e-6, 1e-6, "Mean");
  expect_close((*y)[2], {1, 0.5}, 1e-6, 1e-6, "InvStdDev");
}

TEST(NnNorm, BatchNormInferenceAndTraining) {
  const Tensor x = make(DType::F32, {2, 1, 2}, {1, 2, 3, 6});
  const Tensor one = make(DType::F32, {1}, {1}), zero = make(DType::F32, {1}, {0});
  auto y = run_kernel(make_node("BatchNormalization", 5, 1, {{"epsilon", 0.0f}}),
                      {x, make(DType::F32, {1}, {2}), one, one, make(DType::F32, {1}, {4})}, 15);
  ASSERT_TRUE(y.has_value()) << y.status().message();
  expect_close((*y)[0], {1, 2, 3, 6}, 1e-6, 1e-6, "inference");  // 2 * (x - 1) / 2 + 1
  auto t = run_kernel(make_node("BatchNormalization", 5, 3, {{"epsilon", 0.0f}, {"training_mode", int64_t{1}}}),
                      {x, one, zero, zero, one}, 15);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  // Batch mean 3, variance 3.5; running = 0.9 * input + 0.1 * batch.
  expect_close((*t)[1], {0.3}, 1e-6, 1e-6, "running_mean");
  expect_close((*t)[2], {0.9 + 0.35}, 1e-6, 1e-6, "running_var");
  expect_close((*t)[0], {-2 / std::sqrt(3.5), -1 / std::sqrt(3.5), 0, 3 / std::sqrt(3.5)}, 1e-5, 1e-5, "Y");
}

TEST(NnLoss, NllIgnoreIndexAndWeightedMean) {
  const Tensor logp = make(DType::F64, {3, 2}, {-1, -2, -3, -4, -5, -6});
  const Tensor target = make(DType::I64, {3}, {1, 0, 1}), w = make(DType::F64, {2}, {2, 3});
  auto y = run_kernel(make_node("NegativeLogLikelihoodLoss", 3, 1, {{"ignore_index", int64_t{0}}}), {logp, target, w});
  ASSERT_TRUE(y.has_value()) << y.status().message();
  expect_close((*y)[0], {(2 * 3 + 6 * 3) / 6.0}, 1e-12, 0, "mean");
  const Tensor bad = make(DType::I64, {3}, {1, 5, 1});
  auto e = run_kernel(make_node("NegativeLogLikelihoodLoss", 2), {logp, bad});
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("label 5"), std::string::npos) << e.status().message();
  auto sce = run_kernel(make_node("SoftmaxCrossEntropyLoss", 2, 2, {{"reduction", std::string("none")}}),
                        {make(DType::F32, {1, 2}, {0, 0}), make(DType::I32, {1}, {1})});
  ASSERT_TRUE(sce.has_value()) << sce.status().message();
  expect_close((*sce)[0], {std::log(2.0)}, 1e-6, 1e-6, "sce");
  expect_close((*sce)[1], {-std::log(2.0), -std::log(2.0)}, 1e-6, 1e-6, "log_prob");
}

TEST(NnDropout, InferenceIsIdentityWithTrueMask) {
  const Tensor x = random_tensor(DType::F32, {3, 4}, 16);
  auto y = run_kernel(make_node("Dropout", 2, 2), {x, make(DType::F32, {}, {0.3})}, 13);
  ASSERT_TRUE(y.has_value()) << y.status().message();
  expect_close((*y)[0], values_of(x), 0, 0, "identity");
  ASSERT_EQ((*y)[1].dtype(), DType::Bool);
  for (double m : values_of((*y)[1])) EXPECT_EQ(m, 1.0);
}

}  // namespace
}  // namespace ms::test::nn
