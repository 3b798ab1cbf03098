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
constexpr std::array<DTypeInfo, 15> kInfo{{
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
    {DType::String, "string", 0, 8},
}};
const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
std::string_view dtype_name(DType t) { return info(t).name; }
std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}
int dtype_to_onnx(DType t) { return info(t).onnx; }
std::optional<DType> dtype_from_onnx(int onnx_type) {
  for (const auto& i : kInfo)
    if (i.onnx == onnx_type && i.type != DType::Undefined) return i.type;
  return std::nullopt;
}

}  // namespace ms
