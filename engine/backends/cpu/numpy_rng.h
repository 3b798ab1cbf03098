// numpy's legacy random stream (np.random.RandomState(seed), what onnx's reference implementation
// and its test generators draw from): MT19937 seeded with init_genrand, 53-bit uniform doubles
// (random_sample), the polar normal method (randn) and binomial(1, p) by inversion. std::mt19937 is
// the same generator, so the same seed gives numpy's values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

namespace ms::cpu {

class NumpyRng {
 public:
  explicit NumpyRng(uint32_t seed) : gen_(seed) {}
  // Uniform in [0, 1) with 53 random bits (numpy's random_sample).
  double uniform() {
    const uint32_t a = static_cast<uint32_t>(gen_()) >> 5, b = static_cast<uint32_t>(gen_()) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }
  // Standard normal, numpy's legacy polar method (the second value of each pair is kept).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double x1 = 0, x2 = 0, r2 = 0;
    do {
      x1 = 2.0 * uniform() - 1.0;
      x2 = 2.0 * uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    spare_ = f * x1;
    has_spare_ = true;
    return f * x2;
  }
  // One Bernoulli(p) draw as numpy's binomial(1, p): inversion on min(p, 1 - p), one uniform per call.
  int bernoulli(double p) { return p <= 0.5 ? inversion(p) : 1 - inversion(1.0 - p); }

 private:
  int inversion(double p) {
    const double q = 1.0 - p, qn = std::exp(std::log(q));
    const double bound = std::min(1.0, p + 10.0 * std::sqrt(p * q + 1));
    int x = 0;
    double px = qn, u = uniform();
    while (u > px) {
      ++x;
      if (x > bound) {
        x = 0;
        px = qn;
        u = uniform();
      } else {
        u -= px;
        px = (static_cast<double>(2 - x) * p * px) / (x * q);
      }
    }
    return x;
  }

  std::mt19937 gen_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace ms::cpu
