// The ONNX node tests of the reduction family (Reduce*, ArgMax/ArgMin, CumSum, TopK, Einsum, Det),
// run through inference and the CPU kernels. Data: reduce_onnx_cases.inc (see reduce_onnx_cases.py).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

template <class E> Tensor T(std::vector<E> values, Shape shape) {
  // Empty data (an empty axes list) without copying from a null pointer.
  if (values.empty()) return Tensor::empty(dtype_of<E>(), std::move(shape));
  return Tensor::from_vector<E>(values, std::move(shape));
}

struct OnnxCase {
  const char* name;
  const char* op;
  int64_t opset;
  std::map<std::string, ir::Attribute> attrs;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

const std::vector<OnnxCase>& cases() {
  static const std::vector<OnnxCase> all = {
#include "tests/engine/reduce_onnx_cases.inc"
  };
  return all;
}

class ReduceOnnx : public ::testing::TestWithParam<size_t> {};

TEST_P(ReduceOnnx, MatchesReference) {
  const OnnxCase& c = cases()[GetParam()];
  SCOPED_TRACE(c.name);
  const ir::Node node = test::make_node(c.op, c.inputs.size(), c.outputs.size(), c.attrs);
  // Static inference (no values) must agree with the outputs' ranks where it claims to know them.
  auto types = test::infer_types(node, c.inputs, c.opset, /*with_values=*/false);
  ASSERT_TRUE(types.has_value()) << types.status().message();
  auto run = test::run_kernel(node, c.inputs, c.opset);
  ASSERT_TRUE(run.has_value()) << run.status().message();
  ASSERT_EQ(run->size(), c.outputs.size());
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const Tensor& got = (*run)[i];
    const Tensor& want = c.outputs[i];
    ASSERT_EQ(got.dtype(), want.dtype()) << "output " << i;
    ASSERT_EQ(got.shape(), want.shape()) << "output " << i;
    if ((*types)[i].dims) {
      ASSERT_EQ((*types)[i].dims->size(), want.shape().size()) << "static rank of output " << i;
      for (size_t d = 0; d < want.shape().size(); ++d) {
        const int64_t s = (*(*types)[i].dims)[d];
        EXPECT_TRUE(s == -1 || s == want.shape()[d]) << "static dim " << d << " of output " << i;
      }
    }
    const auto g = test::values_of(got), w = test::values_of(want);
    for (size_t k = 0; k < w.size(); ++k) {
      if (std::isnan(w[k])) {
        EXPECT_TRUE(std::isnan(g[k])) << "output " << i << " element " << k;
        continue;
      }
      const double tol = want.dtype() == DType::F32 ? 1e-5 + 1e-5 * std::abs(w[k]) : 1e-12 + 1e-12 * std::abs(w[k]);
      EXPECT_NEAR(g[k], w[k], tol) << "output " << i << " element " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Node, ReduceOnnx, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(cases()[info.param].name).substr(5);  // drop "test_"
                         });

}  // namespace
}  // namespace ms
