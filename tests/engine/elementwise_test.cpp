// Elementwise ops: schema inference (dtypes, broadcasting, partial shapes, errors, cost) and CPU
// kernel results for representative ops and dtypes. Expected values come from numpy and from the
// ONNX node tests (test_add_bcast, test_pow_types_*, test_mod_*, test_clip_*, test_cast_*, ...).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/schema.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using test::infer_types;
using test::make_node;
using test::run_kernel;
using test::run_kernel_full;
using test::values_of;

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }

Tensor iota_f32(Shape s, float start = 0.0f, float step = 1.0f) {
  std::vector<float> v(static_cast<size_t>(numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<float>(i);
  return f32(v, std::move(s));
}

ir::ValueType vt(DType t, std::vector<int64_t> dims, std::vector<std::string> params = {}) {
  ir::ValueType v;
  v.dtype = t;
  if (params.empty()) params.assign(dims.size(), "");
  v.dims = std::move(dims);
  v.dim_params = std::move(params);
  return v;
}
ir::ValueType vt_unranked(DType t) {
  ir::ValueType v;
  v.dtype = t;
  return v;
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  const std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size()) << t.to_string();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "at " << i << " of " << t.to_string();
    }
  }
}

Tensor run1(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 17) {
  auto r = run_kernel(n, in, opset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  if (!r) return {};
  return r->at(0);
}

// ---------------------------------------------------------------------------------------------
// Inference

TEST(ElementwiseInfer, BroadcastShapes) {
  const ir::Node add = make_node("Add", 2);
  auto r = infer_types(add, {vt(DType::F32, {2, 3, 4}), vt(DType::F32, {4})});
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ((*r)[0].to_string(), "f32[2,3,4]");
  r = infer_types(add, {vt(DType::F32, {2, 1, 4}), vt(DType::F32, {3, 1})});
  ASSERT_TRUE(r);
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{2, 3, 4}));
  r = infer_types(add, {vt(DType::F32, {}), vt(DType::F32, {5})});
  ASSERT_TRUE(r);
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{5}));
}

TEST(ElementwiseInfer, IncompatibleBroadcastFailsNamingShapes) {
  auto r = infer_types(make_node("Mul", 2), {vt(DType::F32, {2, 3}), vt(DType::F32, {4})});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("broadcast"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("[2,3]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("Mul_test"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().node_id(), 1u);
}

TEST(ElementwiseInfer, DtypeMismatchFails) {
  auto r = infer_types(make_node("Add", 2), {vt(DType::F32, {2}), vt(DType::I64, {2})});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("same dtype"), std::string::npos) << r.status().message();
  EXPECT_FALSE(infer_types(make_node("And", 2), {vt(DType::F32, {2}), vt(DType::F32, {2})}));
  EXPECT_FALSE(infer_types(make_node("Sqrt", 1), {vt(DType::I32, {2})}));
  EXPECT_FALSE(infer_types(make_node("Add", 2), {vt(DType::Bool, {2}), vt(DType::Bool, {2})}));
  EXPECT_FALSE(infer_types(make_node("Where", 3), {vt(DType::F32, {2}), vt(DType::F32, {2}), vt(DType::F32, {2})}));
}

TEST(ElementwiseInfer, PartialShapes) {
  const ir::Node add = make_node("Add", 2);
  auto r = infer_types(add, {vt(DType::F32, {-1, 3}), vt(DType::F32, {4, 1})});
  ASSERT_TRUE(r);
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{4, 3}));
  r = infer_types(add, {vt(DType::F32, {-1, 3}, {"batch", ""}), vt(DType::F32, {1, 3})});
  ASSERT_TRUE(r);
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ((*r)[0].dim_params[0], "batch");
  r = infer_types(add, {vt(DType::F32, {-1}), vt(DType::F32, {-1})});
  ASSERT_TRUE(r);
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{-1}));
  r = infer_types(add, {vt_unranked(DType::F32), vt(DType::F32, {3})});
  ASSERT_TRUE(r);
  EXPECT_FALSE((*r)[0].has_rank());
  EXPECT_EQ((*r)[0].dtype, DType::F32);
  // Unary ops keep the input's partial shape and names.
  r = infer_types(make_node("Relu", 1), {vt(DType::F32, {-1, 8}, {"n", ""})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].to_string(), vt(DType::F32, {-1, 8}, {"n", ""}).to_string());
}

TEST(ElementwiseInfer, OutputDtypes) {
  auto r = infer_types(make_node("Less", 2), {vt(DType::I32, {3}), vt(DType::I32, {3})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].dtype, DType::Bool);
  r = infer_types(make_node("Pow", 2), {vt(DType::I32, {3}), vt(DType::F32, {3})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].dtype, DType::I32);
  r = infer_types(make_node("IsNaN", 1), {vt(DType::F16, {3})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].dtype, DType::Bool);
  r = infer_types(make_node("Cast", 1, 1, {{"to", int64_t{10}}}), {vt(DType::F32, {2, 2})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].to_string(), "f16[2,2]");
  r = infer_types(make_node("CastLike", 2), {vt(DType::F32, {2}), vt(DType::I8, {})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].to_string(), "i8[2]");
  r = infer_types(make_node("Where", 3), {vt(DType::Bool, {2, 1}), vt(DType::I64, {1, 3}), vt(DType::I64, {})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].to_string(), "i64[2,3]");
  r = infer_types(make_node("Max", 3), {vt(DType::F32, {3, 1}), vt(DType::F32, {4}), vt(DType::F32, {1, 1, 1})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].to_string(), "f32[1,3,4]");
}

TEST(ElementwiseInfer, AttributeAndArityErrors) {
  auto r = infer_types(make_node("Cast", 1, 1, {{"to", int64_t{14}}}), {vt(DType::F32, {2})});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::Unsupported);
  EXPECT_FALSE(infer_types(make_node("Cast", 1), {vt(DType::F32, {2})}));  // no 'to'
  EXPECT_FALSE(infer_types(make_node("Cast", 1, 1, {{"to", int64_t{999}}}), {vt(DType::F32, {2})}));
  EXPECT_FALSE(infer_types(make_node("Mod", 2, 1, {{"fmod", int64_t{2}}}), {vt(DType::I32, {2}), vt(DType::I32, {2})}));
  EXPECT_FALSE(infer_types(make_node("BitShift", 2), {vt(DType::U8, {2}), vt(DType::U8, {2})}));
  EXPECT_FALSE(infer_types(make_node("Celu", 1, 1, {{"alpha", 0.0f}}), {vt(DType::F32, {2})}));
  // Clip: attributes before opset 11, scalar inputs after.
  EXPECT_FALSE(infer_types(make_node("Clip", 2), {vt(DType::F32, {2}), vt(DType::F32, {})}, 6));
  EXPECT_FALSE(infer_types(make_node("Clip", 2), {vt(DType::F32, {2}), vt(DType::F32, {3})}, 13));
  EXPECT_FALSE(infer_types(make_node("Clip", 2), {vt(DType::F32, {2}), vt(DType::F64, {})}, 13));
  EXPECT_TRUE(infer_types(make_node("Clip", 3, 1, {}, {1}), {vt(DType::I8, {2}), {}, vt(DType::I8, {1})}, 13));
  // PRelu: slope must broadcast to X, not the other way.
  EXPECT_FALSE(infer_types(make_node("PRelu", 2), {vt(DType::F32, {3}), vt(DType::F32, {2, 3})}));
  EXPECT_TRUE(infer_types(make_node("PRelu", 2), {vt(DType::F32, {2, 3, 4}), vt(DType::F32, {3, 1})}));
  // Arity from the schema.
  EXPECT_FALSE(infer_types(make_node("Add", 1), {vt(DType::F32, {2})}));
  EXPECT_FALSE(infer_types(make_node("Where", 2), {vt(DType::Bool, {2}), vt(DType::F32, {2})}));
}

TEST(ElementwiseInfer, SchemasAndCost) {
  auto& reg = ops::Registry::instance();
  for (const char* op : {"Sqrt",
                         "Reciprocal",
                         "Neg",
                         "Abs",
                         "Exp",
                         "Log",
                         "Erf",
                         "Tanh",
                         "Sigmoid",
                         "Relu",
                         "LeakyRelu",
                         "Elu",
                         "Selu",
                         "Celu",
                         "HardSigmoid",
                         "HardSwish",
                         "Softplus",
                         "Softsign",
                         "ThresholdedRelu",
                         "Shrink",
                         "Floor",
                         "Ceil",
                         "Round",
                         "Sign",
                         "Not",
                         "IsNaN",
                         "IsInf",
                         "Sin",
                         "Cos",
                         "Tan",
                         "Asin",
                         "Acos",
                         "Atan",
                         "Sinh",
                         "Cosh",
                         "Asinh",
                         "Acosh",
                         "Atanh",
                         "Clip",
                         "Add",
                         "Sub",
                         "Mul",
                         "Div",
                         "Pow",
                         "Mod",
                         "BitShift",
                         "PRelu",
                         "Equal",
                         "Less",
                         "Greater",
                         "LessOrEqual",
                         "GreaterOrEqual",
                         "And",
                         "Or",
                         "Xor",
                         "Min",
                         "Max",
                         "Sum",
                         "Mean",
                         "Where",
                         "Cast",
                         "CastLike"}) {
    const ops::OpSchema* s = reg.find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_TRUE(s->category == ops::OpCategory::Elementwise || s->category == ops::OpCategory::Activation) << op;
    EXPECT_TRUE(s->infer) << op;
    EXPECT_TRUE(s->cost) << op;
  }
  EXPECT_EQ(reg.find("Relu")->category, ops::OpCategory::Activation);
  EXPECT_EQ(reg.find("Sum")->max_inputs, -1);
  const ir::Node add = make_node("Add", 2);
  const ops::Cost c = ops::node_cost(add, {vt(DType::F32, {2, 3}), vt(DType::F32, {3})}, {vt(DType::F32, {2, 3})});
  EXPECT_EQ(c.flops, 6);
  EXPECT_EQ(c.bytes, (6 + 3 + 6) * 4);
}

// ---------------------------------------------------------------------------------------------
// Kernels: binary

TEST(ElementwiseKernel, AddSameShapeUsesEigen) {
  auto r = run_kernel_full(make_node("Add", 2), {iota_f32({2, 3}), iota_f32({2, 3}, 10)});
  ASSERT_TRUE(r) << r.status().message();
  expect_values(r->outputs[0], {10, 12, 14, 16, 18, 20});
  EXPECT_EQ(r->impl, "eigen");
}

TEST(ElementwiseKernel, AddBroadcastCases) {
  const ir::Node add = make_node("Add", 2);
  // test_add_bcast: [3,4,5] + [5]
  Tensor out = run1(add, {iota_f32({3, 4, 5}), iota_f32({5}, 100, 10)});
  ASSERT_EQ(out.shape(), (Shape{3, 4, 5}));
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(out.at_double(i), static_cast<double>(i) + 100 + 10 * (i % 5));
  // Outer broadcast on both sides: [2,1,3] + [1,4,1]
  out = run1(add, {iota_f32({2, 1, 3}), iota_f32({1, 4, 1}, 0, 10)});
  ASSERT_EQ(out.shape(), (Shape{2, 4, 3}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(out.at_double((a * 4 + b) * 3 + c), static_cast<double>(a * 3 + c + 10 * b));
      }
  // Scalar operand on either side, and a rank-0 result.
  out = run1(add, {Tensor::scalar(1.5f), iota_f32({4})});
  expect_values(out, {1.5, 2.5, 3.5, 4.5});
  out = run1(add, {Tensor::scalar(1.5f), Tensor::scalar(2.0f)});
  EXPECT_EQ(out.rank(), 0);
  expect_values(out, {3.5});
  // Empty tensors.
  out = run1(add, {f32({}, {0, 3}), iota_f32({3})});
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
}

TEST(ElementwiseKernel, ImplNamesFollowThePath) {
  const ir::Node add = make_node("Add", 2);
  auto r = run_kernel_full(add, {iota_f32({4, 8}), iota_f32({8})});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->impl, "eigen:bcast");
  r = run_kernel_full(add, {iota_f32({4, 8}), Tensor::scalar(2.0f)});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->impl, "eigen:scalar");
  r = run_kernel_full(add, {Tensor::from_vector<int32_t>({1, 2}, {2}), Tensor::from_vector<int32_t>({3, 4}, {2})});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->impl, "loop");
}

TEST(ElementwiseKernel, LargeTensorsMatchSmallPath) {
  // Above the parallel threshold, same shape and broadcast.
  const int64_t rows = 512, cols = 300;
  Tensor a = iota_f32({rows, cols}, 0.0f, 0.5f);
  Tensor b = iota_f32({cols}, 1.0f, 1.0f);
  auto r = run_kernel_full(make_node("Mul", 2), {a, b});
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->impl, "eigen:bcast:omp");
  const Tensor& out = r->outputs[0];
  for (int64_t i = 0; i < rows * cols; i += 997) {
    EXPECT_FLOAT_EQ(out.data<float>()[i], a.data<float>()[i] * b.data<float>()[i % cols]);
  }
  // Column broadcast ([rows,1]) takes the strided inner loop.
  Tensor col = iota_f32({rows, 1}, 1.0f);
  Tensor s = run1(make_node("Sub", 2), {a, col});
  for (int64_t i = 0; i < rows * cols; i += 991) {
    EXPECT_FLOAT_EQ(s.data<float>()[i], a.data<float>()[i] - col.data<float>()[i / cols]);
  }
  Tensor big = iota_f32({200000});
  Tensor e = run1(make_node("Add", 2), {big, big});
  for (int64_t i = 0; i < 200000; i += 4999) EXPECT_EQ(e.data<float>()[i], 2.0f * static_cast<float>(i));
}

TEST(ElementwiseKernel, LargeUnaryWhereCastRunParallel) {
  const int64_t n = 150000;
  Tensor x = iota_f32({n}, -75000.0f, 1.0f);
  auto r = run_kernel_full(make_node("Relu", 1), {x});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->impl, "loop:omp");  // the op table's loop (Eigen only for exact ops such as Floor)
  for (int64_t i = 0; i < n; i += 4999) EXPECT_EQ(r->outputs[0].data<float>()[i], std::max(0.0f, x.data<float>()[i]));
  Tensor h = run1(make_node("Cast", 1, 1, {{"to", int64_t{7}}}), {x});
  for (int64_t i = 0; i < n; i += 4999) EXPECT_EQ(h.data<int64_t>()[i], static_cast<int64_t>(x.data<float>()[i]));
  // Where with a [rows,1] condition over a large [rows,cols] output (row-split broadcast loop).
  const int64_t rows = 600, cols = 200;
  std::vector<bool> c(rows);
  for (int64_t i = 0; i < rows; ++i) c[static_cast<size_t>(i)] = i % 3 == 0;
  Tensor cond = Tensor::from_vector<bool>(c, {rows, 1});
  Tensor w = run1(make_node("Where", 3), {cond, iota_f32({rows, cols}), Tensor::scalar(-1.0f)});
  for (int64_t i = 0; i < rows * cols; i += 977) {
    EXPECT_EQ(w.data<float>()[i], (i / cols) % 3 == 0 ? static_cast<float>(i) : -1.0f);
  }
}

TEST(ElementwiseKernel, IntegerArithmeticWrapsAndNeverTraps) {
  Tensor a = Tensor::from_vector<int32_t>({INT32_MAX, 7, -7, INT32_MIN, 5}, {5});
  Tensor b = Tensor::from_vector<int32_t>({1, 2, 2, -1, 0}, {5});
  expect_values(run1(make_node("Add", 2), {a, b}),
                {static_cast<double>(INT32_MIN), 9, -5, static_cast<double>(INT32_MAX), 5});
  expect_values(run1(make_node("Div", 2), {a, b}),
                {static_cast<double>(INT32_MAX), 3, -3, static_cast<double>(INT32_MIN), 0});
  // test_add_uint8 style: wraps modulo 256.
  Tensor u = Tensor::from_vector<uint8_t>({250, 3}, {2});
  expect_values(run1(make_node("Add", 2), {u, u}), {244, 6});
  Tensor h = Tensor::from_vector<uint16_t>({65535}, {1});
  expect_values(run1(make_node("Mul", 2), {h, h}), {1});
}

TEST(ElementwiseKernel, PowMixedTypes) {
  // test_pow_types_*
  Tensor x_i32 = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  Tensor x_f32 = f32({1, 2, 3}, {3});
  Tensor y_f32 = f32({4, 5, 6}, {3});
  Tensor y_i64 = Tensor::from_vector<int64_t>({4, 5, 6}, {3});
  Tensor y_u64 = Tensor::from_vector<uint64_t>({4, 5, 6}, {3});
  const ir::Node pow = make_node("Pow", 2);
  Tensor r = run1(pow, {x_i32, y_f32});
  EXPECT_EQ(r.dtype(), DType::I32);
  expect_values(r, {1, 32, 729});
  expect_values(run1(pow, {x_f32, y_i64}), {1, 32, 729});
  expect_values(run1(pow, {x_f32, y_u64}), {1, 32, 729});
  expect_values(run1(pow, {Tensor::from_vector<int64_t>({1, 2, 3}, {3}), y_i64}), {1, 32, 729});
  // test_pow_bcast_scalar, and integer negative exponents.
  expect_values(run1(pow, {x_f32, Tensor::scalar(2.0f)}), {1, 4, 9});
  expect_values(
      run1(pow, {Tensor::from_vector<int32_t>({2, 1, -1}, {3}), Tensor::from_vector<int32_t>({-1, -3, -3}, {3})}),
      {0, 1, -1});
}

TEST(ElementwiseKernel, ModBothConventions) {
  // test_mod_mixed_sign_int32 (fmod=0: sign of the divisor)
  Tensor a = Tensor::from_vector<int32_t>({-4, 7, 5, 4, -7, 8}, {6});
  Tensor b = Tensor::from_vector<int32_t>({2, -3, 8, -2, 3, 5}, {6});
  expect_values(run1(make_node("Mod", 2), {a, b}), {0, -2, 5, 0, 2, 3});
  // fmod=1: sign of the dividend.
  expect_values(run1(make_node("Mod", 2, 1, {{"fmod", int64_t{1}}}), {a, b}), {0, 1, 5, 0, -1, 3});
  // test_mod_mixed_sign_float32
  Tensor fa = f32({-4.3f, 7.2f, 5.0f, 4.3f, -7.2f, 8.0f}, {6});
  Tensor fb = f32({2.1f, -3.4f, 8.0f, -2.1f, 3.4f, 5.0f}, {6});
  expect_values(run1(make_node("Mod", 2, 1, {{"fmod", int64_t{1}}}), {fa, fb}),
                {-0.10000038, 0.39999962, 5., 0.10000038, -0.39999962, 3.}, 1e-5);
  // Division by zero gives 0, not a trap.
  expect_values(
      run1(make_node("Mod", 2), {Tensor::from_vector<int64_t>({5}, {1}), Tensor::from_vector<int64_t>({0}, {1})}), {0});
}

TEST(ElementwiseKernel, BitShift) {
  Tensor x = Tensor::from_vector<uint16_t>({16, 4, 1}, {3});
  Tensor s = Tensor::from_vector<uint16_t>({1, 2, 3}, {3});
  expect_values(run1(make_node("BitShift", 2, 1, {{"direction", std::string("LEFT")}}), {x, s}), {32, 16, 8});
  expect_values(run1(make_node("BitShift", 2, 1, {{"direction", std::string("RIGHT")}}), {x, s}), {8, 1, 0});
  Tensor x8 = Tensor::from_vector<uint8_t>({255, 1}, {2});
  Tensor s8 = Tensor::from_vector<uint8_t>({1, 9}, {2});
  expect_values(run1(make_node("BitShift", 2, 1, {{"direction", std::string("LEFT")}}), {x8, s8}), {254, 0});
}

TEST(ElementwiseKernel, PRelu) {
  // test_prelu_broadcast: slope [5] against x [3,4,5]
  Tensor x = iota_f32({3, 4, 5}, -30.0f);
  Tensor slope = f32({0.1f, 0.2f, 0.3f, 0.4f, 0.5f}, {5});
  Tensor y = run1(make_node("PRelu", 2), {x, slope});
  for (int64_t i = 0; i < 60; ++i) {
    const float v = x.data<float>()[i];
    EXPECT_FLOAT_EQ(y.data<float>()[i], v < 0 ? v * slope.data<float>()[i % 5] : v);
  }
}

TEST(ElementwiseKernel, ComparisonsAndLogic) {
  Tensor a = f32({1, 2, 3, NAN}, {4});
  Tensor b = f32({2}, {1});
  Tensor lt = run1(make_node("Less", 2), {a, b});
  EXPECT_EQ(lt.dtype(), DType::Bool);
  expect_values(lt, {1, 0, 0, 0});
  expect_values(run1(make_node("GreaterOrEqual", 2), {a, b}), {0, 1, 1, 0});
  expect_values(run1(make_node("Equal", 2), {a, b}), {0, 1, 0, 0});
  Tensor h = Tensor::from_vector<f16>({f16(1.0f), f16(2.5f)}, {2});
  expect_values(run1(make_node("Greater", 2), {h, Tensor::from_vector<f16>({f16(2.0f)}, {})}), {0, 1});
  Tensor p = Tensor::from_vector<bool>({true, true, false, false}, {2, 2});
  Tensor q = Tensor::from_vector<bool>({true, false}, {2});
  expect_values(run1(make_node("And", 2), {p, q}), {1, 0, 0, 0});
  expect_values(run1(make_node("Or", 2), {p, q}), {1, 1, 1, 0});
  expect_values(run1(make_node("Xor", 2), {p, q}), {0, 1, 1, 0});
  expect_values(run1(make_node("Equal", 2), {p, q}), {1, 0, 0, 1});
}

// ---------------------------------------------------------------------------------------------
// Kernels: unary and activations

TEST(ElementwiseKernel, UnaryMathF32MatchesLibm) {
  Tensor x = f32({-2.5f, -0.5f, 0.0f, 0.3f, 1.0f, 4.0f}, {6});
  const std::vector<std::pair<const char*, double (*)(double)>> cases = {
      {"Exp", [](double v) { return std::exp(v); }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"Sin", [](double v) { return std::sin(v); }},
      {"Cos", [](double v) { return std::cos(v); }},
      {"Atan", [](double v) { return std::atan(v); }},
      {"Erf", [](double v) { return std::erf(v); }},
      {"Floor", [](double v) { return std::floor(v); }},
      {"Ceil", [](double v) { return std::ceil(v); }},
      {"Neg", [](double v) { return -v; }},
      {"Abs", [](double v) { return std::fabs(v); }},
      {"Relu", [](double v) { return v > 0 ? v : 0; }},
      {"Softsign", [](double v) { return v / (1 + std::fabs(v)); }},
      {"Softplus", [](double v) { return std::log1p(std::exp(v)); }},
      {"HardSwish", [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); }},
      {"Sign", [](double v) { return static_cast<double>((v > 0) - (v < 0)); }},
  };
  for (const auto& [op, fn] : cases) {
    Tensor y = run1(make_node(op, 1), {x});
    std::vector<double> want;
    for (int64_t i = 0; i < x.numel(); ++i) want.push_back(fn(x.data<float>()[i]));
    SCOPED_TRACE(op);
    expect_values(y, want, 2e-6);
  }
  Tensor pos = f32({0.25f, 1.0f, 4.0f}, {3});
  expect_values(run1(make_node("Sqrt", 1), {pos}), {0.5, 1, 2});
  expect_values(run1(make_node("Log", 1), {pos}), {std::log(0.25), 0, std::log(4.0)}, 1e-6);
  expect_values(run1(make_node("Reciprocal", 1), {pos}), {4, 1, 0.25});
  // Round is half to even (test_round).
  expect_values(run1(make_node("Round", 1), {f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}, {6})}), {0, 2, 2, 0, -2, 2});
}

TEST(ElementwiseKernel, UnaryOtherDtypes) {
  Tensor h = Tensor::from_vector<f16>({f16(4.0f), f16(9.0f)}, {2});
  Tensor y = run1(make_node("Sqrt", 1), {h});
  EXPECT_EQ(y.dtype(), DType::F16);
  expect_values(y, {2, 3});
  Tensor bh = Tensor::from_vector<bf16>({bf16(-1.0f), bf16(2.0f)}, {2});
  expect_values(run1(make_node("Relu", 1), {bh}), {0, 2});
  Tensor d = Tensor::from_vector<double>({0.5, -0.5}, {2});
  expect_values(run1(make_node("Exp", 1), {d}), {std::exp(0.5), std::exp(-0.5)}, 1e-14);
  Tensor i8 = Tensor::from_vector<int8_t>({-128, -3, 5}, {3});
  expect_values(run1(make_node("Neg", 1), {i8}), {-128, 3, -5});
  expect_values(run1(make_node("Abs", 1), {i8}), {-128, 3, 5});
  expect_values(run1(make_node("Relu", 1), {i8}), {0, 0, 5});
  expect_values(run1(make_node("Sign", 1), {i8}), {-1, -1, 1});
  expect_values(run1(make_node("Not", 1), {Tensor::from_vector<bool>({true, false}, {2})}), {0, 1});
  Tensor special = f32({-1.7f, NAN, INFINITY, -3.6f, -INFINITY, INFINITY}, {6});
  expect_values(run1(make_node("IsNaN", 1), {special}), {0, 1, 0, 0, 0, 0});
  expect_values(run1(make_node("IsInf", 1), {special}), {0, 0, 1, 0, 1, 1});
  // test_isinf_negative
  expect_values(run1(make_node("IsInf", 1, 1, {{"detect_positive", int64_t{0}}}), {special}), {0, 0, 0, 0, 1, 0});
}

// A bf16 table op (Gelu) runs in chunks through the f32 loop: its result is the f32 kernel's on the
// widened values, rounded to bf16, bit for bit, over several chunks and a tail.
TEST(ElementwiseKernel, Bf16TableOpIsTheRoundedF32Result) {
  const int64_t n = 3000;
  std::vector<bf16> xs(static_cast<size_t>(n));
  std::vector<float> xf(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    xs[static_cast<size_t>(i)] = bf16(static_cast<float>(i - n / 2) / 300.f);
    xf[static_cast<size_t>(i)] = static_cast<float>(xs[static_cast<size_t>(i)]);
  }
  const Tensor y = run1(make_node("Gelu", 1), {Tensor::from_vector<bf16>(xs, {n})});
  const Tensor want = run1(make_node("Gelu", 1), {Tensor::from_vector<float>(xf, {n})});
  ASSERT_EQ(y.dtype(), DType::BF16);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(Eigen::numext::bit_cast<uint16_t>(y.data<bf16>()[i]),
              Eigen::numext::bit_cast<uint16_t>(bf16(want.data<float>()[i])))
        << i;
  }
}

TEST(ElementwiseKernel, ActivationsWithAttributes) {
  Tensor x = f32({-2, -1, 0, 1, 2}, {5});
  expect_values(run1(make_node("LeakyRelu", 1, 1, {{"alpha", 0.1f}}), {x}), {-0.2, -0.1, 0, 1, 2});
  expect_values(run1(make_node("LeakyRelu", 1), {x}), {-0.02, -0.01, 0, 1, 2});
  expect_values(run1(make_node("Elu", 1, 1, {{"alpha", 2.0f}}), {x}),
                {2 * std::expm1(-2.0), 2 * std::expm1(-1.0), 0, 1, 2}, 1e-6);
  const double sa = 1.67326319217681884765625, sg = 1.05070102214813232421875;
  expect_values(run1(make_node("Selu", 1), {x}),
                {sg * sa * std::expm1(-2.0), sg * sa * std::expm1(-1.0), 0, sg, 2 * sg}, 1e-6);
  expect_values(run1(make_node("Celu", 1, 1, {{"alpha", 2.0f}}), {x}),
                {2 * std::expm1(-1.0), 2 * std::expm1(-0.5), 0, 1, 2}, 1e-6);
  expect_values(run1(make_node("HardSigmoid", 1, 1, {{"alpha", 0.5f}, {"beta", 0.6f}}), {x}), {0, 0.1, 0.6, 1, 1},
                1e-6);
  expect_values(run1(make_node("ThresholdedRelu", 1, 1, {{"alpha", 1.0f}}), {x}), {0, 0, 0, 0, 2});
  // test_shrink_soft / test_shrink_hard
  expect_values(run1(make_node("Shrink", 1, 1, {{"lambd", 1.5f}, {"bias", 1.5f}}), {x}), {-0.5, 0, 0, 0, 0.5});
  expect_values(run1(make_node("Shrink", 1, 1, {{"lambd", 1.5f}}), {x}), {-2, 0, 0, 0, 2});
  expect_values(run1(make_node("Shrink", 1, 1, {{"lambd", 1.5f}}), {Tensor::from_vector<int32_t>({-2, 1, 3}, {3})}),
                {-2, 0, 3});
  // Sigmoid stays finite in both tails.
  expect_values(run1(make_node("Sigmoid", 1), {f32({-100, 100}, {2})}), {std::exp(-100.0), 1}, 1e-6);
  expect_values(run1(make_node("Softplus", 1), {f32({100}, {1})}), {100}, 1e-6);
}

TEST(ElementwiseKernel, Clip) {
  Tensor x = f32({-2, -1, 0, 1, 2, NAN, INFINITY}, {7});
  // Opset 6: attributes.
  expect_values(run1(make_node("Clip", 1, 1, {{"min", -1.0f}, {"max", 1.0f}}), {x}, 6), {-1, -1, 0, 1, 1, NAN, 1});
  // Opset 13: inputs; max only (min left out); nothing (inf passes).
  expect_values(run1(make_node("Clip", 3), {x, Tensor::scalar(-0.5f), Tensor::scalar(0.5f)}, 13),
                {-0.5, -0.5, 0, 0.5, 0.5, NAN, 0.5});
  expect_values(run1(make_node("Clip", 3, 1, {}, {1}), {x, Tensor(), Tensor::scalar(0.0f)}, 13),
                {-2, -1, 0, 0, 0, NAN, 0});
  expect_values(run1(make_node("Clip", 1), {x}, 13), {-2, -1, 0, 1, 2, NAN, INFINITY});
  // test_clip_default_int8_min
  Tensor i8 = Tensor::from_vector<int8_t>({-5, 0, 7}, {3});
  expect_values(run1(make_node("Clip", 2), {i8, Tensor::scalar<int8_t>(0)}, 13), {0, 0, 7});
}

// ---------------------------------------------------------------------------------------------
// Kernels: variadic, Where, Cast

TEST(ElementwiseKernel, VariadicBroadcast) {
  Tensor a = f32({1, 5, 3}, {3});
  Tensor b = f32({4, 2, 6, 0, 0, 9}, {2, 3});
  Tensor c = f32({2}, {1});
  expect_values(run1(make_node("Max", 3), {a, b, c}), {4, 5, 6, 2, 5, 9});
  expect_values(run1(make_node("Min", 3), {a, b, c}), {1, 2, 2, 0, 0, 2});
  expect_values(run1(make_node("Sum", 3), {a, b, c}), {7, 9, 11, 3, 7, 14});
  expect_values(run1(make_node("Mean", 3), {a, b, c}), {7 / 3.0, 3, 11 / 3.0, 1, 7 / 3.0, 14 / 3.0}, 1e-6);
  expect_values(run1(make_node("Sum", 1), {a}), {1, 5, 3});
  // NaN propagates through Max/Min, as numpy maximum.
  expect_values(run1(make_node("Max", 2), {f32({NAN, 1}, {2}), f32({1, NAN}, {2})}), {NAN, NAN});
  // Integer types (test_max_int8 etc.).
  expect_values(run1(make_node("Max", 2),
                     {Tensor::from_vector<uint8_t>({1, 200}, {2}), Tensor::from_vector<uint8_t>({3, 100}, {2})}),
                {3, 200});
}

TEST(ElementwiseKernel, WhereBroadcast) {
  Tensor cond = Tensor::from_vector<bool>({true, false}, {2, 1});
  Tensor x = Tensor::from_vector<int64_t>({1, 2, 3}, {1, 3});
  Tensor y = Tensor::scalar<int64_t>(-1);
  Tensor r = run1(make_node("Where", 3), {cond, x, y});
  ASSERT_EQ(r.shape(), (Shape{2, 3}));
  expect_values(r, {1, 2, 3, -1, -1, -1});
  // test_where_example
  Tensor c2 = Tensor::from_vector<bool>({true, false, true, true}, {2, 2});
  expect_values(run1(make_node("Where", 3), {c2, f32({1, 2, 3, 4}, {2, 2}), f32({9, 8, 7, 6}, {2, 2})}), {1, 8, 3, 4});
}

TEST(ElementwiseKernel, CastFloatToIntTruncatesLikeNumpy) {
  Tensor x = f32({-1.7f, 2.9f, 0.0f, 1e10f, NAN}, {5});
  auto cast = [](int64_t to) { return make_node("Cast", 1, 1, {{"to", to}}); };
  Tensor i32 = run1(cast(6), {x});
  EXPECT_EQ(i32.dtype(), DType::I32);
  expect_values(i32, {-1, 2, 0, static_cast<double>(INT32_MIN), static_cast<double>(INT32_MIN)});
  expect_values(run1(cast(7), {f32({-1.7f, 2.9f}, {2})}), {-1, 2});
  expect_values(run1(cast(9), {x}), {1, 1, 0, 1, 1});                                       // -> bool
  expect_values(run1(cast(2), {Tensor::from_vector<int64_t>({300, -1}, {2})}), {44, 255});  // -> u8 wraps
  expect_values(run1(cast(1), {Tensor::from_vector<bool>({true, false}, {2})}), {1, 0});
  expect_values(run1(cast(11), {Tensor::from_vector<int32_t>({-3}, {1})}), {-3});  // -> f64
}

TEST(ElementwiseKernel, CastHalfTypes) {
  // test_cast_FLOAT_to_FLOAT16
  Tensor x = f32({0.5488135f, 0.71518934f, 0.60276335f, 65504.0f, 1e6f}, {5});
  Tensor h = run1(make_node("Cast", 1, 1, {{"to", int64_t{10}}}), {x});
  ASSERT_EQ(h.dtype(), DType::F16);
  expect_values(h, {0.549, 0.7153, 0.6025, 65504, INFINITY}, 1e-3);
  // test_cast_FLOAT_to_BFLOAT16 (opset 13 reference: truncation of the low 16 bits)
  Tensor xb = f32({0.48033667f, 0.81910545f, NAN, INFINITY, -INFINITY}, {5});
  Tensor b = run1(make_node("Cast", 1, 1, {{"to", int64_t{16}}}), {xb}, 13);
  ASSERT_EQ(b.dtype(), DType::BF16);
  const uint16_t want[] = {16117, 16209, 32704, 32640, 65408};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Eigen::numext::bit_cast<uint16_t>(b.data<bf16>()[i]), want[i]) << i;
  // Back to f32, and CastLike.
  Tensor back = run1(make_node("CastLike", 2), {h, Tensor::scalar(0.0f)});
  EXPECT_EQ(back.dtype(), DType::F32);
  expect_values(back, {0.548828125, 0.71533203125, 0.6025390625, 65504, INFINITY});
}

class PlainAllocator final : public runtime::OutputAllocator {
 public:
  Expected<Tensor> allocate(size_t, DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
};

// Calls the kernel directly, without inference: what a graph that skipped it would do.
Status run_uninferred(const ir::Node& node, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  static cpu::CpuBackend backend(1);
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  PlainAllocator alloc;
  runtime::KernelContext ctx(node, 17, backend, in, outputs, alloc, nullptr);
  return cpu::CpuBackend::kernels().find(node.op_type)(ctx);
}

TEST(ElementwiseKernel, KernelRefusesInputsInferenceWouldReject) {
  // Mismatched dtypes must not make the kernel read memory as the wrong type.
  std::vector<Tensor> out = {Tensor::empty(DType::F32, {4})};
  Status s = run_uninferred(make_node("Add", 2), {iota_f32({4}), Tensor::from_vector<int8_t>({1, 2, 3, 4}, {4})}, out);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("Add_test"), std::string::npos) << s.message();
  // An output allocated with the wrong shape is refused, not overrun.
  out = {Tensor::empty(DType::F32, {2})};
  EXPECT_FALSE(run_uninferred(make_node("Relu", 1), {iota_f32({4})}, out).is_ok());
  // Shapes that do not broadcast to the output.
  out = {Tensor::empty(DType::F32, {2, 3})};
  EXPECT_FALSE(run_uninferred(make_node("Mul", 2), {iota_f32({2, 3}), iota_f32({2})}, out).is_ok());
  // No preallocated output: the kernel allocates the broadcast shape itself.
  out = {Tensor()};
  ASSERT_TRUE(run_uninferred(make_node("Sub", 2), {iota_f32({2, 1}), iota_f32({3})}, out).is_ok());
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_values(out[0], {0, -1, -2, 1, 0, -1});
}

}  // namespace
}  // namespace ms
