// Conversions of the narrow element types (dtype.h): float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz),
// e8m0 scales, float4 e2m1 and the int4/uint4/int2/uint2 integers. A tensor of one of them holds one
// element code per byte (the low bits); these functions turn codes into values and back, with
// ONNX's Cast semantics (round to nearest even; `saturate` clamps out-of-range values, infinities
// included, to the largest finite value).
#pragma once

#include <cstdint>

#include "engine/core/dtype.h"

namespace ms::narrow {

enum class Round : uint8_t { Up, Down, Nearest };  // e8m0 only (Cast's round_mode)

bool is_narrow_float(DType t);  // float8, e8m0, float4
bool is_narrow_int(DType t);    // int4/uint4/int2/uint2

// Value of one code (NaN for a NaN code; integer types give their integer value).
float to_float(DType t, uint8_t code);
// Code of `v` for a narrow float type.
uint8_t from_float(DType t, float v, bool saturate = true, Round e8m0_round = Round::Up);

// Integer types: the value of a code (sign-extended for int4/int2), the range, and the code of an
// in-range value (out-of-range values keep their low bits, as a two's-complement wrap).
int32_t to_int(DType t, uint8_t code);
int32_t int_min(DType t);
int32_t int_max(DType t);
uint8_t from_int(DType t, int64_t v);

// Largest finite value of a narrow float type.
float max_finite(DType t);

}  // namespace ms::narrow
