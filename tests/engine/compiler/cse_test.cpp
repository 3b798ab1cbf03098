// Golden-dump test of the cse: equal nodes merge, different constants stay.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::fold_backend;
using pass_test::list;
using pass_test::run_passes;

TEST(CsePass, MergesEqualNodesButNotDifferentConstants) {
  const std::string got = run_passes(R"(
    input x: f32[4]
    a = Relu(x)
    b = Relu(x)
    c = Add(a, b)
    d = LeakyRelu(x) {alpha=0.1}
    e = LeakyRelu(x) {alpha=0.2}
    f = Add(d, e)
    output c, f
  )",
                                     list(make_cse_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[4])
  #1 %a = Relu(%x) : f32[4]
  #3 %c = Add(%a, %a) : f32[4]
  #4 %d = LeakyRelu(%x) {alpha=0.100000001} : f32[4]
  #5 %e = LeakyRelu(%x) {alpha=0.200000003} : f32[4]
  #6 %f = Add(%d, %e) : f32[4]
  return %c, %f
)");
}

TEST(CsePass, NodesReadingEqualConstantsUnderOtherNamesMerge) {
  // An exporter's per-layer copies of the same bias: equal bytes, other names. A different value
  // keeps its node.
  const std::string got = run_passes(R"(
    input x: f32[4]
    init b0: f32[4] = 0.5
    init b1: f32[4] = 0.5
    init b2: f32[4] = 0.25
    a = Add(x, b0)
    b = Add(x, b1)
    c = Add(x, b2)
    s = Sum(a, b, c)
    output s
  )",
                                     list(make_cse_pass()));
  EXPECT_NE(got.find("%a = Add(%x, %b0)"), std::string::npos) << got;
  EXPECT_EQ(got.find("%b = Add"), std::string::npos) << got;
  EXPECT_NE(got.find("%c = Add(%x, %b2)"), std::string::npos) << got;
  EXPECT_NE(got.find("Sum(%a, %a, %c)"), std::string::npos) << got;
}

}  // namespace
}  // namespace ms::compiler
