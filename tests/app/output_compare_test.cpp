// Conformance's output comparison: f32 within rtol/atol; bf16 and f16 also within kUlp16 units in
// the last place of their type (ONNX leaves intermediate precision open, and rtol 1e-3 is finer
// than bf16's own step), and no further.
#include <gtest/gtest.h>

#include <vector>

#include "app/cli/output_compare.h"
#include "engine/core/dtype.h"
#include "engine/core/tensor.h"

namespace {

using ms::DType;
using ms::Tensor;

Tensor f32_tensor(const std::vector<float>& v) {
  Tensor t = Tensor::zeros(DType::F32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

Tensor bf16_tensor(const std::vector<float>& v) {
  Tensor t = Tensor::zeros(DType::BF16, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<ms::bf16>()[i] = ms::bf16(v[i]);
  return t;
}

TEST(OutputCompare, Bf16MatchesWithinTwoUnitsInTheLastPlaceAndNoFurther) {
  // Near 0.5 bf16's step is 2^-8: 0.5625 and 0.55859375 are one step apart (off by 0.7% > rtol).
  const float step = 1.0f / 256;
  EXPECT_EQ(ms::cli::compare_value(bf16_tensor({0.55859375f}), bf16_tensor({0.5625f}), 1e-3, 1e-5), "");
  EXPECT_EQ(ms::cli::compare_value(bf16_tensor({0.5625f - 2 * step}), bf16_tensor({0.5625f}), 1e-3, 1e-5), "");
  const std::string three =
      ms::cli::compare_value(bf16_tensor({0.5625f - 3 * step}), bf16_tensor({0.5625f}), 1e-3, 1e-5);
  EXPECT_NE(three.find("1 of 1 values differ"), std::string::npos) << three;
  // The step scales with the value: at 64 it is 0.5, so 65 matches and 65.5 does not.
  EXPECT_EQ(ms::cli::compare_value(bf16_tensor({65.f}), bf16_tensor({64.f}), 1e-3, 1e-5), "");
  EXPECT_FALSE(ms::cli::compare_value(bf16_tensor({65.5f}), bf16_tensor({64.f}), 1e-3, 1e-5).empty());
}

TEST(OutputCompare, F32KeepsRtolAndAtolOnly) {
  EXPECT_EQ(ms::cli::compare_value(f32_tensor({1.0005f}), f32_tensor({1.f}), 1e-3, 1e-5), "");
  const std::string diff = ms::cli::compare_value(f32_tensor({1.f, 1.01f}), f32_tensor({1.f, 1.f}), 1e-3, 1e-5);
  EXPECT_NE(diff.find("1 of 2 values differ; first at flat index 1"), std::string::npos) << diff;
}

}  // namespace
