#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "views/common/axis.h"

namespace ms::views {
namespace {

TEST(Axis, NiceStepIsOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(nice_step(10, 5), 2);
  EXPECT_DOUBLE_EQ(nice_step(0.00234, 3), 0.001);
  EXPECT_DOUBLE_EQ(nice_step(11.2, 2), 10);
  EXPECT_DOUBLE_EQ(nice_step(7, 2), 5);
  EXPECT_DOUBLE_EQ(nice_step(0, 4), 1);
}

TEST(Axis, TicksAreRoundValuesUpToTheMaximum) {
  // The comparison chart's bars reach 0.00234 ms: its ticks were 0.00117 and 0.00234 before.
  const std::vector<double> t = axis_ticks(0.00234, 3);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0], 0);
  EXPECT_DOUBLE_EQ(t[1], 0.001);
  EXPECT_DOUBLE_EQ(t[2], 0.002);
  // A maximum that is itself a tick keeps it, rounding error aside.
  const std::vector<double> u = axis_ticks(0.3, 3);
  ASSERT_EQ(u.size(), 4u);
  EXPECT_NEAR(u.back(), 0.3, 1e-12);
  // Never more than n + 1 ticks, never past the maximum.
  for (double m : {0.7, 3.0, 11.19, 1234.5, 1e-6})
    for (int n = 1; n < 8; ++n) {
      const std::vector<double> v = axis_ticks(m, n);
      EXPECT_LE(v.size(), static_cast<size_t>(n) + 1) << m << " " << n;
      EXPECT_LE(v.back(), m * (1 + 1e-9)) << m << " " << n;
    }
}

TEST(Axis, EmptyOrBrokenRangeHasOnlyZero) {
  EXPECT_EQ(axis_ticks(0, 4), std::vector<double>{0.0});
  EXPECT_EQ(axis_ticks(-1, 4), std::vector<double>{0.0});
  EXPECT_EQ(axis_ticks(std::numeric_limits<double>::quiet_NaN(), 4), std::vector<double>{0.0});
  EXPECT_EQ(axis_ticks(std::numeric_limits<double>::infinity(), 4), std::vector<double>{0.0});
}

}  // namespace
}  // namespace ms::views
