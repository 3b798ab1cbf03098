#include "engine/core/dtype.h"

#include <array>

namespace ms {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
  int onnx;
};
constexpr std::array<DTypeInfo, 25> kInfo{{
    {DType::Undefined, "undefined", 0, 0},
    {DType::F32, "f32", 4, 1},
    {DType::F64, "f64", 8, 11},
    {DType::F16, "f16", 2, 10},
    {DType::BF16, "bf16", 2, 16},
    {DType::I8, "i8", 1, 3},
    {DType::I16, "i16", 2, 5},
    {DType::I32, "i32", 4, 6},
    {DType::I64, "i64", 8, 7},
    {DType::U8, "u8", 1, 2},
    {DType::U16, "u16", 2, 4},
    {DType::U32, "u32", 4, 12},
    {DType::U64, "u64", 8, 13},
    {DType::Bool, "bool", 1, 9},
    {DType::String, "string", 8, 8},  // an interned-string handle (core/strings.h)
    {DType::F8E4M3FN, "f8e4m3fn", 1, 17},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", 1, 18},
    {DType::F8E5M2, "f8e5m2", 1, 19},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", 1, 20},
    {DType::F8E8M0, "f8e8m0", 1, 24},
    {DType::F4E2M1, "f4e2m1", 1, 23},
    {DType::I4, "i4", 1, 22},
    {DType::U4, "u4", 1, 21},
    {DType::I2, "i2", 1, 26},
    {DType::U2, "u2", 1, 25},
}};
static_assert(kInfo.back().type == DType::U2, "kInfo lists every DType in enum order");
const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
std::string_view dtype_name(DType t) { return info(t).name; }
std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}
int dtype_packed_bits(DType t) {
  switch (t) {
    case DType::F4E2M1:
    case DType::I4:
    case DType::U4: return 4;
    case DType::I2:
    case DType::U2: return 2;
    default: return static_cast<int>(dtype_size(t) * 8);
  }
}
int dtype_to_onnx(DType t) { return info(t).onnx; }
std::optional<DType> dtype_from_onnx(int onnx_type) {
  for (const auto& i : kInfo)
    if (i.onnx == onnx_type && i.type != DType::Undefined) return i.type;
  return std::nullopt;
}

}  // namespace ms
