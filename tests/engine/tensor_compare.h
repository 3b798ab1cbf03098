// Element-wise comparison of two tensors for model-level tests: |got - want| <= atol + rtol * |want|,
// reporting at most five differing elements; `reference` names where `want` came from.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/core/tensor.h"

namespace ms::testing_util {

inline void expect_tensors_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                                 const std::string& what, const std::string& reference = "expected") {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.at_double(i), w = want.at_double(i);
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", " << reference << " " << w;
      ++bad;
    }
  }
}

}  // namespace ms::testing_util
