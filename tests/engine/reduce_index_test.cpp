// ArgMax/ArgMin, TopK, CumSum, Einsum and Det: kernels against hand-written expectations and naive
// loops, plus inference of partial shapes and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;

std::vector<double> random_doubles(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

std::vector<Tensor> run_index_op(const std::string& op, std::vector<Tensor> inputs, Attrs attrs, size_t outputs = 1,
                                 int64_t opset = 17) {
  const ir::Node node = test::make_node(op, inputs.size(), outputs, std::move(attrs));
  auto r = test::run_kernel(node, inputs, opset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r ? *r : std::vector<Tensor>{};
}

std::string index_op_error(const std::string& op, std::vector<Tensor> inputs, Attrs attrs, size_t outputs = 1) {
  const ir::Node node = test::make_node(op, inputs.size(), outputs, std::move(attrs));
  auto r = test::run_kernel(node, inputs, 17);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

// --- ArgMax / ArgMin --------------------------------------------------------------------------------

TEST(ArgKernels, TiesNaNAndMiddleAxis) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, 5, 5, 2, nan, 0}, {2, 3});
  auto first = run_index_op("ArgMax", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].dtype(), DType::I64);
  EXPECT_EQ(test::values_of(first[0]), (std::vector<double>{1, 1}));  // NaN wins, as in numpy
  auto last =
      run_index_op("ArgMax", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}});
  EXPECT_EQ(test::values_of(last[0]), (std::vector<double>{2, 1}));
  auto mn = run_index_op("ArgMin", {Tensor::from_vector<int32_t>({3, 1, 1, 4, 0, 9, 0, 2}, {2, 2, 2})},
                         {{"axis", int64_t{-2}}, {"select_last_index", int64_t{1}}});
  EXPECT_EQ(mn[0].shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(test::values_of(mn[0]), (std::vector<double>{1, 0, 1, 1}));
}

TEST(ArgKernels, LargeMatchesNaive) {
  const Shape shape{37, 300, 11};
  const auto data = random_doubles(numel(shape), 5);
  auto out = run_index_op("ArgMin", {Tensor::from_vector(data, shape)}, {{"axis", int64_t{1}}});
  ASSERT_EQ(out[0].shape(), (Shape{37, 1, 11}));
  for (int64_t o = 0; o < 37; ++o)
    for (int64_t i = 0; i < 11; ++i) {
      int64_t best = 0;
      for (int64_t r = 1; r < 300; ++r)
        if (data[static_cast<size_t>((o * 300 + r) * 11 + i)] < data[static_cast<size_t>((o * 300 + best) * 11 + i)])
          best = r;
      ASSERT_EQ(test::value_at(out[0], o * 11 + i), best);
    }
}

TEST(ArgKernels, Errors) {
  EXPECT_NE(index_op_error("ArgMax", {Tensor::zeros(DType::F32, {2, 2})}, {{"axis", int64_t{2}}})
                .find("axis 2 is out of range for rank 2"),
            std::string::npos);
  EXPECT_NE(index_op_error("ArgMax", {Tensor::zeros(DType::F32, {0, 2})}, {}).find("size 0"), std::string::npos);
}

// --- TopK -------------------------------------------------------------------------------------------

TEST(TopKKernels, LargestSmallestTiesAndAxis) {
  Tensor x = Tensor::from_vector<float>({3, 1, 3, 2, 0, 5, 5, 4}, {2, 4});
  Tensor k = Tensor::from_vector<int64_t>({3}, {1});
  auto big = run_index_op("TopK", {x, k}, {}, 2);
  ASSERT_EQ(big.size(), 2u);
  EXPECT_EQ(test::values_of(big[0]), (std::vector<double>{3, 3, 2, 5, 5, 4}));
  EXPECT_EQ(test::values_of(big[1]), (std::vector<double>{0, 2, 3, 1, 2, 3}));  // ties: lower index first
  auto small = run_index_op("TopK", {x, Tensor::from_vector<int64_t>({1}, {1})},
                            {{"axis", int64_t{0}}, {"largest", int64_t{0}}}, 2);
  EXPECT_EQ(small[0].shape(), (Shape{1, 4}));
  EXPECT_EQ(test::values_of(small[0]), (std::vector<double>{0, 1, 3, 2}));
  EXPECT_EQ(test::values_of(small[1]), (std::vector<double>{1, 0, 0, 0}));
}

TEST(TopKKernels, NaNRanksHighestAndHalfTypes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto r = run_index_op("TopK", {Tensor::from_vector<float>({1, nan, 2}, {3}), Tensor::from_vector<int64_t>({2}, {1})},
                        {}, 2);
  EXPECT_EQ(test::values_of(r[1]), (std::vector<double>{1, 2}));
  auto s = run_index_op("TopK", {Tensor::from_vector<float>({1, nan, 2}, {3}), Tensor::from_vector<int64_t>({2}, {1})},
                        {{"largest", int64_t{0}}}, 2);
  EXPECT_EQ(test::values_of(s[1]), (std::vector<double>{0, 2}));
  auto h = run_index_op(
      "TopK", {Tensor::from_vector<f16>({f16(0.5f), f16(2.f), f16(-1.f)}, {3}), Tensor::from_vector<int64_t>({1}, {1})},
      {}, 2);
  EXPECT_EQ(h[0].dtype(), DType::F16);
  EXPECT_EQ(test::values_of(h[0]), (std::vector<double>{2}));
}

TEST(TopKKernels, KAttributeBeforeOpset10AndZero) {
  const ir::Node node = test::make_node("TopK", 1, 2, {{"k", int64_t{2}}});
  auto r = test::run_kernel(node, {Tensor::from_vector<int32_t>({4, 9, 1, 7}, {4})}, 9);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(test::values_of((*r)[0]), (std::vector<double>{9, 7}));
  auto z =
      run_index_op("TopK", {Tensor::from_vector<float>({1, 2}, {2}), Tensor::from_vector<int64_t>({0}, {1})}, {}, 2);
  EXPECT_EQ(z[0].shape(), (Shape{0}));
}

TEST(TopKKernels, InferenceAndErrors) {
  const ir::Node node = test::make_node("TopK", 2, 2, {{"axis", int64_t{1}}});
  ir::ValueType x{DType::F32, std::vector<int64_t>{2, 5}, {"", ""}}, k{DType::I64, std::vector<int64_t>{1}, {""}};
  auto t = test::infer_types(node, std::vector<ir::ValueType>{x, k});
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(*(*t)[0].dims, (std::vector<int64_t>{2, -1}));
  EXPECT_EQ((*t)[1].dtype, DType::I64);
  const std::string e =
      index_op_error("TopK", {Tensor::zeros(DType::F32, {2, 5}), Tensor::from_vector<int64_t>({6}, {1})}, {}, 2);
  EXPECT_NE(e.find("k = 6"), std::string::npos) << e;
  const std::string a = index_op_error(
      "TopK", {Tensor::zeros(DType::F32, {2, 5}), Tensor::from_vector<int64_t>({1}, {1})}, {{"axis", int64_t{-3}}}, 2);
  EXPECT_NE(a.find("axis -3 is out of range for rank 2"), std::string::npos) << a;
}

// --- CumSum -----------------------------------------------------------------------------------------

TEST(CumSumKernels, AllFlagsAndAxesMatchNaive) {
  const Shape shape{3, 4, 5};
  const auto data = random_doubles(numel(shape), 9);
  for (int64_t axis = -3; axis < 3; ++axis)
    for (int flags = 0; flags < 4; ++flags) {
      const bool exclusive = flags & 1, reverse = flags & 2;
      auto out = run_index_op("CumSum",
                              {Tensor::from_vector(data, shape), Tensor::scalar<int32_t>(static_cast<int32_t>(axis))},
                              {{"exclusive", int64_t{exclusive}}, {"reverse", int64_t{reverse}}});
      ASSERT_EQ(out.size(), 1u);
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const Shape st = contiguous_strides(shape);
      for (int64_t lin = 0; lin < numel(shape); ++lin) {
        const int64_t pos = (lin / st[static_cast<size_t>(a)]) % shape[static_cast<size_t>(a)];
        const int64_t start = lin - pos * st[static_cast<size_t>(a)];
        double want = 0;
        for (int64_t j = 0; j < shape[static_cast<size_t>(a)]; ++j) {
          const bool in = reverse ? (exclusive ? j > pos : j >= pos) : (exclusive ? j < pos : j <= pos);
          if (in) want += data[static_cast<size_t>(start + j * st[static_cast<size_t>(a)])];
        }
        ASSERT_NEAR(test::value_at(out[0], lin), want, 1e-12) << "axis " << axis << " flags " << flags;
      }
    }
}

TEST(CumSumKernels, IntegersAndErrors) {
  auto out = run_index_op("CumSum",
                          {Tensor::from_vector<int32_t>({1, 2, 3}, {3}), Tensor::from_vector<int64_t>({0}, {1})}, {});
  EXPECT_EQ(test::values_of(out[0]), (std::vector<double>{1, 3, 6}));
  const std::string e = index_op_error("CumSum", {Tensor::zeros(DType::F32, {2}), Tensor::scalar<int64_t>(1)}, {});
  EXPECT_NE(e.find("axis 1 is out of range for rank 1"), std::string::npos) << e;
}

// --- Einsum -----------------------------------------------------------------------------------------

// Reference for two-operand equations given as loops by the caller.
void expect_einsum(const std::string& eq, const std::vector<Tensor>& ins, const Shape& want_shape,
                   const std::vector<double>& want) {
  SCOPED_TRACE(eq);
  auto out = run_index_op("Einsum", ins, {{"equation", eq}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), want_shape);
  const auto got = test::values_of(out[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(EinsumKernels, MatmulOuterTraceAndImplicit) {
  const auto a = random_doubles(6, 1), b = random_doubles(12, 2);
  const Tensor A = Tensor::from_vector(a, {2, 3}), B = Tensor::from_vector(b, {3, 4});
  std::vector<double> mm(8, 0);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j)
        mm[static_cast<size_t>(i * 4 + k)] += a[static_cast<size_t>(i * 3 + j)] * b[static_cast<size_t>(j * 4 + k)];
  expect_einsum("ij,jk->ik", {A, B}, {2, 4}, mm);
  expect_einsum("ij,jk", {A, B}, {2, 4}, mm);  // implicit output: labels used once, sorted
  std::vector<double> mmT(8);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) mmT[static_cast<size_t>(k * 2 + i)] = mm[static_cast<size_t>(i * 4 + k)];
  expect_einsum("ij,jk->ki", {A, B}, {4, 2}, mmT);
  std::vector<double> outer;
  for (double x : a)
    for (double y : b) outer.push_back(x * y);
  expect_einsum("ab,cde->abcde", {A, Tensor::from_vector(b, {3, 2, 2})}, {2, 3, 3, 2, 2}, outer);
  const auto s = random_doubles(9, 3);
  expect_einsum("ii", {Tensor::from_vector(s, {3, 3})}, {}, {s[0] + s[4] + s[8]});
  expect_einsum("ii->i", {Tensor::from_vector(s, {3, 3})}, {3}, {s[0], s[4], s[8]});
  expect_einsum("ij->", {Tensor::from_vector(s, {3, 3})}, {},
                {s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7] + s[8]});
}

TEST(EinsumKernels, BroadcastEllipsisAndIntegers) {
  // [2,1,2,3] x [4,3,2] over "...ij,...jk->...ik": batch dims [2,1] and [4] broadcast to [2,4].
  const auto a = random_doubles(12, 4), b = random_doubles(24, 5);
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k) {
          double acc = 0;
          for (int j = 0; j < 3; ++j)
            acc += a[static_cast<size_t>((p * 2 + i) * 3 + j)] * b[static_cast<size_t>((q * 3 + j) * 2 + k)];
          want.push_back(acc);
        }
  expect_einsum("...ij,...jk->...ik", {Tensor::from_vector(a, {2, 1, 2, 3}), Tensor::from_vector(b, {4, 3, 2})},
                {2, 4, 2, 2}, want);
  auto r = run_index_op("Einsum",
                        {Tensor::from_vector<int32_t>({1, 2, 3}, {3}), Tensor::from_vector<int32_t>({4, 5, 6}, {3})},
                        {{"equation", std::string("i,i->")}});
  EXPECT_EQ(r[0].dtype(), DType::I32);
  EXPECT_EQ(test::values_of(r[0]), (std::vector<double>{32}));
}

TEST(EinsumKernels, AttentionScoresTakeGemmAndMatchNaive) {
  // "bhqd,bhkd->bhqk": K transposed inside the product, batch over b and h.
  const int64_t B = 2, H = 3, Q = 5, K = 7, D = 4;
  std::vector<float> q(static_cast<size_t>(B * H * Q * D)), k(static_cast<size_t>(B * H * K * D));
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : q) v = u(gen);
  for (auto& v : k) v = u(gen);
  const ir::Node node = test::make_node("Einsum", 2, 1, {{"equation", std::string("bhqd,bhkd->bhqk")}});
  auto r = test::run_kernel_full(node, {Tensor::from_vector(q, {B, H, Q, D}), Tensor::from_vector(k, {B, H, K, D})});
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->impl, "eigen:gemm");
  ASSERT_EQ(r->outputs[0].shape(), (Shape{B, H, Q, K}));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < Q; ++i)
      for (int64_t j = 0; j < K; ++j) {
        double acc = 0;
        for (int64_t d = 0; d < D; ++d)
          acc += static_cast<double>(q[static_cast<size_t>((bh * Q + i) * D + d)]) *
                 k[static_cast<size_t>((bh * K + j) * D + d)];
        ASSERT_NEAR(test::value_at(r->outputs[0], (bh * Q + i) * K + j), acc, 1e-5);
      }
  // Output order other than [batch, M, N] ("...->kqhb"-style) is permuted after the product.
  auto t = test::run_kernel_full(test::make_node("Einsum", 2, 1, {{"equation", std::string("bhqd,bhkd->khbq")}}),
                                 {Tensor::from_vector(q, {B, H, Q, D}), Tensor::from_vector(k, {B, H, K, D})});
  ASSERT_TRUE(t.has_value()) << t.status().message();
  ASSERT_EQ(t->outputs[0].shape(), (Shape{K, H, B, Q}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i)
        for (int64_t j = 0; j < K; ++j) {
          ASSERT_EQ(test::value_at(t->outputs[0], ((j * H + h) * B + b) * Q + i),
                    test::value_at(r->outputs[0], ((b * H + h) * Q + i) * K + j));
        }
  // A label summed within one operand is not a product: the index loop takes it.
  auto s = test::run_kernel_full(
      test::make_node("Einsum", 2, 1, {{"equation", std::string("ij,jk->k")}}),
      {Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2})});
  ASSERT_TRUE(s.has_value()) << s.status().message();
  EXPECT_EQ(s->impl, "index-loop");
  EXPECT_EQ(test::values_of(s->outputs[0]), (std::vector<double>{4, 6}));
}

TEST(EinsumKernels, InferenceAndErrors) {
  const ir::Node node = test::make_node("Einsum", 2, 1, {{"equation", std::string("bij,bjk->bik")}});
  ir::ValueType a{DType::F32, std::vector<int64_t>{-1, 2, 3}, {"B", "", ""}};
  ir::ValueType b{DType::F32, std::vector<int64_t>{8, 3, 5}, {"", "", ""}};
  auto t = test::infer_types(node, std::vector<ir::ValueType>{a, b});
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(*(*t)[0].dims, (std::vector<int64_t>{8, 2, 5}));
  ir::ValueType any;
  any.dtype = DType::F32;
  const ir::Node ell = test::make_node("Einsum", 1, 1, {{"equation", std::string("...ii->...i")}});
  auto u = test::infer_types(ell, std::vector<ir::ValueType>{any});
  ASSERT_TRUE(u.has_value()) << u.status().message();
  EXPECT_FALSE((*u)[0].has_rank());

  auto err = [](const std::string& eq, std::vector<Tensor> ins) {
    return index_op_error("Einsum", std::move(ins), {{"equation", eq}});
  };
  const Tensor m23 = Tensor::zeros(DType::F32, {2, 3});
  EXPECT_NE(err("ij,jk->ik", {m23, m23}).find("sizes 3 and 2"), std::string::npos) << err("ij,jk->ik", {m23, m23});
  EXPECT_NE(err("ij->k", {m23}).find("'k' does not appear"), std::string::npos);
  EXPECT_NE(err("ij,jk", {m23}).find("2 operand terms"), std::string::npos);
  EXPECT_NE(err("i$->i", {m23}).find("unexpected character"), std::string::npos);
  EXPECT_NE(err("ijk->i", {m23}).find("names 3 dims"), std::string::npos);
  EXPECT_NE(err("i..j->i", {m23}).find("ellipsis"), std::string::npos);
  EXPECT_NE(err("...j->j", {m23}).find("no '...'"), std::string::npos);
}

// --- Det --------------------------------------------------------------------------------------------

TEST(DetKernels, BatchesAndSingular) {
  auto d = run_index_op("Det", {Tensor::from_vector<float>({1, 2, 3, 4, 2, 0, 0, 3, 1, 2, 2, 4}, {3, 2, 2})}, {});
  ASSERT_EQ(d[0].shape(), (Shape{3}));
  const auto v = test::values_of(d[0]);
  EXPECT_NEAR(v[0], -2, 1e-5);
  EXPECT_NEAR(v[1], 6, 1e-5);
  EXPECT_NEAR(v[2], 0, 1e-6);
  auto e = run_index_op("Det", {Tensor::from_vector<double>({2, -1, 0, -1, 2, -1, 0, -1, 2}, {3, 3})}, {});
  EXPECT_EQ(e[0].shape(), (Shape{}));
  EXPECT_NEAR(test::value_at(e[0], 0), 4, 1e-12);
  const std::string err = index_op_error("Det", {Tensor::zeros(DType::F32, {2, 3})}, {});
  EXPECT_NE(err.find("square"), std::string::npos) << err;
}

}  // namespace
}  // namespace ms
