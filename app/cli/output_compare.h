// How a conformance case's outputs are held to the expected ones: floats within rtol/atol (16-bit
// floats also within kUlp16 units in the last place of their type), narrow and integer types and
// strings exactly, sequences element-wise and optionals by presence and then their value.
#pragma once

#include <string>

#include "engine/core/tensor.h"

namespace ms::cli {

// bf16 and f16 outputs also match within this many units in the last place of their type.
inline constexpr double kUlp16 = 2;

// Empty when `got` matches `want`; else one line saying what differs (where, got, expected).
std::string compare_value(const Tensor& got, const Tensor& want, double rtol, double atol);

}  // namespace ms::cli
