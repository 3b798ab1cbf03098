// Helpers for the builder-API tests: random inputs, both-mode runs, tensor comparison.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/frontend/nn/nn.h"

namespace ms::nn::testing {

inline Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = Tensor::empty(DType::F32, shape);
  uint64_t s = seed * 2654435761u + 1;
  for (float& v : t.span<float>()) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = lo + (hi - lo) * static_cast<float>(s >> 40) / 16777216.0f;
  }
  return t;
}

// Max |a-b| / (1 + |b|); 1e30 on shape or dtype mismatch.
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return 1e30;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.at_double(i), y = b.at_double(i);
    if (std::isnan(x) != std::isnan(y)) return 1e30;
    m = std::max(m, std::abs(x - y) / (1.0 + std::abs(y)));
  }
  return m;
}

// Sets a mode for the scope of a test and restores PyNative after.
struct ModeScope {
  explicit ModeScope(Mode m) { set_context(m); }
  ~ModeScope() { set_context(Mode::PyNative); }
};

// Runs `m` on `xs` in PyNative and then in Graph mode; both must succeed and agree.
inline void expect_modes_agree(Module& m, const Vars& xs, double tol = 1e-4, const std::string& what = "") {
  Vars eager, graph;
  {
    ModeScope s(Mode::PyNative);
    eager = m(xs);
  }
  {
    ModeScope s(Mode::Graph);
    graph = m(xs);
  }
  ASSERT_TRUE(first_error(eager).is_ok()) << what << ": " << first_error(eager).message();
  ASSERT_TRUE(first_error(graph).is_ok()) << what << ": " << first_error(graph).message();
  ASSERT_EQ(eager.size(), graph.size()) << what;
  for (size_t i = 0; i < eager.size(); ++i) {
    const Tensor a = *eager[i].tensor();
    const Tensor b = *graph[i].tensor();
    EXPECT_LE(max_rel_diff(b, a), tol) << what << " output " << i << " eager " << a.to_string() << " graph "
                                       << b.to_string();
  }
}

}  // namespace ms::nn::testing
