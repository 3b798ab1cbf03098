// Golden-dump test of the simplify: identities, no-op casts, neutral arithmetic, transposes and reshapes, broadcasts.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::fold_backend;
using pass_test::list;
using pass_test::run_passes;

TEST(SimplifyPass, DropsIdentityDropoutNoOpCastAndNeutralArithmetic) {
  const std::string got = run_passes(R"(
    input x: f32[2,3]
    init one: f32[1] = 1
    init zero: f32[3] = 0
    a = Identity(x)
    b = Dropout(a) {ratio=0.5}
    c = Cast(b) {to=1}
    d = Mul(c, one)
    e = Add(zero, d)
    f = Relu(e)
    output f
  )",
                                     list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3])
  #6 %f = Relu(%x) : f32[2,3]
  return %f
)");
}

// A Slice that takes all of its input and a Pad of zeros are dropped; a Slice stepping backwards over
// a whole axis (same shape, reversed) and a Pad whose pads cancel (same shape, shifted) stay.
TEST(SimplifyPass, DropsSliceTakingAllAndPadOfZerosButNotReversingOrShifting) {
  const std::string got = run_passes(R"(
    input x: f32[2,3]
    init s0: i64[1] = 0
    init big: i64[1] = 9
    init ax: i64[1] = 1
    init one: i64[1] = 1
    init neg: i64[1] = -1
    init last: i64[1] = -1
    init low: i64[1] = -9
    init zeros: i64[4] = 0 0 0 0
    init shift: i64[4] = 0 -1 0 1
    a = Slice(x, s0, big, ax, one)
    b = Pad(a, zeros) {mode="constant"}
    c = Slice(b, last, low, ax, neg)
    d = Pad(c, shift) {mode="constant"}
    output d
  )",
                                     list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got.find("%a = Slice"), std::string::npos) << got;
  EXPECT_EQ(got.find("%b = Pad"), std::string::npos) << got;
  EXPECT_NE(got.find("%c = Slice(%x, %last, %low, %ax, %neg)"), std::string::npos) << got;
  EXPECT_NE(got.find("%d = Pad(%c, %shift)"), std::string::npos) << got;
}

// A training-mode Dropout stays unless its ratio is a constant 0 (then it keeps every value, unscaled:
// the form torchvision's Swin exports for its attention dropout).
TEST(SimplifyPass, TrainingDropoutGoesOnlyWithRatioZero) {
  const std::string got = run_passes(R"(
    input x: f32[2,3]
    init zero: f32[] = 0
    init half: f32[] = 0.5
    init yes: bool[] = 1
    a = Dropout(x, zero, yes)
    b = Dropout(a, half, yes)
    output b
  )",
                                     list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3])
  init %half: f32[]
  init %yes: bool[]
  #2 %b = Dropout(%x, %half, %yes) : f32[2,3]
  return %b
)");
}

// Pow(x, 2) becomes Mul(x, x); another exponent, and a 2 that broadcasts x to a higher rank, stay.
TEST(SimplifyPass, SquaresBecomeMultiplies) {
  const std::string got = run_passes(R"(
    input x: f32[2,3]
    init two: f32[] = 2
    init three: f32[] = 3
    init two3: f32[1,1,1] = 2
    a = Pow(x, two)
    b = Pow(a, three)
    c = Pow(b, two3)
    output c
  )",
                                     list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3])
  init %three: f32[]
  init %two3: f32[1,1,1]
  #1 %a = Mul(%x, %x) : f32[2,3]
  #2 %b = Pow(%a, %three) : f32[2,3]
  #3 %c = Pow(%b, %two3) : f32[1,2,3]
  return %c
)");
}

TEST(SimplifyPass, ComposesTransposesAndMergesReshapes) {
  const std::string got = run_passes(R"(
    input x: f32[2,3,4]
    init s1: i64[2] = 6 4
    init s2: i64[1] = 24
    t1 = Transpose(x) {perm=[1,0,2]}
    t2 = Transpose(t1) {perm=[1,0,2]}
    r1 = Reshape(t2, s1)
    r2 = Reshape(r1, s2)
    u1 = Transpose(x) {perm=[2,0,1]}
    u2 = Transpose(u1) {perm=[0,2,1]}
    output r2, u2
  )",
                                     list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3,4])
  init %r2_shape: i64[1]
  #4 %r2 = Reshape(%x, %r2_shape) origins=[3,4] : f32[24]
  #6 %u2 = Transpose(%x) {perm=[2,1,0]} origins=[5,6] : f32[4,3,2]
  return %r2, %u2
)");
}

TEST(SimplifyPass, BroadcastsInsteadOfExpandWhereTheReaderKeepsItsShape) {
  // e feeds Mul (full-shape other operand: bypassed), Add with a [1,3,1] operand (the result would
  // shrink to [1,3,1]: kept) and Where (bypassed); the graph output stays the Expand's.
  const std::string got = run_passes(R"(
    input x: f32[2,3,4]
    input s: f32[1,3,1]
    input c: bool[2,3,4]
    init shape: i64[3] = 2 3 4
    e = Expand(s, shape)
    m = Mul(x, e)
    a = Add(e, s)
    w = Where(c, e, x)
    output m, a, w
  )",
                                     list(make_simplify_pass(), make_dce_pass()));
  EXPECT_EQ(got, R"(graph main (%x: f32[2,3,4], %s: f32[1,3,1], %c: bool[2,3,4])
  init %shape: i64[3]
  #1 %e = Expand(%s, %shape) : f32[2,3,4]
  #2 %m = Mul(%x, %s) : f32[2,3,4]
  #3 %a = Add(%e, %s) : f32[2,3,4]
  #4 %w = Where(%c, %s, %x) : f32[2,3,4]
  return %m, %a, %w
)");
}

}  // namespace
}  // namespace ms::compiler
