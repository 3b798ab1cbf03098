// Golden-dump test of the dce: unread nodes and initializers go.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::fold_backend;
using pass_test::list;
using pass_test::run_passes;

TEST(DcePass, RemovesUnreadNodesAndInitializers) {
  const std::string got = run_passes(R"(
    input x: f32[4]
    init unused: f32[4] = 1
    a = Relu(x)
    b = Exp(a)
    c = Neg(x)
    output c
  )",
                                     list(make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[4])
  #3 %c = Neg(%x) : f32[4]
  return %c
)");
}

}  // namespace
}  // namespace ms::compiler
