// Golden-dump test of the fold-batchnorm: BatchNorm into the conv before it, origins kept.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::fold_backend;
using pass_test::list;
using pass_test::run_passes;

TEST(FoldBatchNormPass, FoldsIntoConvAndKeepsBothOrigins) {
  const std::string text = R"(
    input x: f32[1,2,5,5]
    init w: f32[3,2,3,3] = 0.1 -0.2 0.3 0.05 -0.1
    init b: f32[3] = 0.5 -0.5 0.25
    init scale: f32[3] = 1.5 0.5 2
    init bias: f32[3] = 0.1 0.2 0.3
    init mean: f32[3] = 0.3 -0.1 0.2
    init var: f32[3] = 0.9 1.1 0.5
    c = Conv(x, w, b) {pads=[1,1,1,1]}
    y = BatchNormalization(c, scale, bias, mean, var) {epsilon=0.001}
    output y
  )";
  ir::Graph folded;
  const std::string got = run_passes(text, list(make_fold_batchnorm_pass(), make_dce_pass()), &folded);
  EXPECT_EQ(got, R"(graph main (%x: f32[1,2,5,5])
  init %w_bnfold: f32[3,2,3,3]
  init %y_bias: f32[3]
  #3 %y = Conv(%x, %w_bnfold, %y_bias) {pads=[1,1,1,1]} origins=[1,2] : f32[1,3,5,5]
  return %y
)");
  // Same numbers as the unfolded graph.
  auto be = backends::create_cpu_backend(1);
  ir::Graph orig = testing::parse_graph(text);
  const auto in = testing::inputs_of(orig);
  runtime::EagerExecutor a(orig, *be), b(folded, *be);
  auto ra = a.run(in), rb = b.run(in);
  ASSERT_TRUE(ra && rb);
  for (int64_t i = 0; i < (*ra)[0].numel(); ++i) {
    EXPECT_NEAR((*ra)[0].data<float>()[i], (*rb)[0].data<float>()[i], 1e-4) << i;
  }
}

}  // namespace
}  // namespace ms::compiler
