// Deterministic parameter initialization. One global generator (splitmix64, same numbers on every
// platform) seeded by manual_seed; modules draw from it when constructed, so the same seed and the
// same construction order give the same weights, whatever the mode they later run in.
#pragma once

#include <cstdint>

#include "engine/core/tensor.h"

namespace ms::nn {

void manual_seed(uint64_t seed);
uint64_t next_random();
// Uniform in [lo, hi).
float uniform(float lo, float hi);

// f32 tensors.
Tensor uniform_tensor(const Shape& shape, float bound);  // U(-bound, bound)
// PyTorch's default for Linear/Conv weights (kaiming_uniform with a = sqrt(5)): U(±1/sqrt(fan_in)).
Tensor kaiming_uniform(const Shape& shape, int64_t fan_in);
Tensor filled(const Shape& shape, float value);

}  // namespace ms::nn
