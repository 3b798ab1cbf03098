// Reading and writing element blocks of any numeric dtype, narrow types (engine/core/narrow.h)
// included, through a double or int64 intermediate. Shared by Cast/CastLike and the quantization
// kernels, which convert between narrow codes and ordinary values.
#pragma once

#include <cstdint>

#include "engine/core/dtype.h"
#include "engine/core/narrow.h"

namespace ms::cpu::narrow_io {

// Elements are converted in blocks of at most this many (stack buffers).
inline constexpr int64_t kBlock = 256;

// True for the integer-valued dtypes (ints, bool, int4/uint4/int2/uint2), which load_int reads.
bool is_integer_like(DType t);

// Elements [b, b + n) of `data` (dtype t, any numeric, bool or narrow type) as double. Narrow float
// NaN codes give NaN.
void load_real(DType t, const void* data, int64_t b, int64_t n, double* out);
// Same for an integer-like dtype, as int64.
void load_int(DType t, const void* data, int64_t b, int64_t n, int64_t* out);

// Value of a narrow float code through a 256-entry table built once per type.
float narrow_value(DType t, uint8_t code);

// float -> int4/uint4/int2/uint2 as ml_dtypes' astype: truncation toward zero; NaN, infinities and
// values outside the type's range give 0.
uint8_t narrow_int_from_real(DType t, double v);

}  // namespace ms::cpu::narrow_io
