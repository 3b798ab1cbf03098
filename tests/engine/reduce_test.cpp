// Reduce* ops: schema inference (partial shapes, unknown axes, errors) and the CPU kernels against a
// naive reference over every axis combination, dtype and code path (rows, cols, permuted, parallel).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "engine/ops/schema.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<float> random_floats(int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

// from_vector, except that empty data gives an empty tensor without copying from a null pointer.
template <class E> Tensor tensor_of(const std::vector<E>& values, Shape shape) {
  return values.empty() ? Tensor::empty(dtype_of<E>(), std::move(shape))
                        : Tensor::from_vector(values, std::move(shape));
}

ir::ValueType vt(DType dt, std::vector<int64_t> dims, std::vector<std::string> params = {}) {
  ir::ValueType t;
  t.dtype = dt;
  if (params.empty()) params.assign(dims.size(), "");
  t.dims = std::move(dims);
  t.dim_params = std::move(params);
  return t;
}

// The reference: gathers the values of each output, then applies the op to the list, in double.
std::vector<double> naive_reduce(const std::string& op, const std::vector<double>& x, const Shape& shape,
                                 const std::vector<bool>& mask) {
  Shape out_shape;
  for (size_t i = 0; i < shape.size(); ++i)
    if (!mask[i]) out_shape.push_back(shape[i]);
  std::vector<std::vector<double>> groups(static_cast<size_t>(numel(out_shape)));
  const Shape out_strides = contiguous_strides(out_shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t lin = 0; lin < x.size(); ++lin) {
    int64_t o = 0;
    for (size_t i = 0, j = 0; i < shape.size(); ++i)
      if (!mask[i]) o += idx[i] * out_strides[j++];
    groups[static_cast<size_t>(o)].push_back(x[lin]);
    for (size_t i = shape.size(); i-- > 0;)
      if (++idx[i] < shape[i])
        break;
      else
        idx[i] = 0;
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    double s = 0, sq = 0, ab = 0, p = 1, mx = -kInf, mn = kInf, se = 0;
    for (double v : g) {
      s += v;
      sq += v * v;
      ab += std::abs(v);
      p *= v;
      mx = std::max(mx, v);
      mn = std::min(mn, v);
    }
    for (double v : g) se += std::exp(v - mx);
    const std::map<std::string, double> r = {{"ReduceSum", s},
                                             {"ReduceMean", s / static_cast<double>(g.size())},
                                             {"ReduceMax", mx},
                                             {"ReduceMin", mn},
                                             {"ReduceProd", p},
                                             {"ReduceL1", ab},
                                             {"ReduceL2", std::sqrt(sq)},
                                             {"ReduceLogSum", std::log(s)},
                                             {"ReduceLogSumExp", mx + std::log(se)},
                                             {"ReduceSumSquare", sq}};
    out.push_back(r.at(op));
  }
  return out;
}

const char* kOps[] = {"ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
                      "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

// Runs `op` over `axes` (attribute, or input at opset 18 when `as_input`), checks shape and values.
void check_reduce(const std::string& op, const std::vector<float>& data, const Shape& shape,
                  const std::vector<int64_t>& axes, bool keepdims, bool as_input, double rtol = 2e-5) {
  std::vector<bool> mask(shape.size(), axes.empty());
  for (int64_t a : axes) mask[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(shape.size()) : a)] = true;
  Attrs attrs{{"keepdims", int64_t{keepdims}}};
  std::vector<Tensor> inputs{tensor_of(data, shape)};
  if (as_input)
    inputs.push_back(tensor_of(axes, {static_cast<int64_t>(axes.size())}));
  else if (!axes.empty())
    attrs["axes"] = axes;
  const ir::Node node = test::make_node(op, inputs.size(), 1, attrs);
  auto out = test::run_kernel(node, inputs, as_input ? 18 : 13);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  Shape want_shape;
  for (size_t i = 0; i < shape.size(); ++i)
    if (!mask[i])
      want_shape.push_back(shape[i]);
    else if (keepdims)
      want_shape.push_back(1);
  ASSERT_EQ((*out)[0].shape(), want_shape);
  const auto want = naive_reduce(op, std::vector<double>(data.begin(), data.end()), shape, mask);
  const auto got = test::values_of((*out)[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5 + rtol * std::abs(want[i])) << op << " output " << i;
  }
}

TEST(ReduceKernels, EveryAxisSubsetMatchesNaive) {
  // Shape [3,4,1,5,6]: a size-1 dim in the middle, and every subset of axes covers the rows, cols
  // and permuted (scattered axes) paths.
  const Shape shape{3, 4, 1, 5, 6};
  const auto data = random_floats(numel(shape), 0.5f, 1.5f, 7);
  for (const char* op : kOps)
    for (int m = 0; m < 32; ++m) {
      std::vector<int64_t> axes;
      for (int a = 0; a < 5; ++a)
        if (m & (1 << a)) axes.push_back(a);
      if (axes.empty()) continue;  // empty = all, covered below
      SCOPED_TRACE(std::string(op) + " mask " + std::to_string(m));
      check_reduce(op, data, shape, axes, m % 2 == 0, (m % 3) == 0);
    }
}

TEST(ReduceKernels, DefaultAxesReduceEverything) {
  const auto data = random_floats(24, 0.5f, 1.5f, 3);
  for (const char* op : kOps) check_reduce(op, data, {2, 3, 4}, {}, true, false);
  for (const char* op : kOps) check_reduce(op, data, {2, 3, 4}, {}, false, true);
}

TEST(ReduceKernels, NegativeAxes) {
  check_reduce("ReduceSum", random_floats(24, -1, 1, 5), {2, 3, 4}, {-1, -3}, true, true);
}

TEST(ReduceKernels, LargeInputsTakeParallelPathsAndAgree) {
  // Long rows (chunked full reduction), many rows, and reduction over the outer axis (cols).
  const auto big = random_floats(1 << 18, -1, 1, 11);
  check_reduce("ReduceSum", big, {1 << 18}, {0}, false, false, 1e-4);
  check_reduce("ReduceMax", big, {1 << 18}, {}, false, false);
  check_reduce("ReduceMean", big, {4, 1 << 16}, {1}, false, false, 1e-4);
  check_reduce("ReduceL2", big, {512, 512}, {0}, true, false);
  check_reduce("ReduceLogSumExp", big, {64, 64, 64}, {0, 2}, false, true);
  check_reduce("ReduceMin", big, {1024, 256}, {1}, false, true);
}

TEST(ReduceKernels, ReportsImplementation) {
  const ir::Node rows = test::make_node("ReduceSum", 1, 1, {{"axes", std::vector<int64_t>{1}}});
  auto r = test::run_kernel_full(rows, {Tensor::zeros(DType::F32, {2, 8})}, 11);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->impl, "rows:eigen");
  const ir::Node scattered = test::make_node("ReduceSum", 1, 1, {{"axes", std::vector<int64_t>{0, 2}}});
  r = test::run_kernel_full(scattered, {Tensor::zeros(DType::F32, {2, 3, 4})}, 11);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->impl, "permute+rows:eigen");
}

template <class E>
std::vector<double> run_values(const std::string& op, std::vector<E> data, Shape shape, Attrs attrs, int64_t opset = 13,
                               DType* out_dtype = nullptr) {
  const ir::Node node = test::make_node(op, 1, 1, std::move(attrs));
  auto out = test::run_kernel(node, {tensor_of(data, std::move(shape))}, opset);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  if (!out) return {};
  if (out_dtype) *out_dtype = (*out)[0].dtype();
  return test::values_of((*out)[0]);
}

TEST(ReduceKernels, IntegerDtypes) {
  const Attrs ax1{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  DType dt = DType::Undefined;
  EXPECT_EQ(run_values<int32_t>("ReduceSum", {1, 2, 3, -4, 5, 6}, {2, 3}, ax1, 11, &dt), (std::vector<double>{6, 7}));
  EXPECT_EQ(dt, DType::I32);
  // Integer mean truncates toward zero, as numpy's mean cast back to the integer type does.
  EXPECT_EQ(run_values<int64_t>("ReduceMean", {1, 2, 4, -1, -2, -4}, {2, 3}, ax1), (std::vector<double>{2, -2}));
  EXPECT_EQ(run_values<uint8_t>("ReduceMax", {1, 200, 3, 7, 0, 255}, {2, 3}, ax1), (std::vector<double>{200, 255}));
  EXPECT_EQ(run_values<int8_t>("ReduceMin", {1, -128, 3, 7, 0, 5}, {2, 3}, ax1), (std::vector<double>{-128, 0}));
  EXPECT_EQ(run_values<int8_t>("ReduceL1", {-1, -2, 3, 7, 0, 5}, {2, 3}, ax1), (std::vector<double>{6, 12}));
  EXPECT_EQ(run_values<int64_t>("ReduceProd", {2, 3, 4, 5, 6, 7}, {2, 3}, ax1), (std::vector<double>{24, 210}));
  EXPECT_EQ(run_values<int32_t>("ReduceL2", {3, 4, 0, 6, 8, 0}, {2, 3}, ax1), (std::vector<double>{5, 10}));
  // Overflow wraps like the fixed-width reference (and is not undefined behaviour).
  EXPECT_EQ(run_values<int64_t>("ReduceSum", {std::numeric_limits<int64_t>::max(), 1}, {2}, {}),
            (std::vector<double>{static_cast<double>(std::numeric_limits<int64_t>::min())}));
  // log(0) = -inf saturates into the integer type instead of an undefined conversion.
  EXPECT_EQ(run_values<int32_t>("ReduceLogSum", {0, 0}, {2}, {}),
            (std::vector<double>{static_cast<double>(std::numeric_limits<int32_t>::min())}));
}

TEST(ReduceKernels, HalfTypesAccumulateInFloat) {
  std::vector<f16> h(4096, f16(0.1f));
  const auto s = run_values<f16>("ReduceSum", h, {4096}, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0], 409.6, 0.5);  // an f16 accumulator would stall at 256
  std::vector<bf16> b{bf16(1.f), bf16(2.f), bf16(3.f), bf16(6.f)};
  EXPECT_EQ(run_values<bf16>("ReduceMean", b, {2, 2}, {{"axes", std::vector<int64_t>{0}}}),
            (std::vector<double>{2, 4}));
  EXPECT_EQ(run_values<double>("ReduceProd", {1.5, 2, 4}, {3}, {}), (std::vector<double>{12}));
}

TEST(ReduceKernels, SpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto mx = run_values<float>("ReduceMax", {1, nan, 3, 4}, {2, 2}, {{"axes", std::vector<int64_t>{1}}});
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 4);
  // Large values: the max is factored out before exp.
  auto lse = run_values<float>("ReduceLogSumExp", {1000, 1000}, {2}, {});
  ASSERT_EQ(lse.size(), 1u);
  EXPECT_NEAR(lse[0], 1000 + std::log(2.0), 1e-3);
  auto lse_inf = run_values<float>("ReduceLogSumExp", {-INFINITY, -INFINITY}, {2}, {});
  EXPECT_EQ(lse_inf, (std::vector<double>{-kInf}));
}

TEST(ReduceKernels, EmptyReductionsGiveIdentity) {
  const Attrs ax0{{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}};
  EXPECT_EQ(run_values<float>("ReduceSum", {}, {0, 3}, ax0, 11), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(run_values<float>("ReduceProd", {}, {0, 2}, ax0), (std::vector<double>{1, 1}));
  EXPECT_EQ(run_values<float>("ReduceMax", {}, {0, 1}, ax0), (std::vector<double>{-kInf}));
  EXPECT_EQ(run_values<int32_t>("ReduceMin", {}, {0, 1}, ax0),
            (std::vector<double>{static_cast<double>(std::numeric_limits<int32_t>::max())}));
  EXPECT_EQ(run_values<int32_t>("ReduceMean", {}, {0, 1}, ax0), (std::vector<double>{0}));
  // Nothing to reduce and nothing left: an empty output.
  EXPECT_TRUE(run_values<float>("ReduceSum", {}, {3, 0}, {{"axes", std::vector<int64_t>{0}}}, 11).empty());
}

TEST(ReduceKernels, NoopWithEmptyAxesCopiesInput) {
  const ir::Node node = test::make_node("ReduceSumSquare", 2, 1, {{"noop_with_empty_axes", int64_t{1}}});
  auto out = test::run_kernel(node, {Tensor::from_vector<float>({1, -2, 3}, {3}), tensor_of<int64_t>({}, {0})}, 18);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  EXPECT_EQ(test::values_of((*out)[0]), (std::vector<double>{1, -2, 3}));
}

TEST(ReduceKernels, ScalarInput) { EXPECT_EQ(run_values<float>("ReduceL2", {-3}, {}, {}), (std::vector<double>{3})); }

// --- inference --------------------------------------------------------------------------------------

TEST(ReduceInfer, AxesAttributeAndSymbolicDims) {
  const ir::Node node =
      test::make_node("ReduceMean", 1, 1, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}});
  auto t = test::infer_types(node, std::vector<ir::ValueType>{vt(DType::F32, {-1, 3, 4}, {"N", "", ""})}, 13);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ((*t)[0].to_string(), vt(DType::F32, {-1, 3}, {"N", ""}).to_string());
  EXPECT_EQ((*t)[0].dim_params, (std::vector<std::string>{"N", ""}));
}

TEST(ReduceInfer, UnknownAxesInputKeepsRankOnlyWithKeepdims) {
  const std::vector<ir::ValueType> in{vt(DType::F32, {2, 3, 4}), vt(DType::I64, {1})};
  auto keep = test::infer_types(test::make_node("ReduceSum", 2, 1, {}), in, 13);
  ASSERT_TRUE(keep.has_value()) << keep.status().message();
  EXPECT_EQ(*(*keep)[0].dims, (std::vector<int64_t>{-1, -1, -1}));
  auto drop = test::infer_types(test::make_node("ReduceSum", 2, 1, {{"keepdims", int64_t{0}}}), in, 13);
  ASSERT_TRUE(drop.has_value()) << drop.status().message();
  EXPECT_FALSE((*drop)[0].has_rank());
  // With the value known (eager), the shape is exact.
  auto known = test::infer_types(test::make_node("ReduceSum", 2, 1, {{"keepdims", int64_t{0}}}),
                                 {Tensor::zeros(DType::F32, {2, 3, 4}), Tensor::from_vector<int64_t>({1}, {1})}, 13);
  ASSERT_TRUE(known.has_value()) << known.status().message();
  EXPECT_EQ(*(*known)[0].dims, (std::vector<int64_t>{2, 4}));
}

TEST(ReduceInfer, UnknownRank) {
  ir::ValueType any;
  any.dtype = DType::F16;
  auto t = test::infer_types(test::make_node("ReduceMax", 1, 1, {}), std::vector<ir::ValueType>{any}, 13);
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE((*t)[0].has_rank());
  EXPECT_EQ((*t)[0].dtype, DType::F16);
}

TEST(ReduceInfer, AxisOutOfRangeNamesAxisAndRank) {
  const ir::Node node = test::make_node("ReduceL1", 1, 1, {{"axes", std::vector<int64_t>{3}}});
  auto t = test::infer_types(node, std::vector<ir::ValueType>{vt(DType::F32, {2, 3, 4})}, 13);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("axis 3"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("rank 3"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("ReduceL1_test"), std::string::npos) << t.status().message();
  EXPECT_EQ(t.status().node_id(), 1u);

  auto dup = test::infer_types(test::make_node("ReduceSum", 1, 1, {{"axes", std::vector<int64_t>{1, -2}}}),
                               std::vector<ir::ValueType>{vt(DType::F32, {2, 3, 4})}, 11);
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.status().message().find("twice"), std::string::npos) << dup.status().message();
}

TEST(ReduceInfer, KernelRejectsBadAxesToo) {
  // A kernel never trusts its axes input: the value may differ from the one inference saw.
  const ir::Node node = test::make_node("ReduceSum", 2, 1, {});
  auto r = test::run_kernel(node, {Tensor::zeros(DType::F32, {2, 2}), Tensor::from_vector<int64_t>({-3}, {1})}, 13);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("axis -3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("rank 2"), std::string::npos) << r.status().message();
}

TEST(ReduceInfer, RejectsNonNumericDtype) {
  auto t =
      test::infer_types(test::make_node("ReduceSum", 1, 1, {}), std::vector<ir::ValueType>{vt(DType::Bool, {2})}, 11);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("bool"), std::string::npos) << t.status().message();
}

TEST(ReduceInfer, CostCountsInputElements) {
  const ir::Node node = test::make_node("ReduceSum", 1, 1, {});
  const ops::Cost c = ops::node_cost(node, {vt(DType::F32, {4, 8})}, {vt(DType::F32, {1, 1})});
  EXPECT_EQ(c.flops, 32);
  EXPECT_EQ(c.bytes, 4 * (32 + 1));
  const auto* s = ops::Registry::instance().find("ReduceLogSumExp");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->category, ops::OpCategory::Reduction);
}

}  // namespace
}  // namespace ms
