// The ONNX node tests of the tensor/shape family run through inference and the CPU kernels, once
// with preallocated outputs (eager) and once with none (graph mode with unknown shapes: kernels
// allocate or return views). Data: tensor_onnx_cases.inc (see tensor_onnx_cases.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/engine/tensor_test_util.h"

namespace ms {
namespace {

using test::T;

// A tensor from little-endian hex bytes (how the generator writes large arrays).
template <class E> Tensor H(const char* hex, Shape shape) {
  Tensor t = Tensor::empty(dtype_of<E>(), std::move(shape));
  auto* out = static_cast<unsigned char*>(t.raw());
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < t.nbytes(); ++i)
    out[i] = static_cast<unsigned char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  return t;
}

struct OnnxCase {
  const char* name;
  const char* op;
  int64_t opset;
  std::map<std::string, ir::Attribute> attrs;
  std::vector<Tensor> inputs;
  std::vector<size_t> omitted;
  std::vector<Tensor> outputs;
};

const std::vector<OnnxCase>& cases() {
  static const std::vector<OnnxCase> all = {
#include "tests/engine/tensor_onnx_cases.inc"
  };
  return all;
}

void expect_same(const Tensor& got, const Tensor& want, size_t i) {
  ASSERT_TRUE(got.defined()) << "output " << i;
  ASSERT_EQ(got.dtype(), want.dtype()) << "output " << i;
  ASSERT_EQ(got.shape(), want.shape()) << "output " << i;
  const auto g = test::values_of(got), w = test::values_of(want);
  for (size_t k = 0; k < w.size(); ++k) {
    if (std::isnan(w[k])) {
      EXPECT_TRUE(std::isnan(g[k])) << "output " << i << " element " << k;
      continue;
    }
    const double tol = is_float(want.dtype()) ? 1e-5 + 1e-5 * std::abs(w[k]) : 0.0;
    EXPECT_NEAR(g[k], w[k], tol) << "output " << i << " element " << k;
  }
}

class TensorOnnx : public ::testing::TestWithParam<size_t> {};

TEST_P(TensorOnnx, MatchesReference) {
  const OnnxCase& c = cases()[GetParam()];
  SCOPED_TRACE(c.name);
  const ir::Node node = test::make_node(c.op, c.inputs.size(), c.outputs.size(), c.attrs, c.omitted);
  // Static inference (no values) must agree with the outputs wherever it claims to know a dim.
  auto types = test::infer_types(node, c.inputs, c.opset, /*with_values=*/false);
  ASSERT_TRUE(types.has_value()) << types.status().message();
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const auto& t = (*types)[i];
    EXPECT_EQ(t.dtype, c.outputs[i].dtype()) << "static dtype of output " << i;
    if (!t.dims) continue;
    ASSERT_EQ(t.dims->size(), c.outputs[i].shape().size()) << "static rank of output " << i;
    for (size_t d = 0; d < t.dims->size(); ++d) {
      EXPECT_TRUE((*t.dims)[d] == -1 || (*t.dims)[d] == c.outputs[i].shape()[d]) << "static dim " << d;
    }
  }
  // With values (eager), inference is exact except for data-dependent ops.
  auto exact = test::infer_types(node, c.inputs, c.opset, /*with_values=*/true);
  ASSERT_TRUE(exact.has_value()) << exact.status().message();
  const std::string op = c.op;
  if (op != "NonZero" && op != "Compress") {
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      EXPECT_TRUE((*exact)[i].is_static()) << "eager inference of output " << i << ": " << (*exact)[i].to_string();
    }
  }

  auto run = test::run_kernel(node, c.inputs, c.opset);
  ASSERT_TRUE(run.has_value()) << run.status().message();
  ASSERT_EQ(run->size(), c.outputs.size());
  for (size_t i = 0; i < c.outputs.size(); ++i) expect_same((*run)[i], c.outputs[i], i);

  auto free_run = test::run_unallocated(node, c.inputs, c.opset);
  ASSERT_TRUE(free_run.has_value()) << free_run.status().message();
  for (size_t i = 0; i < c.outputs.size(); ++i) expect_same((*free_run)[i], c.outputs[i], i);
}

INSTANTIATE_TEST_SUITE_P(Node, TensorOnnx, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(cases()[info.param].name).substr(5);  // drop "test_"
                         });

}  // namespace
}  // namespace ms
