// session::deviation: a lower-precision run's distance from the f32 reference, as bench, run and
// compare print it for --precision bf16.
#include <gtest/gtest.h>

#include "app/session/figures.h"

namespace ms::session {
namespace {

TEST(Deviation, RelativeToTheReferenceScaleAndTopOne) {
  const Tensor want = Tensor::from_vector<float>({1.f, 2.f, 3.f}, {3});
  const Tensor ids = Tensor::from_vector<int64_t>({1, 2}, {2});
  Deviation d = deviation({Tensor::from_vector<float>({1.f, 2.1f, 3.f}, {3}), ids}, {want, ids});
  EXPECT_EQ(d.compared, 1u);  // the integer output is not a deviation
  EXPECT_NEAR(d.max_rel, 0.1 / 3, 1e-6);
  EXPECT_NEAR(d.mean_rel, 0.1 / 6, 1e-6);
  EXPECT_TRUE(d.argmax_equal);
  d = deviation({Tensor::from_vector<float>({3.5f, 2.f, 3.f}, {3})}, {want});
  EXPECT_FALSE(d.argmax_equal);
  EXPECT_NEAR(d.max_rel, 2.5 / 3, 1e-6);
  // Shapes that differ are not compared; equal outputs deviate by nothing.
  d = deviation({Tensor::from_vector<float>({1.f, 2.f}, {2}), want}, {want, want});
  EXPECT_EQ(d.compared, 1u);
  EXPECT_EQ(d.max_rel, 0.0);
  EXPECT_EQ(d.mean_rel, 0.0);
}

}  // namespace
}  // namespace ms::session
