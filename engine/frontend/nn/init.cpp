#include "engine/frontend/nn/init.h"

#include <cmath>

namespace ms::nn {
namespace {
uint64_t g_state = 0x9E3779B97F4A7C15ull;
}

void manual_seed(uint64_t seed) { g_state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull; }

uint64_t next_random() {
  uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float uniform(float lo, float hi) {
  const float u = static_cast<float>(next_random() >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

Tensor uniform_tensor(const Shape& shape, float bound) {
  Tensor t = Tensor::empty(DType::F32, shape);
  for (float& v : t.span<float>()) v = uniform(-bound, bound);
  return t;
}

Tensor kaiming_uniform(const Shape& shape, int64_t fan_in) {
  return uniform_tensor(shape, fan_in > 0 ? 1.0f / std::sqrt(static_cast<float>(fan_in)) : 0.0f);
}

Tensor filled(const Shape& shape, float value) {
  Tensor t = Tensor::empty(DType::F32, shape);
  for (float& v : t.span<float>()) v = value;
  return t;
}

}  // namespace ms::nn
