// Golden-dump test of the constant-folding: constants and static shape subgraphs.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::fold_backend;
using pass_test::list;
using pass_test::run_passes;

TEST(ConstantFoldingPass, FoldsConstantsAndShapeSubgraphsOnStaticShapes) {
  const std::string got = run_passes(R"(
    input x: f32[2,3,4]
    init a: f32[3] = 1 2 3
    init b: f32[3] = 10
    init idx: i64[1] = 0
    init minus1: i64[1] = -1
    c = Add(a, b)
    s = Shape(x)
    n = Gather(s, idx) {axis=0}
    shp = Concat(n, minus1) {axis=0}
    y = Reshape(x, shp)
    z = Mul(y, y)
    output z, c
  )",
                                     list(make_constant_folding_pass(fold_backend()), make_dce_pass()));
  // c is a graph output: it stays a node (callers own outputs); the shape chain folds away.
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3,4])
  init %a: f32[3]
  init %b: f32[3]
  init %shp: i64[2]
  #1 %c = Add(%a, %b) : f32[3]
  #5 %y = Reshape(%x, %shp) : f32[2,12]
  #6 %z = Mul(%y, %y) : f32[2,12]
  return %z, %c
)");
}

// A foldable node nothing reads is not evaluated (dead-code elimination drops it): its value would
// be computed for nothing, a QDQ model's whole weights once fold-qdq took their matmuls.
TEST(ConstantFoldingPass, LeavesDeadNodesToDeadCodeElimination) {
  const char* text = R"(
    input x: f32[3]
    init a: f32[3] = 1 2 3
    init b: f32[3] = 10
    dead = Mul(a, b)
    c = Add(a, b)
    y = Add(x, c)
    output y
  )";
  const std::string folded = run_passes(text, list(make_constant_folding_pass(fold_backend())));
  EXPECT_NE(folded.find("%dead = Mul(%a, %b)"), std::string::npos) << folded;  // not evaluated
  EXPECT_NE(folded.find("init %c: f32[3]"), std::string::npos) << folded;      // read: folded
  const std::string cleaned = run_passes(text, list(make_constant_folding_pass(fold_backend()), make_dce_pass()));
  EXPECT_EQ(cleaned.find("dead"), std::string::npos) << cleaned;
}

}  // namespace
}  // namespace ms::compiler
