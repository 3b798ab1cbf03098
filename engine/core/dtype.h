// Element types. ONNX numbering is kept in to_onnx/from_onnx; the enum itself is ours.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ms {

using f16 = Eigen::half;
using bf16 = Eigen::bfloat16;

// The narrow types after String (float8 variants, e8m0 scales, float4, int4/uint4, int2/uint2) are kept
// one element per byte holding the element's bit code in the low bits (sub-byte types unpacked on
// import, packed again on export): data-movement ops copy them like u8, and Cast/CastLike,
// QuantizeLinear and DequantizeLinear convert them (engine/core/narrow.h). Arithmetic refuses them.
enum class DType : uint8_t {
  Undefined,
  F32,
  F64,
  F16,
  BF16,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  Bool,
  String,
  F8E4M3FN,
  F8E4M3FNUZ,
  F8E5M2,
  F8E5M2FNUZ,
  F8E8M0,
  F4E2M1,
  I4,
  U4,
  I2,
  U2
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "i64", ...
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_to_onnx(DType t);
std::optional<DType> dtype_from_onnx(int onnx_type);
inline bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }
inline bool is_signed_int(DType t) { return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64; }
inline bool is_unsigned_int(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }
inline bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }
inline bool is_numeric(DType t) { return is_float(t) || is_integer(t); }
// float8/float4/e8m0 and int4/uint4/int2/uint2: one byte per element, converted by engine/core/narrow.h.
inline bool is_narrow(DType t) { return t >= DType::F8E4M3FN && t <= DType::U2; }
// Bits per element in ONNX's packed form (8 for every byte-sized type, 4 or 2 for sub-byte ones).
int dtype_packed_bits(DType t);

template <class T> struct TypeTag { using type = T; };

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<f16>() { return DType::F16; }
template <> constexpr DType dtype_of<bf16>() { return DType::BF16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::I8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::I16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::U8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::U16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::U32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::U64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }

// Calls f(TypeTag<T>{}) for the C++ type of `t` (numeric and bool; not String/Undefined).
// Returns false when `t` has no C++ type here.
template <class F> bool visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(TypeTag<float>{}); return true;
    case DType::F64: f(TypeTag<double>{}); return true;
    case DType::F16: f(TypeTag<f16>{}); return true;
    case DType::BF16: f(TypeTag<bf16>{}); return true;
    case DType::I8: f(TypeTag<int8_t>{}); return true;
    case DType::I16: f(TypeTag<int16_t>{}); return true;
    case DType::I32: f(TypeTag<int32_t>{}); return true;
    case DType::I64: f(TypeTag<int64_t>{}); return true;
    case DType::U8: f(TypeTag<uint8_t>{}); return true;
    case DType::U16: f(TypeTag<uint16_t>{}); return true;
    case DType::U32: f(TypeTag<uint32_t>{}); return true;
    case DType::U64: f(TypeTag<uint64_t>{}); return true;
    case DType::Bool: f(TypeTag<bool>{}); return true;
    default: return false;
  }
}

}  // namespace ms
