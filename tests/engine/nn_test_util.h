// Small helpers for the nn kernel tests: deterministic data and naive reference loops.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "tests/engine/kernel_harness.h"

namespace ms::test::nn {

// Values in [-1, 1) from a fixed LCG, so failures reproduce.
inline std::vector<double> pseudo_random(int64_t n, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<double>(s >> 8) / static_cast<double>(1u << 23) - 1.0;
  }
  return v;
}

inline Tensor make(DType t, const Shape& shape, const std::vector<double>& values) {
  Tensor out = Tensor::empty(t, shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double v = values[static_cast<size_t>(i)];
    switch (t) {
      case DType::F32: out.data<float>()[i] = static_cast<float>(v); break;
      case DType::F64: out.data<double>()[i] = v; break;
      case DType::F16: out.data<f16>()[i] = static_cast<f16>(static_cast<float>(v)); break;
      case DType::I64: out.data<int64_t>()[i] = static_cast<int64_t>(v); break;
      case DType::I32: out.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      default: ADD_FAILURE() << "make(): unhandled dtype";
    }
  }
  return out;
}

inline Tensor random_tensor(DType t, const Shape& shape, uint32_t seed) {
  return make(t, shape, pseudo_random(numel(shape), seed));
}

// Element-wise |a - b| <= atol + rtol * |b|; reports the first mismatch.
inline void expect_close(const Tensor& got, const std::vector<double>& want, double atol, double rtol,
                         const std::string& what) {
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size()) << what;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.at_double(i), w = want[static_cast<size_t>(i)];
    if (std::abs(g - w) > atol + rtol * std::abs(w)) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
      return;
    }
  }
}

struct Conv2dSpec {
  int64_t group = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
};

// Naive 2-D convolution in double: x [N,C,H,W], w [M,C/g,KH,KW], optional bias, y [N,M,OH,OW].
inline std::vector<double> naive_conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Shape& y,
                                        const Conv2dSpec& s) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t m = w.dim(0), cg = w.dim(1), kh = w.dim(2), kw = w.dim(3), oh = y[2], ow = y[3];
  std::vector<double> out(static_cast<size_t>(numel(y)));
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b ? b->at_double(oc) : 0.0;
          const int64_t g = oc / (m / s.group);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t hi = i * s.sh - s.pt + a * s.dh, wi = j * s.sw - s.pl + e * s.dw;
                if (hi < 0 || hi >= h || wi < 0 || wi >= wd) continue;
                acc += x.at_double(((b0 * c + g * cg + ic) * h + hi) * wd + wi) *
                       w.at_double(((oc * cg + ic) * kh + a) * kw + e);
              }
          out[static_cast<size_t>(((b0 * m + oc) * oh + i) * ow + j)] = acc;
        }
  return out;
}

}  // namespace ms::test::nn
