// Tensor/shape ops beyond the ONNX node tests: old opset forms, errors (bad shapes, out-of-range
// indices), views, partial inference, and larger cases against naive loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/schema.h"
#include "tests/engine/tensor_test_util.h"

namespace ms {
namespace {

using test::make_node;
using test::run_kernel;
using test::run_unallocated;
using test::T;
using test::values_of;
using Attrs = std::map<std::string, ir::Attribute>;
using V = std::vector<double>;

Tensor iota_f32(Shape shape) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  std::iota(v.begin(), v.end(), 0.f);
  return T<float>(v, std::move(shape));
}

// Runs a single-output node and returns the output (test fails on error).
Tensor run_tensor_op(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 17) {
  auto r = run_kernel(n, in, opset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r.has_value() ? (*r)[0] : Tensor();
}

std::string tensor_op_error(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 17) {
  auto r = run_kernel(n, in, opset);
  return r.has_value() ? std::string() : r.status().message();
}

TEST(TensorOps, CategoriesAndCost) {
  auto& reg = ops::Registry::instance();
  for (const char* op : {"Reshape", "Shape", "Size", "Flatten", "Squeeze", "Unsqueeze"}) {
    EXPECT_EQ(reg.find(op)->category, ops::OpCategory::Shape) << op;
  }
  for (const char* op : {"Gather", "ScatterND", "Pad", "Resize", "Transpose", "Concat"}) {
    EXPECT_EQ(reg.find(op)->category, ops::OpCategory::Data) << op;
  }
  const ir::Node n = make_node("Transpose", 1);
  ir::ValueType t{DType::F32, std::vector<int64_t>{2, 3}, {"", ""}};
  const ops::Cost c = ops::node_cost(n, {t}, {t});
  EXPECT_EQ(c.bytes, 48.0);
  EXPECT_EQ(c.flops, 0.0);
}

TEST(TensorOps, ReshapeErrorsNameTheNode) {
  const ir::Node n = make_node("Reshape", 2);
  const std::string e = tensor_op_error(n, {iota_f32({2, 3}), T<int64_t>({4}, {1})});
  EXPECT_NE(e.find("Reshape_test"), std::string::npos) << e;
  EXPECT_NE(e.find("[2,3]"), std::string::npos) << e;
  EXPECT_FALSE(tensor_op_error(n, {iota_f32({2, 3}), T<int64_t>({-1, -1}, {2})}).empty());
  EXPECT_FALSE(tensor_op_error(n, {iota_f32({2, 3}), T<int64_t>({-2, 3}, {2})}).empty());
  EXPECT_FALSE(tensor_op_error(n, {iota_f32({2, 3}), T<int64_t>({4, -1}, {2})}).empty());
  const ir::Node z = make_node("Reshape", 2, 1, Attrs{{"allowzero", int64_t{1}}});
  EXPECT_FALSE(tensor_op_error(z, {iota_f32({0, 3}), T<int64_t>({0, -1}, {2})}).empty());
}

TEST(TensorOps, ReshapeIsAViewWhenUnallocated) {
  const Tensor x = iota_f32({2, 3, 4});
  const ir::Node n = make_node("Reshape", 2);
  auto r = run_unallocated(n, {x, T<int64_t>({0, -1}, {2})});
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 12}));
  EXPECT_EQ((*r)[0].raw(), x.raw());
  // Preallocated (arena) output: data is copied into it.
  const Tensor y = run_tensor_op(n, {x, T<int64_t>({0, -1}, {2})});
  EXPECT_NE(y.raw(), x.raw());
  EXPECT_EQ(values_of(y), values_of(x));
  for (const char* op : {"Flatten", "Squeeze", "Unsqueeze"}) {
    const ir::Node m = make_node(op, op == std::string("Flatten") ? 1 : 2);
    std::vector<Tensor> in{iota_f32({1, 3})};
    if (op != std::string("Flatten")) in.push_back(T<int64_t>({0}, {1}));
    auto v = run_unallocated(m, in);
    ASSERT_TRUE(v.has_value()) << op << ": " << v.status().message();
    EXPECT_EQ((*v)[0].raw(), in[0].raw()) << op;
  }
}

TEST(TensorOps, PartialInference) {
  ir::ValueType data{DType::F32, std::vector<int64_t>{-1, 3, 4}, {"N", "", ""}};
  ir::ValueType shape1{DType::I64, std::vector<int64_t>{3}, {""}};
  auto r = test::infer_types(make_node("Reshape", 2), std::vector<ir::ValueType>{data, shape1});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*(*r)[0].dims, (std::vector<int64_t>{-1, -1, -1}));
  // Shape of a partially known input: rank known, so the output shape is static.
  auto s = test::infer_types(make_node("Shape", 1), std::vector<ir::ValueType>{data});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*(*s)[0].dims, (std::vector<int64_t>{3}));
  // Slice with unknown starts but known rank keeps the rank.
  auto sl = test::infer_types(make_node("Slice", 3), std::vector<ir::ValueType>{data, shape1, shape1});
  ASSERT_TRUE(sl.has_value());
  EXPECT_EQ((*sl)[0].dims->size(), 3u);
  // Reshape with a known shape value and unknown batch: -1 stays unknown, the rest is exact.
  const Tensor shape = T<int64_t>({0, 12}, {2});
  ir::Node n = make_node("Reshape", 2);
  ops::InferContext ctx{n, 17, {data, shape1}, {nullptr, &shape}, {}};
  ctx.types[1].dims = std::vector<int64_t>{2};
  ASSERT_TRUE(ops::infer_node(ctx).is_ok());
  EXPECT_EQ(*ctx.outputs[0].dims, (std::vector<int64_t>{-1, 12}));
}

TEST(TensorOps, ShapeComputationIsStatic) {
  // Shape -> Gather(0) -> Unsqueeze -> Concat with a constant: every step exact with values known.
  const Tensor x = iota_f32({5, 6});
  auto shape = run_kernel(make_node("Shape", 1), {x});
  ASSERT_TRUE(shape.has_value());
  const Tensor dim0 = run_tensor_op(make_node("Gather", 2), {(*shape)[0], T<int64_t>({0}, {})});
  EXPECT_EQ(dim0.shape(), Shape{});
  EXPECT_EQ(dim0.at_int(0), 5);
  const Tensor u = run_tensor_op(make_node("Unsqueeze", 2), {dim0, T<int64_t>({0}, {1})});
  EXPECT_EQ(u.shape(), Shape{1});
  const Tensor cat = run_tensor_op(make_node("Concat", 2, 1, Attrs{{"axis", int64_t{0}}}), {u, T<int64_t>({-1}, {1})});
  EXPECT_EQ(values_of(cat), (V{5, -1}));
  auto types =
      test::infer_types(make_node("Concat", 2, 1, Attrs{{"axis", int64_t{0}}}), {u, T<int64_t>({-1}, {1})}, 17, false);
  ASSERT_TRUE(types.has_value());
  EXPECT_TRUE((*types)[0].is_static());
}

TEST(TensorOps, GatherIndicesWrapAndOutOfRangeIsAnError) {
  const Tensor data = iota_f32({3, 2});
  const ir::Node n = make_node("Gather", 2);
  EXPECT_EQ(values_of(run_tensor_op(n, {data, T<int32_t>({-1, 0}, {2})})), (V{4, 5, 0, 1}));
  const std::string e = tensor_op_error(n, {data, T<int64_t>({3}, {1})});
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
  EXPECT_FALSE(tensor_op_error(n, {data, T<int64_t>({-4}, {1})}).empty());
  EXPECT_FALSE(tensor_op_error(make_node("GatherElements", 2), {data, T<int64_t>({0, 7}, {1, 2})}).empty());
  EXPECT_FALSE(tensor_op_error(make_node("GatherND", 2), {data, T<int64_t>({1, 2}, {1, 2})}).empty());
  EXPECT_FALSE(
      tensor_op_error(make_node("ScatterND", 3), {data, T<int64_t>({5}, {1, 1}), T<float>({1, 1}, {1, 2})}).empty());
  EXPECT_FALSE(
      tensor_op_error(make_node("ScatterElements", 3), {data, T<int64_t>({9}, {1, 1}), T<float>({1}, {1, 1})}).empty());
  EXPECT_FALSE(tensor_op_error(make_node("Gather", 2), {data, T<float>({0}, {1})}).empty());  // f32 indices
}

TEST(TensorOps, GatherAxis1BoolAndI64) {
  const Tensor b = T<bool>({true, false, false, true, true, false}, {2, 3});
  const Tensor g = run_tensor_op(make_node("Gather", 2, 1, Attrs{{"axis", int64_t{1}}}), {b, T<int64_t>({2, 0}, {2})});
  EXPECT_EQ(values_of(g), (V{0, 1, 0, 1}));
  const Tensor l = T<int64_t>({10, 20, 30}, {3});
  EXPECT_EQ(values_of(run_tensor_op(make_node("Gather", 2), {l, T<int64_t>({2, 2, 1, 0}, {2, 2})})),
            (V{30, 30, 20, 10}));
}

TEST(TensorOps, SliceOldAndNewForms) {
  const Tensor x = iota_f32({3, 4});
  const ir::Node old =
      make_node("Slice", 1, 1, Attrs{{"starts", std::vector<int64_t>{1, 0}}, {"ends", std::vector<int64_t>{1000, -1}}});
  EXPECT_EQ(values_of(run_tensor_op(old, {x}, 9)), (V{4, 5, 6, 8, 9, 10}));
  // Reverse everything with negative steps and extreme bounds.
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const ir::Node n = make_node("Slice", 5);
  const Tensor r = run_tensor_op(
      n, {x, T<int64_t>({-1, -1}, {2}), T<int64_t>({lo, lo}, {2}), T<int64_t>({0, 1}, {2}), T<int64_t>({-1, -2}, {2})});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of(r), (V{11, 9, 7, 5, 3, 1}));
  // i32 parameters, empty result.
  const Tensor e = run_tensor_op(make_node("Slice", 3), {x, T<int32_t>({2}, {1}), T<int32_t>({1}, {1})});
  EXPECT_EQ(e.shape(), (Shape{0, 4}));
  EXPECT_FALSE(tensor_op_error(make_node("Slice", 5), {x, T<int64_t>({0}, {1}), T<int64_t>({1}, {1}),
                                                       T<int64_t>({0}, {1}), T<int64_t>({0}, {1})})
                   .empty());  // step 0
  EXPECT_FALSE(
      tensor_op_error(make_node("Slice", 4), {x, T<int64_t>({0}, {1}), T<int64_t>({1}, {1}), T<int64_t>({2}, {1})})
          .empty());  // bad axis
}

TEST(TensorOps, SqueezeUnsqueezeSplitAttributeForms) {
  const Tensor x = iota_f32({1, 3, 1});
  const Tensor s = run_tensor_op(make_node("Squeeze", 1, 1, Attrs{{"axes", std::vector<int64_t>{-1}}}), {x}, 11);
  EXPECT_EQ(s.shape(), (Shape{1, 3}));
  EXPECT_EQ(run_tensor_op(make_node("Squeeze", 1), {x}, 11).shape(), (Shape{3}));
  EXPECT_FALSE(tensor_op_error(make_node("Squeeze", 1, 1, Attrs{{"axes", std::vector<int64_t>{1}}}), {x}, 11).empty());
  const Tensor u = run_tensor_op(make_node("Unsqueeze", 1, 1, Attrs{{"axes", std::vector<int64_t>{0, 4}}}), {x}, 11);
  EXPECT_EQ(u.shape(), (Shape{1, 1, 3, 1, 1}));
  EXPECT_FALSE(tensor_op_error(make_node("Unsqueeze", 2), {x, T<int64_t>({0, 0}, {2})}).empty());

  const Tensor y = iota_f32({5, 2});
  auto parts = run_kernel(make_node("Split", 1, 2, Attrs{{"split", std::vector<int64_t>{2, 3}}}), {y}, 11);
  ASSERT_TRUE(parts.has_value()) << parts.status().message();
  EXPECT_EQ(values_of((*parts)[1]), (V{4, 5, 6, 7, 8, 9}));
  EXPECT_FALSE(tensor_op_error(make_node("Split", 1, 2), {y}).empty());  // 5 rows do not split in two
  auto uneven = run_kernel(make_node("Split", 1, 2, Attrs{{"num_outputs", int64_t{2}}}), {y}, 18);
  ASSERT_TRUE(uneven.has_value()) << uneven.status().message();
  EXPECT_EQ((*uneven)[0].shape(), (Shape{3, 2}));
  EXPECT_EQ((*uneven)[1].shape(), (Shape{2, 2}));
  EXPECT_FALSE(tensor_op_error(make_node("Split", 2, 2), {y, T<int64_t>({1, 1}, {2})}).empty());
}

TEST(TensorOps, PadModesAndOldForm) {
  const Tensor x = T<float>({1, 2, 3}, {1, 3});
  const ir::Node old = make_node("Pad", 1, 1, Attrs{{"pads", std::vector<int64_t>{0, 1, 0, 2}}, {"value", 9.f}});
  EXPECT_EQ(values_of(run_tensor_op(old, {x}, 2)), (V{9, 1, 2, 3, 9, 9}));
  const Tensor pads = T<int64_t>({0, 2, 0, 3}, {4});
  EXPECT_EQ(values_of(run_tensor_op(make_node("Pad", 2, 1, Attrs{{"mode", std::string("reflect")}}), {x, pads})),
            (V{3, 2, 1, 2, 3, 2, 1, 2}));
  EXPECT_EQ(values_of(run_tensor_op(make_node("Pad", 2, 1, Attrs{{"mode", std::string("edge")}}), {x, pads})),
            (V{1, 1, 1, 2, 3, 3, 3, 3}));
  // Negative pads crop; constant_value input; i32 data.
  const Tensor xi = T<int32_t>({1, 2, 3}, {1, 3});
  EXPECT_EQ(values_of(run_tensor_op(make_node("Pad", 3), {xi, T<int64_t>({0, -1, 0, 1}, {4}), T<int32_t>({7}, {})})),
            (V{2, 3, 7}));
  EXPECT_FALSE(tensor_op_error(make_node("Pad", 2), {x, T<int64_t>({0, -4, 0, 0}, {4})}).empty());
  EXPECT_FALSE(tensor_op_error(make_node("Pad", 2), {x, T<int64_t>({0, 1}, {2})}).empty());
  EXPECT_FALSE(tensor_op_error(make_node("Pad", 2, 1, Attrs{{"mode", std::string("wrap")}}), {x, pads}).empty());
}

TEST(TensorOps, ResizeOldForms) {
  const Tensor x = T<float>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4});
  const Tensor down = run_tensor_op(make_node("Resize", 2), {x, T<float>({1, 1, 0.6f, 0.6f}, {4})}, 10);
  EXPECT_EQ(down.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(values_of(down), (V{1, 3}));
  const Tensor x2 = T<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  const ir::Node up7 = make_node("Upsample", 1, 1, Attrs{{"scales", std::vector<float>{1, 1, 2, 2}}});
  EXPECT_EQ(values_of(run_tensor_op(up7, {x2}, 7)), (V{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  const Tensor lin = run_tensor_op(make_node("Upsample", 2, 1, Attrs{{"mode", std::string("linear")}}),
                                   {x2, T<float>({1, 1, 1, 2}, {4})}, 9);
  EXPECT_EQ(values_of(lin), (V{1, 1.5, 2, 2, 3, 3.5, 4, 4}));
  // u8 images resize with rounding.
  const Tensor img = T<uint8_t>({0, 255}, {1, 2});
  const Tensor r = run_tensor_op(make_node("Resize", 4, 1, Attrs{{"mode", std::string("linear")}}, {1, 2}),
                                 {img, Tensor(), Tensor(), T<int64_t>({1, 4}, {2})}, 13);
  EXPECT_EQ(values_of(r), (V{0, 64, 191, 255}));
  EXPECT_FALSE(tensor_op_error(make_node("Resize", 3), {x, Tensor(), T<float>({1, 1}, {2})}, 13).empty());
}

TEST(TensorOps, TransposeMatchesNaiveLoop) {
  const Shape s{3, 4, 5, 6};
  std::vector<int64_t> v(static_cast<size_t>(numel(s)));
  std::iota(v.begin(), v.end(), 0);
  const Tensor x = T<int64_t>(v, s);
  const std::vector<int64_t> perm{2, 0, 3, 1};
  const Tensor y = run_tensor_op(make_node("Transpose", 1, 1, Attrs{{"perm", perm}}), {x});
  ASSERT_EQ(y.shape(), (Shape{5, 3, 6, 4}));
  const Shape is = contiguous_strides(s);
  int64_t k = 0;
  for (int64_t a = 0; a < 5; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 6; ++c)
        for (int64_t d = 0; d < 4; ++d, ++k) {
          ASSERT_EQ(y.data<int64_t>()[k], b * is[0] + d * is[1] + a * is[2] + c * is[3]);
        }
  EXPECT_FALSE(
      tensor_op_error(make_node("Transpose", 1, 1, Attrs{{"perm", std::vector<int64_t>{0, 0, 1, 2}}}), {x}).empty());
}

TEST(TensorOps, LargeTransposesUseTilesCorrectly) {
  // Shapes past the tile size, with ragged edges, for each element width; 4-byte values at each
  // SIMD width (8x8 register blocks from AVX2 on, element copies at 4).
  for (DType dt : {DType::U8, DType::F16, DType::F32, DType::I32, DType::I64})
    for (int cap : {4, 16}) {
      const int old_cap = ms::cpu::simd_width_cap().exchange(cap);
      const Shape s{2, 37, 50};
      Tensor x = Tensor::empty(dt, s);
      auto* b = static_cast<unsigned char*>(x.raw());
      for (size_t i = 0; i < x.nbytes(); ++i) b[i] = static_cast<unsigned char>(i * 7 + 3);
      const Tensor y = run_tensor_op(make_node("Transpose", 1, 1, Attrs{{"perm", std::vector<int64_t>{2, 0, 1}}}), {x});
      ASSERT_EQ(y.shape(), (Shape{50, 2, 37}));
      const size_t es = dtype_size(dt);
      const auto* o = static_cast<const unsigned char*>(y.raw());
      for (int64_t c = 0; c < 50; ++c)
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t m = 0; m < 37; ++m) {
            ASSERT_EQ(std::memcmp(o + static_cast<size_t>((c * 2 + a) * 37 + m) * es,
                                  b + static_cast<size_t>((a * 37 + m) * 50 + c) * es, es),
                      0)
                << dtype_name(dt) << " width " << cap;
          }
      ms::cpu::simd_width_cap().store(old_cap);
    }
}

// 8-bit transposes that swap two runs of axes run as batched 2-D byte transposes; others as the
// strided copy. Every permutation of a 4-D byte tensor against the index formula.
TEST(TensorOps, ByteTransposesOfEveryPermutationMatch) {
  const Shape s{2, 17, 6, 19};
  Tensor x = Tensor::empty(DType::U8, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + i / 251);
  std::vector<int64_t> perm{0, 1, 2, 3};
  const Shape is = contiguous_strides(s);
  do {
    const Tensor y = run_tensor_op(make_node("Transpose", 1, 1, Attrs{{"perm", perm}}), {x});
    const Shape os = contiguous_strides(y.shape());
    int64_t bad = 0;
    for (int64_t k = 0; k < y.numel(); ++k) {
      int64_t src = 0;
      for (size_t d = 0; d < 4; ++d)
        src += (k / os[d]) % y.dim(static_cast<int64_t>(d)) * is[static_cast<size_t>(perm[d])];
      bad += y.data<uint8_t>()[k] != x.data<uint8_t>()[src];
    }
    EXPECT_EQ(bad, 0) << perm[0] << perm[1] << perm[2] << perm[3];
  } while (std::next_permutation(perm.begin(), perm.end()));
}

// NCHW -> NHWC of a 2 MB activation (ConvNeXt's permutes): large enough that rows of tiles are split
// across the threads; every element against the index formula.
TEST(TensorOps, LargeTransposeSplitAcrossThreadsMatches) {
  const Shape s{2, 96, 40, 64};
  std::vector<float> v(static_cast<size_t>(numel(s)));
  std::iota(v.begin(), v.end(), 0.f);
  const Tensor x = T<float>(v, s);
  const Tensor y = run_tensor_op(make_node("Transpose", 1, 1, Attrs{{"perm", std::vector<int64_t>{0, 2, 3, 1}}}), {x});
  ASSERT_EQ(y.shape(), (Shape{2, 40, 64, 96}));
  int64_t k = 0, bad = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 40; ++h)
      for (int64_t w = 0; w < 64; ++w)
        for (int64_t c = 0; c < 96; ++c, ++k)
          bad += y.data<float>()[k] != static_cast<float>(((n * 96 + c) * 40 + h) * 64 + w);
  EXPECT_EQ(bad, 0);
}

TEST(TensorOps, TileExpandConcatOnBytes) {
  const Tensor x = T<uint8_t>({1, 2, 3}, {3, 1});
  EXPECT_EQ(values_of(run_tensor_op(make_node("Expand", 2), {x, T<int64_t>({2, 1, 2}, {3})})),
            (V{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_FALSE(tensor_op_error(make_node("Expand", 2), {x, T<int64_t>({2, 2}, {2})}).empty());
  const Tensor t = run_tensor_op(make_node("Tile", 2), {x, T<int64_t>({2, 2}, {2})});
  EXPECT_EQ(t.shape(), (Shape{6, 2}));
  EXPECT_EQ(values_of(t), (V{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  const Tensor c = run_tensor_op(make_node("Concat", 3, 1, Attrs{{"axis", int64_t{-1}}}),
                                 {x, T<uint8_t>({}, {3, 0}), T<uint8_t>({7, 8, 9}, {3, 1})});
  EXPECT_EQ(values_of(c), (V{1, 7, 2, 8, 3, 9}));
  EXPECT_FALSE(
      tensor_op_error(make_node("Concat", 2, 1, Attrs{{"axis", int64_t{0}}}), {x, T<uint8_t>({1, 2}, {1, 2})}).empty());
  EXPECT_FALSE(tensor_op_error(make_node("Concat", 2), {x, x}).empty());  // axis is required
}

TEST(TensorOps, DataDependentOutputs) {
  const Tensor x = T<int32_t>({0, 3, 0, 5}, {2, 2});
  auto nz = run_unallocated(make_node("NonZero", 1), {x});
  ASSERT_TRUE(nz.has_value()) << nz.status().message();
  EXPECT_EQ((*nz)[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of((*nz)[0]), (V{0, 1, 1, 1}));
  auto types = test::infer_types(make_node("NonZero", 1), {x});
  ASSERT_TRUE(types.has_value());
  EXPECT_EQ(*(*types)[0].dims, (std::vector<int64_t>{2, -1}));
  auto cp = run_kernel(make_node("Compress", 2, 1, Attrs{{"axis", int64_t{1}}}), {x, T<bool>({false, true}, {2})});
  ASSERT_TRUE(cp.has_value()) << cp.status().message();
  EXPECT_EQ(values_of((*cp)[0]), (V{3, 5}));
  EXPECT_FALSE(tensor_op_error(make_node("Compress", 2), {x, T<bool>({true, true, true, true, true}, {5})}).empty());
}

TEST(TensorOps, RangeOneHotEyeTrilu) {
  EXPECT_EQ(
      values_of(run_tensor_op(make_node("Range", 3), {T<float>({1}, {}), T<float>({-1}, {}), T<float>({-0.5f}, {})})),
      (V{1, 0.5, 0, -0.5}));
  EXPECT_FALSE(
      tensor_op_error(make_node("Range", 3), {T<int64_t>({0}, {}), T<int64_t>({3}, {}), T<int64_t>({0}, {})}).empty());
  const Tensor oh =
      run_tensor_op(make_node("OneHot", 3), {T<int64_t>({1, 5, -1}, {3}), T<int64_t>({3}, {}), T<float>({0, 1}, {2})});
  EXPECT_EQ(values_of(oh), (V{0, 1, 0, 0, 0, 0, 0, 0, 1}));  // 5 is out of range: all off
  const Tensor eye =
      run_tensor_op(make_node("EyeLike", 1, 1, Attrs{{"k", int64_t{-1}}}), {T<int64_t>({0, 0, 0, 0, 0, 0}, {3, 2})});
  EXPECT_EQ(values_of(eye), (V{0, 0, 1, 0, 0, 1}));
  const Tensor tr =
      run_tensor_op(make_node("Trilu", 2, 1, Attrs{{"upper", int64_t{0}}}), {iota_f32({2, 3}), T<int64_t>({-5}, {})});
  EXPECT_EQ(values_of(tr), (V{0, 0, 0, 0, 0, 0}));
  EXPECT_FALSE(tensor_op_error(make_node("ReverseSequence", 2), {iota_f32({2, 2}), T<int64_t>({3, 1}, {2})}).empty());
}

TEST(TensorOps, ConstantOfShapeAndSize) {
  Attrs a{{"value", T<int32_t>({7}, {1})}};
  const Tensor c = run_tensor_op(make_node("ConstantOfShape", 1, 1, a), {T<int64_t>({2, 2}, {2})});
  EXPECT_EQ(c.dtype(), DType::I32);
  EXPECT_EQ(values_of(c), (V{7, 7, 7, 7}));
  EXPECT_FALSE(tensor_op_error(make_node("ConstantOfShape", 1), {T<int64_t>({-2}, {1})}).empty());
  EXPECT_EQ(run_tensor_op(make_node("Size", 1), {iota_f32({3, 5})}).at_int(0), 15);
}

}  // namespace
}  // namespace ms
