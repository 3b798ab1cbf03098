// Small helpers the sample programs share: timing, argument check, random inputs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/frontend/nn/nn.h"

namespace sample {

// True when the program was started with --quick (the test run: small sizes, few iterations).
inline bool quick(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--quick") == 0) return true;
  return false;
}

inline ms::Tensor random_input(const ms::Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  ms::Tensor t = ms::Tensor::empty(ms::DType::F32, shape);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& v : t.span<float>()) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = lo + (hi - lo) * static_cast<float>(s >> 40) / 16777216.0f;
  }
  return t;
}

// Median milliseconds of `iters` calls after `warmup` calls (the fastest one in *min when given).
inline double median_ms(const std::function<void()>& f, int iters, int warmup = 2, double* min = nullptr) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  if (min) *min = t.front();
  return t[t.size() / 2];
}

// Exits with a message when a Var failed.
inline const ms::nn::Var& check(const ms::nn::Var& v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "error: %s: %s\n", what, v.status().message().c_str());
    std::exit(1);
  }
  return v;
}

inline double max_abs_diff(const ms::Tensor& a, const ms::Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.at_double(i) - b.at_double(i)));
  return m;
}

}  // namespace sample
