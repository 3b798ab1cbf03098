// TensorProto -> Tensor: element types, shape checks, raw and typed data, external data.
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <onnx/onnx-data_pb.h>

#include "engine/core/strings.h"
#include "engine/frontend/onnx/import_internal.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::onnx_io {
namespace detail {

Status ImportContext::error(ErrorCode code, const std::string& what) const {
  return Status::error(code, origin + ": " + what);
}

Expected<DType> dtype_from_proto(int elem_type, const ImportContext& ctx, const std::string& what) {
  using TP = onnx::TensorProto;
  if (elem_type == TP::UNDEFINED) return ctx.invalid(what + ": element type is undefined (0)");
  if (elem_type == TP::COMPLEX64 || elem_type == TP::COMPLEX128)
    return ctx.error(ErrorCode::Unsupported, what + ": complex tensors are not supported");
  auto dt = dtype_from_onnx(elem_type);
  if (!dt) return ctx.invalid(what + ": unknown element type " + std::to_string(elem_type));
  return *dt;
}

Expected<int64_t> checked_numel(const std::vector<int64_t>& dims, const ImportContext& ctx, const std::string& what) {
  int64_t n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      return ctx.invalid(what + ": dim " + std::to_string(i) + " is negative (" + std::to_string(dims[i]) + ")");
    int64_t next = 0;
    if (__builtin_mul_overflow(n, dims[i], &next) || next > kMaxElements)
      return ctx.invalid(what + ": shape " + shape_to_string(dims) + " has more than 2^40 elements");
    n = next;
  }
  return n;
}

namespace {

// Copies a repeated proto field into a tensor of type T, checking the count.
template <class T, class Field, class Convert>
Status fill_from_field(Tensor& out, const Field& field, int64_t numel, const ImportContext& ctx,
                       const std::string& what, const char* field_name, Convert convert) {
  if (static_cast<int64_t>(field.size()) != numel)
    return ctx.invalid(what + ": " + field_name + " has " + std::to_string(field.size()) + " values, shape " +
                       shape_to_string(out.shape()) + " needs " + std::to_string(numel));
  T* dst = out.data<T>();
  for (int64_t i = 0; i < numel; ++i) dst[i] = convert(field.Get(static_cast<int>(i)));
  return Status::ok();
}

// Raw little-endian bytes -> tensor. Bools are normalized so no byte other than 0/1 is read as bool.
void copy_raw(Tensor& out, const std::string& bytes) {
  if (out.dtype() == DType::Bool) {
    auto* dst = out.data<bool>();
    for (size_t i = 0; i < bytes.size(); ++i) dst[i] = bytes[i] != 0;
  } else if (!bytes.empty()) {
    std::memcpy(out.raw(), bytes.data(), bytes.size());
  }
}

// ONNX packs sub-byte elements (4-bit: two per byte, 2-bit: four) from the least significant bits;
// the tensor keeps one element code per byte.
void unpack_narrow(Tensor& out, const uint8_t* packed, size_t packed_bytes) {
  const int bits = dtype_packed_bits(out.dtype());
  const int per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  auto* dst = static_cast<uint8_t*>(out.raw());
  const size_t n = static_cast<size_t>(out.numel());
  for (size_t i = 0; i < n && i / static_cast<size_t>(per_byte) < packed_bytes; ++i)
    dst[i] = static_cast<uint8_t>((packed[i / per_byte] >> ((i % per_byte) * bits)) & mask);
}

// Bytes of n elements of `dt` in ONNX's packed form.
size_t packed_size(DType dt, int64_t n) {
  return (static_cast<size_t>(n) * static_cast<size_t>(dtype_packed_bits(dt)) + 7) / 8;
}

// Narrow types in int32_data: one byte-sized element per entry, or one packed byte (two 4-bit or four
// 2-bit elements) per entry.
Status fill_narrow_typed(Tensor& out, const onnx::TensorProto& t, int64_t n, const ImportContext& ctx,
                         const std::string& what) {
  const size_t need = dtype_packed_bits(out.dtype()) == 8 ? static_cast<size_t>(n) : packed_size(out.dtype(), n);
  if (static_cast<size_t>(t.int32_data_size()) != need)
    return ctx.invalid(what + ": int32_data has " + std::to_string(t.int32_data_size()) + " values, " +
                       std::string(dtype_name(out.dtype())) + shape_to_string(out.shape()) + " needs " +
                       std::to_string(need));
  std::vector<uint8_t> bytes(need);
  for (size_t i = 0; i < need; ++i) bytes[i] = static_cast<uint8_t>(t.int32_data(static_cast<int>(i)) & 0xff);
  if (dtype_packed_bits(out.dtype()) == 8) {
    if (need) std::memcpy(out.raw(), bytes.data(), need);
  } else {
    unpack_narrow(out, bytes.data(), need);
  }
  return Status::ok();
}

Status fill_typed(Tensor& out, const onnx::TensorProto& t, int64_t n, const ImportContext& ctx,
                  const std::string& what) {
  auto u16 = [](int32_t v) { return static_cast<uint16_t>(v & 0xffff); };
  auto bits_to = [&](auto tag, int32_t v) {
    typename decltype(tag)::type out;
    const uint16_t b = u16(v);
    static_assert(sizeof(out) == sizeof(b));
    std::memcpy(static_cast<void*>(&out), &b, sizeof(b));  // the type's bit pattern, as stored
    return out;
  };
  switch (out.dtype()) {
    case DType::F32:
      return fill_from_field<float>(out, t.float_data(), n, ctx, what, "float_data", [](float v) { return v; });
    case DType::F64:
      return fill_from_field<double>(out, t.double_data(), n, ctx, what, "double_data", [](double v) { return v; });
    case DType::I64:
      return fill_from_field<int64_t>(out, t.int64_data(), n, ctx, what, "int64_data", [](int64_t v) { return v; });
    case DType::U64:
      return fill_from_field<uint64_t>(out, t.uint64_data(), n, ctx, what, "uint64_data", [](uint64_t v) { return v; });
    case DType::U32:
      return fill_from_field<uint32_t>(out, t.uint64_data(), n, ctx, what, "uint64_data",
                                       [](uint64_t v) { return static_cast<uint32_t>(v); });
    case DType::I32:
      return fill_from_field<int32_t>(out, t.int32_data(), n, ctx, what, "int32_data", [](int32_t v) { return v; });
    case DType::I16:
      return fill_from_field<int16_t>(out, t.int32_data(), n, ctx, what, "int32_data",
                                      [](int32_t v) { return static_cast<int16_t>(v); });
    case DType::I8:
      return fill_from_field<int8_t>(out, t.int32_data(), n, ctx, what, "int32_data",
                                     [](int32_t v) { return static_cast<int8_t>(v); });
    case DType::U8:
      return fill_from_field<uint8_t>(out, t.int32_data(), n, ctx, what, "int32_data",
                                      [](int32_t v) { return static_cast<uint8_t>(v); });
    case DType::U16: return fill_from_field<uint16_t>(out, t.int32_data(), n, ctx, what, "int32_data", u16);
    case DType::Bool:
      return fill_from_field<bool>(out, t.int32_data(), n, ctx, what, "int32_data", [](int32_t v) { return v != 0; });
    case DType::F16:
      // f16/bf16 travel as their bit pattern in the low 16 bits of int32_data.
      return fill_from_field<f16>(out, t.int32_data(), n, ctx, what, "int32_data",
                                  [&](int32_t v) { return bits_to(TypeTag<f16>{}, v); });
    case DType::BF16:
      return fill_from_field<bf16>(out, t.int32_data(), n, ctx, what, "int32_data",
                                   [&](int32_t v) { return bits_to(TypeTag<bf16>{}, v); });
    default: return ctx.error(ErrorCode::Unsupported, what + ": element type has no typed field here");
  }
}

}  // namespace

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& t, const ImportContext& ctx, const std::string& what) {
  if (t.has_segment()) return ctx.error(ErrorCode::Unsupported, what + ": segmented tensors are not supported");
  MS_ASSIGN_OR_RETURN(DType dt, dtype_from_proto(t.data_type(), ctx, what));
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  MS_ASSIGN_OR_RETURN(int64_t n, checked_numel(dims, ctx, what));
  if (dt == DType::String) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.has_raw_data())
      return ctx.error(ErrorCode::Unsupported, what + ": a string tensor must carry string_data");
    if (t.string_data_size() != n)
      return ctx.invalid(what + ": string_data has " + std::to_string(t.string_data_size()) + " values, shape " +
                         shape_to_string(dims) + " needs " + std::to_string(n));
    return string_tensor(std::vector<std::string>(t.string_data().begin(), t.string_data().end()), dims);
  }
  const bool sub_byte = dtype_packed_bits(dt) < 8;
  const size_t need = sub_byte ? packed_size(dt, n) : static_cast<size_t>(n) * dtype_size(dt);
  auto from_bytes = [&](const std::string& bytes) {
    Tensor out = Tensor::empty(dt, dims);
    if (sub_byte)
      unpack_narrow(out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    else
      copy_raw(out, bytes);
    return out;
  };

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    MS_ASSIGN_OR_RETURN(ExternalRange range, resolve_external_data(t, need, ctx, what));
    if (!sub_byte) {
      MS_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> mapped, map_external_data(range, ctx, what));
      if (mapped) return Tensor(std::move(mapped), dt, dims);
    }
    MS_ASSIGN_OR_RETURN(std::string bytes, read_external_data(range, ctx, what));
    return from_bytes(bytes);
  }
  if (t.data_location() != onnx::TensorProto::DEFAULT)
    return ctx.invalid(what + ": unknown data_location " + std::to_string(t.data_location()));

  if (t.has_raw_data()) {
    if (t.raw_data().size() != need)
      return ctx.invalid(what + ": raw_data has " + std::to_string(t.raw_data().size()) + " bytes, " +
                         std::string(dtype_name(dt)) + shape_to_string(dims) + " needs " + std::to_string(need));
    return from_bytes(t.raw_data());
  }
  if (is_narrow(dt)) {
    Tensor out = Tensor::empty(dt, dims);
    MS_RETURN_IF_ERROR(fill_narrow_typed(out, t, n, ctx, what));
    return out;
  }
  // Count check before allocating: the dims may claim far more than the file holds.
  int64_t have = 0;
  switch (dt) {
    case DType::F32: have = t.float_data_size(); break;
    case DType::F64: have = t.double_data_size(); break;
    case DType::I64: have = t.int64_data_size(); break;
    case DType::U64:
    case DType::U32: have = t.uint64_data_size(); break;
    default: have = t.int32_data_size(); break;
  }
  if (have != n)
    return ctx.invalid(what + ": has " + std::to_string(have) + " values and no raw_data, " +
                       std::string(dtype_name(dt)) + shape_to_string(dims) + " needs " + std::to_string(n));
  Tensor out = Tensor::empty(dt, dims);
  MS_RETURN_IF_ERROR(fill_typed(out, t, n, ctx, what));
  return out;
}

}  // namespace detail

namespace {

Expected<std::string> read_pb_bytes(const std::string& path, const detail::ImportContext& ctx) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return ctx.invalid("file is larger than 2 GiB");
  return bytes;
}

Expected<Tensor> tensor_value(const onnx::TensorProto& t, const detail::ImportContext& ctx) {
  // Test data tensors never point at external files.
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return ctx.error(ErrorCode::Unsupported, "external data in a tensor file");
  return detail::tensor_from_proto(t, ctx, "tensor '" + t.name() + "'");
}

Expected<Tensor> sequence_value(const onnx::SequenceProto& sp, const ir::ValueType& type,
                                const detail::ImportContext& ctx) {
  const std::string what = "sequence '" + sp.name() + "'";
  if (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.tensor_values_size() == 0 &&
      sp.elem_type() != onnx::SequenceProto::UNDEFINED)
    return ctx.error(ErrorCode::Unsupported, what + ": only sequences of tensors are supported");
  std::vector<Tensor> items;
  DType dt = type.dtype;
  for (const auto& t : sp.tensor_values()) {
    MS_ASSIGN_OR_RETURN(Tensor e, tensor_value(t, ctx));
    if (dt == DType::Undefined) dt = e.dtype();
    if (e.dtype() != dt)
      return ctx.invalid(what + ": element of type " + std::string(dtype_name(e.dtype())) + " in a sequence of " +
                         std::string(dtype_name(dt)));
    items.push_back(std::move(e));
  }
  return Tensor::sequence(std::move(items), dt);
}

Expected<Tensor> optional_value(const onnx::OptionalProto& op, const ir::ValueType& type,
                                const detail::ImportContext& ctx) {
  const ir::ValueType elem = type.element();
  std::vector<Tensor> item;
  // An empty optional carries its elem_type but no value.
  if (op.has_tensor_value()) {
    MS_ASSIGN_OR_RETURN(Tensor t, tensor_value(op.tensor_value(), ctx));
    item.push_back(std::move(t));
  } else if (op.has_sequence_value()) {
    MS_ASSIGN_OR_RETURN(Tensor t, sequence_value(op.sequence_value(), elem, ctx));
    item.push_back(std::move(t));
  } else if (op.has_map_value() || op.has_optional_value() || op.has_sparse_tensor_value()) {
    return ctx.error(ErrorCode::Unsupported, "optional '" + op.name() + "': only optional tensors and sequences");
  }
  const ValueKind kind = item.empty() ? type.elem_kind : item.front().kind();
  return Tensor::optional(std::move(item), kind, type.dtype);
}

}  // namespace

Expected<Tensor> load_tensor_pb(const std::string& path) { return load_value_pb(path, ir::ValueType{}); }

Expected<Tensor> load_value_pb(const std::string& path, const ir::ValueType& type) {
  detail::ImportContext ctx;
  ctx.origin = path;
  MS_ASSIGN_OR_RETURN(std::string bytes, read_pb_bytes(path, ctx));
  const int size = static_cast<int>(bytes.size());
  switch (type.kind) {
    case ValueKind::Sequence: {
      onnx::SequenceProto sp;
      if (!sp.ParseFromArray(bytes.data(), size)) return ctx.invalid("not a valid SequenceProto (parse failed)");
      return sequence_value(sp, type, ctx);
    }
    case ValueKind::Optional: {
      onnx::OptionalProto op;
      if (!op.ParseFromArray(bytes.data(), size)) return ctx.invalid("not a valid OptionalProto (parse failed)");
      return optional_value(op, type, ctx);
    }
    case ValueKind::Tensor: break;
  }
  onnx::TensorProto t;
  if (!t.ParseFromArray(bytes.data(), size)) return ctx.invalid("not a valid TensorProto (parse failed)");
  return tensor_value(t, ctx);
}

}  // namespace ms::onnx_io
