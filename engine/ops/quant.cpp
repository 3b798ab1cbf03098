// Schemas: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (here) and QLinearConv,
// QLinearMatMul, MatMulInteger, ConvInteger (quant_int.cpp). Q/DQ follow opsets 10-25: per-tensor,
// per-axis and blocked (block_size) scales, output_dtype, saturate, precision, every quantized type
// (int8/uint8/int16/uint16/int4/uint4/int2/uint2, float8, float4).
#include "engine/ops/quant_internal.h"

#include <string>

#include "engine/core/narrow.h"
#include "engine/ops/families.h"

namespace ms::ops {
namespace {

using nn::dims_string;
using std::to_string;

std::string type_name(DType t) { return std::string(dtype_name(t)); }

bool is_quantized_type(DType t) {
  switch (t) {
    case DType::U8:
    case DType::I8:
    case DType::U16:
    case DType::I16:
    case DType::U4:
    case DType::I4:
    case DType::U2:
    case DType::I2:
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
    case DType::F4E2M1: return true;
    default: return false;
  }
}

// Known element count of input i, or -1.
int64_t known_numel(const InferContext& ctx, size_t i) { return static_numel(ctx.in(i)); }

// Shape of a scale or zero point (input i) against x: a scalar or one element (per tensor), a 1-D
// tensor with one value per x[axis] (per axis), or with block_size > 0 x's shape with
// ceil(x[axis] / block_size) along the axis (blocked).
Status check_quant_param(const InferContext& ctx, size_t i, const char* name) {
  const std::vector<int64_t>* pd = ctx.dims(i);
  const std::vector<int64_t>* xd = ctx.dims(0);
  const int64_t block = ctx.node.attr_int("block_size", 0);
  if (block < 0) return ctx.fail("attribute 'block_size' = " + to_string(block) + " must be >= 0");
  if (!pd || pd->empty() || known_numel(ctx, i) == 1 || !xd) return Status::ok();
  const auto rank = static_cast<int64_t>(xd->size());
  int64_t axis = ctx.node.attr_int("axis", 1);
  if (axis < -rank || axis >= rank)
    return ctx.fail("attribute 'axis' = " + to_string(axis) + " is out of range for x of rank " + to_string(rank));
  if (axis < 0) axis += rank;
  const int64_t len = (*xd)[static_cast<size_t>(axis)];
  const std::string what = "input " + to_string(i) + " (" + name + ") " + dims_string(*pd);
  if (block == 0) {
    if (pd->size() != 1) return ctx.fail(what + " must be a scalar or 1-D (per-axis) when block_size is 0");
    if (nn::dims_conflict((*pd)[0], len))
      return ctx.fail(what + " must have one value per x" + dims_string(*xd) + " element along axis " +
                      to_string(axis));
    return Status::ok();
  }
  if (static_cast<int64_t>(pd->size()) != rank)
    return ctx.fail(what + " must have the rank of x " + dims_string(*xd) + " for blocked quantization");
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t xv = (*xd)[static_cast<size_t>(d)];
    const int64_t want = d == axis ? (xv >= 0 ? (xv + block - 1) / block : -1) : xv;
    if (nn::dims_conflict((*pd)[static_cast<size_t>(d)], want))
      return ctx.fail(what + " does not match x " + dims_string(*xd) + " blocked by " + to_string(block) +
                      " along axis " + to_string(axis));
  }
  return Status::ok();
}

// Scale (input 1) and the optional zero point (input 2): shapes, and the same shape for both.
Status check_scale_and_zero_point(const InferContext& ctx, const char* scale, const char* zp) {
  MS_RETURN_IF_ERROR(check_quant_param(ctx, 1, scale));
  if (!ctx.has_input(2)) return Status::ok();
  MS_RETURN_IF_ERROR(check_quant_param(ctx, 2, zp));
  const auto* sd = ctx.dims(1);
  const auto* zd = ctx.dims(2);
  if (sd && zd && *sd != *zd && !(known_numel(ctx, 1) == 1 && known_numel(ctx, 2) == 1))
    return ctx.fail(std::string("input 2 (") + zp + ") " + dims_string(*zd) + " must have the shape of input 1 (" +
                    scale + ") " + dims_string(*sd));
  return Status::ok();
}

Expected<DType> quantize_output_dtype(const InferContext& ctx) {
  const int64_t od = ctx.node.attr_int("output_dtype", 0);
  std::optional<DType> from_attr;
  if (od != 0) {
    from_attr = dtype_from_onnx(static_cast<int>(od));
    if (!from_attr) return ctx.fail("attribute 'output_dtype' = " + to_string(od) + " is not a known element type");
  }
  const bool has_zp = ctx.has_input(2);
  const DType t = has_zp ? ctx.in(2).dtype : from_attr.value_or(DType::U8);
  if (has_zp && from_attr && *from_attr != t)
    return ctx.fail("attribute 'output_dtype' (" + type_name(*from_attr) + ") differs from y_zero_point's type " +
                    type_name(t));
  if (!is_quantized_type(t))
    return ctx.fail("output type " + type_name(t) +
                    " is not a quantized type (int8/uint8/int16/uint16/int4/uint4/int2/uint2/float8/float4e2m1)");
  return t;
}

Status infer_quantize(InferContext& ctx) {
  const DType x = ctx.in(0).dtype;
  if (!is_float(x) && x != DType::I32) return ctx.fail("input 0 (x) must be float or int32, got " + type_name(x));
  const DType s = ctx.in(1).dtype;
  if (!is_float(s) && s != DType::I32 && s != DType::F8E8M0)
    return ctx.fail("input 1 (y_scale) must be float, int32 or float8e8m0, got " + type_name(s));
  const int64_t precision = ctx.node.attr_int("precision", 0);
  if (precision != 0) {
    const std::optional<DType> p = dtype_from_onnx(static_cast<int>(precision));
    if (!p || !is_float(*p))
      return ctx.fail("attribute 'precision' = " + to_string(precision) + " must be a float element type");
  }
  MS_ASSIGN_OR_RETURN(const DType out, quantize_output_dtype(ctx));
  MS_RETURN_IF_ERROR(check_scale_and_zero_point(ctx, "y_scale", "y_zero_point"));
  if (ctx.opset < 21 && ctx.dims(1) && ctx.dims(1)->size() > 1)
    return ctx.fail("input 1 (y_scale) must be a scalar or 1-D before opset 21, got " + dims_string(*ctx.dims(1)));
  ctx.outputs[0] = ctx.in(0);
  ctx.outputs[0].dtype = out;
  return Status::ok();
}

Expected<DType> dequantize_output_dtype(const InferContext& ctx) {
  const DType s = ctx.in(1).dtype;
  const int64_t od = ctx.node.attr_int("output_dtype", 0);
  if (od == 0) {
    if (!is_float(s) || s == DType::F64)
      return ctx.fail("input 1 (x_scale) of type " + type_name(s) + " needs attribute 'output_dtype'");
    return s;
  }
  const std::optional<DType> t = dtype_from_onnx(static_cast<int>(od));
  if (!t || !is_float(*t) || *t == DType::F64)
    return ctx.fail("attribute 'output_dtype' = " + to_string(od) + " must be float, float16 or bfloat16");
  return *t;
}

Status infer_dequantize(InferContext& ctx) {
  const DType x = ctx.in(0).dtype;
  const bool int_ok = x == DType::I8 || x == DType::U8 || x == DType::I16 || x == DType::U16 || x == DType::I32;
  if (!int_ok && !(is_narrow(x) && x != DType::F8E8M0))
    return ctx.fail(
        "input 0 (x) must be a quantized type (int8/uint8/int16/uint16/int32/int4/uint4/int2/uint2/"
        "float8/float4e2m1), got " +
        type_name(x));
  const DType s = ctx.in(1).dtype;
  if (!is_float(s) && s != DType::F8E8M0)
    return ctx.fail("input 1 (x_scale) must be float or float8e8m0, got " + type_name(s));
  if (ctx.has_input(2) && ctx.in(2).dtype != x)
    return ctx.fail("input 2 (x_zero_point) is " + type_name(ctx.in(2).dtype) + " but x is " + type_name(x));
  MS_ASSIGN_OR_RETURN(const DType out, dequantize_output_dtype(ctx));
  MS_RETURN_IF_ERROR(check_scale_and_zero_point(ctx, "x_scale", "x_zero_point"));
  if (ctx.opset < 21 && ctx.dims(1) && ctx.dims(1)->size() > 1)
    return ctx.fail("input 1 (x_scale) must be a scalar or 1-D before opset 21, got " + dims_string(*ctx.dims(1)));
  ctx.outputs[0] = ctx.in(0);
  ctx.outputs[0].dtype = out;
  return Status::ok();
}

Status infer_dynamic_quantize(InferContext& ctx) {
  if (ctx.in(0).dtype != DType::F32) return ctx.fail("input 0 (x) must be float32, got " + type_name(ctx.in(0).dtype));
  ctx.outputs[0] = ctx.in(0);
  ctx.outputs[0].dtype = DType::U8;
  ctx.set_output(1, DType::F32, {});
  ctx.set_output(2, DType::U8, {});
  return Status::ok();
}

}  // namespace

void register_quant_ops(Registry& r) {
  r.add(nn::make_schema("QuantizeLinear", 10, 2, 3, 1, 1, OpCategory::Elementwise, infer_quantize, nullptr));
  r.add(nn::make_schema("DequantizeLinear", 10, 2, 3, 1, 1, OpCategory::Elementwise, infer_dequantize, nullptr));
  r.add(nn::make_schema("DynamicQuantizeLinear", 11, 1, 1, 3, 3, OpCategory::Elementwise, infer_dynamic_quantize,
                        nullptr));
  quant::register_quant_int_ops(r);
}

}  // namespace ms::ops
