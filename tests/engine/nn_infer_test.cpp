// nn op schemas: output shapes (also partial, -1 dims), attribute/shape errors that name the node,
// and the cost model.
#include <gtest/gtest.h>

#include "engine/ops/schema.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
using std::vector;

ir::ValueType vt(DType t, vector<int64_t> dims) {
  ir::ValueType v;
  v.dtype = t;
  v.dim_params.assign(dims.size(), "");
  v.dims = std::move(dims);
  return v;
}

ir::ValueType f32(vector<int64_t> dims) { return vt(DType::F32, std::move(dims)); }

// Inferred dims of output `i`, or the error message.
std::string infer(const ir::Node& node, const vector<ir::ValueType>& in, int64_t opset = 17, size_t i = 0) {
  auto out = infer_types(node, in, opset);
  if (!out) return "error: " + out.status().message();
  return (*out)[i].to_string();
}

void expect_error(const ir::Node& node, const vector<ir::ValueType>& in, const std::string& fragment,
                  int64_t opset = 17) {
  auto out = infer_types(node, in, opset);
  ASSERT_FALSE(out.has_value()) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(out.status().message().find(fragment), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find(node.label()), std::string::npos) << out.status().message();
  EXPECT_EQ(out.status().node_id(), node.id.value);
}

TEST(NnInfer, ConvShapesIncludingPartialDims) {
  const ir::Node conv =
      make_node("Conv", 3, 1, {{"strides", vector<int64_t>{2, 2}}, {"pads", vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_EQ(infer(conv, {f32({1, 3, 224, 224}), f32({64, 3, 7, 7}), f32({64})}), "f32[1,64,110,110]");
  EXPECT_EQ(infer(conv, {f32({-1, 3, -1, 32}), f32({8, 3, 3, 3}), f32({8})}), "f32[?,8,?,16]");
  ir::ValueType unknown_rank;
  unknown_rank.dtype = DType::F32;
  EXPECT_EQ(infer(conv, {unknown_rank, unknown_rank, f32({8})}), "f32[*]");
  const ir::Node same =
      make_node("Conv", 2, 1, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", vector<int64_t>{3}}});
  EXPECT_EQ(infer(same, {f32({2, 4, 10}), f32({5, 4, 4})}), "f32[2,5,4]");
  const ir::Node tr =
      make_node("ConvTranspose", 2, 1, {{"strides", vector<int64_t>{3, 2}}, {"output_shape", vector<int64_t>{10, 8}}});
  EXPECT_EQ(infer(tr, {f32({1, 1, 3, 3}), f32({1, 2, 3, 3})}), "f32[1,2,10,8]");
}

TEST(NnInfer, ConvErrorsNameTheNodeAndShapes) {
  ir::Node conv = make_node("Conv", 2, 1, {{"group", int64_t{2}}});
  conv.name = "conv1";
  conv.id = ir::NodeId{3};
  expect_error(conv, {f32({1, 8, 5, 5}), f32({4, 3, 3, 3})}, "input 1 (W) [4,3,3,3] has 3 channels per group, X has 4");
  expect_error(make_node("Conv", 2), {f32({1, 3, 5}), f32({4, 3, 3, 3})}, "must have the rank of X");
  expect_error(make_node("Conv", 2, 1, {{"pads", vector<int64_t>{1, 1}}}), {f32({1, 3, 5, 5}), f32({4, 3, 3, 3})},
               "'pads' has 2 values, expected 4");
  expect_error(make_node("Conv", 2), {f32({1, 3, 2, 2}), f32({4, 3, 3, 3})}, "output spatial dim 0 would be 0");
  expect_error(make_node("Conv", 2, 1, {{"auto_pad", std::string("SAME")}}), {f32({1, 3, 5, 5}), f32({4, 3, 3, 3})},
               "auto_pad 'SAME'");
  expect_error(make_node("Conv", 2), {vt(DType::I64, {1, 3, 5, 5}), vt(DType::I64, {4, 3, 3, 3})}, "float tensor");
}

TEST(NnInfer, PoolShapesAndErrors) {
  const ir::Node mp = make_node(
      "MaxPool", 1, 2,
      {{"kernel_shape", vector<int64_t>{3, 3}}, {"strides", vector<int64_t>{2, 2}}, {"ceil_mode", int64_t{1}}});
  EXPECT_EQ(infer(mp, {f32({1, 3, 4, 4})}), "f32[1,3,2,2]");
  EXPECT_EQ(infer(mp, {f32({1, 3, 4, 4})}, 17, 1), "i64[1,3,2,2]");
  EXPECT_EQ(infer(make_node("GlobalAveragePool", 1), {f32({2, 5, 7, -1})}), "f32[2,5,1,1]");
  expect_error(make_node("AveragePool", 1), {f32({1, 3, 4, 4})}, "'kernel_shape' is required");
  expect_error(make_node("MaxPool", 1, 1, {{"kernel_shape", vector<int64_t>{2}}}), {f32({1, 3, 4, 4})},
               "kernel_shape [2] has 1 values but the input has 2 spatial axes");
  expect_error(
      make_node("MaxPool", 1, 1, {{"kernel_shape", vector<int64_t>{2, 2}}, {"strides", vector<int64_t>{0, 1}}}),
      {f32({1, 3, 4, 4})}, "'strides' = [0,1] must be >= 1");
}

TEST(NnInfer, NormShapesAndErrors) {
  EXPECT_EQ(infer(make_node("BatchNormalization", 5), {f32({2, 3, 4}), f32({3}), f32({3}), f32({3}), f32({3})}),
            "f32[2,3,4]");
  expect_error(make_node("BatchNormalization", 5), {f32({2, 3, 4}), f32({4}), f32({3}), f32({3}), f32({3})},
               "input 1 (scale) has 4 values, X has 3 channels");
  expect_error(make_node("BatchNormalization", 5, 3), {f32({2, 3, 4}), f32({3}), f32({3}), f32({3}), f32({3})},
               "only defined when training_mode=1", 15);
  const ir::Node ln = make_node("LayerNormalization", 2, 3, {{"axis", int64_t{1}}});
  EXPECT_EQ(infer(ln, {f32({2, 3, 4}), f32({3, 4})}, 17, 1), "f32[2,1,1]");
  expect_error(ln, {f32({2, 3, 4}), f32({5})}, "does not broadcast to the normalized dims [3,4]");
  expect_error(make_node("LayerNormalization", 2, 1, {{"axis", int64_t{3}}}), {f32({2, 3, 4}), f32({4})}, "'axis' = 3");
  expect_error(make_node("LRN", 1), {f32({1, 3, 4, 4})}, "'size' is required");
  expect_error(make_node("MeanVarianceNormalization", 1), {f32({})}, "axis 0 is out of range");
  expect_error(make_node("GlobalLpPool", 1, 1, {{"p", int64_t{0}}}), {f32({1, 3, 4, 4})}, "'p' must be >= 1");
}

TEST(NnInfer, MatMulGemmShapesAndErrors) {
  const ir::Node mm = make_node("MatMul", 2);
  EXPECT_EQ(infer(mm, {f32({2, 1, 3, 4}), f32({5, 4, 6})}), "f32[2,5,3,6]");
  EXPECT_EQ(infer(mm, {f32({4}), f32({-1, 4, 6})}), "f32[?,6]");
  EXPECT_EQ(infer(mm, {f32({3, 4}), f32({4})}), "f32[3]");
  expect_error(mm, {f32({3, 4}), f32({5, 6})}, "inner dims differ");
  expect_error(mm, {f32({2, 3, 4}), f32({3, 4, 6})}, "do not broadcast");
  const ir::Node gemm = make_node("Gemm", 3, 1, {{"transA", int64_t{1}}});
  EXPECT_EQ(infer(gemm, {f32({4, 3}), f32({4, 5}), f32({1, 5})}), "f32[3,5]");
  expect_error(gemm, {f32({4, 3}), f32({4, 5}), f32({2, 5})}, "(C) [2,5] does not broadcast");
  expect_error(gemm, {f32({3, 4}), f32({4, 5}), f32({5})}, "inner dims differ");
}

TEST(NnInfer, SoftmaxDropoutLossShapesAndErrors) {
  EXPECT_EQ(infer(make_node("Softmax", 1), {f32({2, -1})}), "f32[2,?]");
  expect_error(make_node("Softmax", 1, 1, {{"axis", int64_t{2}}}), {f32({2, 3})}, "'axis' = 2 is out of range");
  EXPECT_EQ(infer(make_node("Dropout", 1, 2), {f32({2, 3})}, 12, 1), "bool[2,3]");
  EXPECT_EQ(infer(make_node("Dropout", 1, 2), {f32({2, 3})}, 7, 1), "f32[2,3]");
  const ir::Node nll = make_node("NegativeLogLikelihoodLoss", 2, 1, {{"reduction", std::string("none")}});
  EXPECT_EQ(infer(nll, {f32({2, 5, 3}), vt(DType::I64, {2, 3})}), "f32[2,3]");
  expect_error(nll, {f32({2, 5, 3}), vt(DType::I64, {2, 4})}, "without the class axis 1");
  expect_error(make_node("SoftmaxCrossEntropyLoss", 2, 1, {{"reduction", std::string("avg")}}),
               {f32({2, 5}), vt(DType::I64, {2})}, "'reduction' = 'avg'");
  EXPECT_EQ(infer(make_node("SoftmaxCrossEntropyLoss", 2, 2), {f32({2, 5}), vt(DType::I64, {2})}, 13, 1), "f32[2,5]");
}

TEST(NnCost, ConvAndMatMulFlops) {
  const ir::Node conv = make_node("Conv", 2, 1, {{"group", int64_t{2}}});
  const vector<ir::ValueType> in{f32({2, 4, 8, 8}), f32({6, 2, 3, 3})};
  const vector<ir::ValueType> out{f32({2, 6, 6, 6})};
  const ops::Cost c = ops::node_cost(conv, in, out);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 6 * 6 * 6 * (4 / 2) * 3 * 3);  // 2*N*Cout*H*W*Cin/g*kh*kw
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (2 * 4 * 8 * 8 + 6 * 2 * 3 * 3 + 2 * 6 * 6 * 6));
  const ops::Cost m = ops::node_cost(make_node("MatMul", 2), {f32({3, 5, 7}), f32({7, 4})}, {f32({3, 5, 4})});
  EXPECT_DOUBLE_EQ(m.flops, 2.0 * 3 * 5 * 4 * 7);
  const auto* s = ops::Registry::instance().find("Conv");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->category, ops::OpCategory::Conv);
}

}  // namespace
}  // namespace ms::test
