// Schemas of the integer matmul/conv ops: MatMulInteger and ConvInteger (int32 outputs), QLinearMatMul
// and QLinearConv (requantized outputs of y_zero_point's type), and the two quantized matmuls the
// fold-qdq pass makes (domain ai.modescope):
//   FusedQLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point[, bias])
//     QLinearMatMul with an int32 bias [N] added to the accumulators before the requantization (a
//     QDQ Gemm's C, as QLinearConv's B).
//   FusedDynamicQuantMatMul(x, b, b_scale, b_zero_point[, bias]) -> float32
//     DynamicQuantizeLinear(x) into MatMulInteger with b, then Cast to float32, times
//     x_scale * b_scale (one or one per column) and plus a float32 bias [N]: what ONNX Runtime's
//     quantize_dynamic writes, in its order of float32 operations.
//   FusedQLinearAdd(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
//     QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) of two 8-bit tensors of one shape with
//     per-tensor float32 scales: a QDQ residual's Add in one pass over bytes, each step in float32
//     as the three ops compute it.
#include <string>

#include "engine/ops/fused.h"
#include "engine/ops/nn_geometry.h"
#include "engine/ops/quant_internal.h"

namespace ms::ops::quant {
namespace {

using nn::dims_string;
using std::to_string;

std::string type_name(DType t) { return std::string(dtype_name(t)); }

Status require_int8(const InferContext& ctx, size_t i, const char* name) {
  const DType t = ctx.in(i).dtype;
  if (t != DType::I8 && t != DType::U8)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be int8 or uint8, got " + type_name(t));
  return Status::ok();
}

// Optional input i must have the dtype of input `of` and hold one value or, as a 1-D tensor, `count`
// values (-1: any count).
Status check_zero_point(const InferContext& ctx, size_t i, const char* name, size_t of, int64_t count) {
  if (!ctx.has_input(i)) return Status::ok();
  if (ctx.in(i).dtype != ctx.in(of).dtype)
    return ctx.fail("input " + to_string(i) + " (" + name + ") is " + type_name(ctx.in(i).dtype) + " but input " +
                    to_string(of) + " is " + type_name(ctx.in(of).dtype));
  const std::vector<int64_t>* d = ctx.dims(i);
  const int64_t n = static_numel(ctx.in(i));
  if (!d || d->empty() || n == 1) return Status::ok();
  if (d->size() != 1 || (count >= 0 && nn::dims_conflict((*d)[0], count)))
    return ctx.fail("input " + to_string(i) + " (" + name + ") " + dims_string(*d) + " must be a scalar" +
                    (count >= 0 ? " or hold " + to_string(count) + " values" : std::string()));
  return Status::ok();
}

Status require_float_scale(const InferContext& ctx, size_t i, const char* name, DType want) {
  const DType t = ctx.in(i).dtype;
  if (want != DType::Undefined ? t != want : !is_float(t) || t == DType::F64)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be " +
                    (want != DType::Undefined ? type_name(want) : std::string("float, float16 or bfloat16")) +
                    ", got " + type_name(t));
  return Status::ok();
}

// Rows of A (-1 unknown) and columns of B, for per-row / per-column zero points and scales.
int64_t rows_of(const InferContext& ctx, size_t i) {
  const auto* d = ctx.dims(i);
  return d && d->size() >= 2 ? (*d)[d->size() - 2] : -1;
}
int64_t cols_of(const InferContext& ctx, size_t i) {
  const auto* d = ctx.dims(i);
  return d && d->size() >= 2 ? d->back() : -1;
}

Status conv_channels(const InferContext& ctx, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                     int64_t group) {
  if (group < 1) return ctx.fail("attribute 'group' = " + to_string(group) + " must be >= 1");
  if (x[1] >= 0 && x[1] % group != 0)
    return ctx.fail("x has " + to_string(x[1]) + " channels, not divisible by group " + to_string(group));
  if (x[1] >= 0 && w[1] >= 0 && w[1] * group != x[1])
    return ctx.fail("w " + dims_string(w) + " has " + to_string(w[1]) + " channels per group, x " + dims_string(x) +
                    " has " + to_string(x[1]) + " channels in " + to_string(group) + " groups");
  if (w[0] >= 0 && w[0] % group != 0)
    return ctx.fail("w has " + to_string(w[0]) + " output channels, not divisible by group " + to_string(group));
  return Status::ok();
}

// Conv output shape of x (input ix) and w (input iw) as output 0 with `out_type`; `m` gets W[0].
Status conv_output(InferContext& ctx, size_t ix, size_t iw, DType out_type, int64_t& m) {
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, nn::require_rank(ctx, ix, "x", 3, -1));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* wd, nn::require_rank(ctx, iw, "w", 3, -1));
  m = wd ? (*wd)[0] : -1;
  if (!xd || !wd) {
    ctx.set_output_rank_unknown(0, out_type);
    return Status::ok();
  }
  if (xd->size() != wd->size())
    return ctx.fail("w " + dims_string(*wd) + " must have the rank of x " + dims_string(*xd));
  const int64_t group = ctx.node.attr_int("group", 1);
  MS_RETURN_IF_ERROR(conv_channels(ctx, *xd, *wd, group));
  const std::vector<int64_t> in(xd->begin() + 2, xd->end()), k(wd->begin() + 2, wd->end());
  auto g = resolve_window(ctx.node, WindowKind::Conv, in, k);
  if (!g) return ctx.fail(g.status().message());
  std::vector<int64_t> out{(*xd)[0], (*wd)[0]};
  out.insert(out.end(), g->out.begin(), g->out.end());
  ctx.set_output(0, out_type, std::move(out));
  return Status::ok();
}

Status infer_matmul_integer(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_int8(ctx, 0, "A"));
  MS_RETURN_IF_ERROR(require_int8(ctx, 1, "B"));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 2, "a_zero_point", 0, rows_of(ctx, 0)));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 3, "b_zero_point", 1, cols_of(ctx, 1)));
  return nn::matmul_output(ctx, 0, 1, DType::I32);
}

Status infer_conv_integer(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_int8(ctx, 0, "x"));
  MS_RETURN_IF_ERROR(require_int8(ctx, 1, "w"));
  int64_t m = -1;
  MS_RETURN_IF_ERROR(conv_output(ctx, 0, 1, DType::I32, m));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 2, "x_zero_point", 0, 1));
  return check_zero_point(ctx, 3, "w_zero_point", 1, m);
}

Status infer_qlinear_matmul(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_int8(ctx, 0, "a"));
  MS_RETURN_IF_ERROR(require_int8(ctx, 3, "b"));
  MS_RETURN_IF_ERROR(require_int8(ctx, 7, "y_zero_point"));
  const DType st = ctx.in(1).dtype;
  MS_RETURN_IF_ERROR(require_float_scale(ctx, 1, "a_scale", DType::Undefined));
  MS_RETURN_IF_ERROR(require_float_scale(ctx, 4, "b_scale", st));
  MS_RETURN_IF_ERROR(require_float_scale(ctx, 6, "y_scale", st));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 2, "a_zero_point", 0, rows_of(ctx, 0)));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 5, "b_zero_point", 3, cols_of(ctx, 3)));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 7, "y_zero_point", 7, -1));
  return nn::matmul_output(ctx, 0, 3, ctx.in(7).dtype);
}

Status infer_fused_qlinear_matmul(InferContext& ctx) {
  MS_RETURN_IF_ERROR(infer_qlinear_matmul(ctx));
  if (!ctx.has_input(8)) return Status::ok();
  if (ctx.in(8).dtype != DType::I32) return ctx.fail("input 8 (bias) must be int32, got " + type_name(ctx.in(8).dtype));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, nn::require_rank(ctx, 8, "bias", 1, 1));
  if (bd && nn::dims_conflict((*bd)[0], cols_of(ctx, 3)))
    return ctx.fail("input 8 (bias) has " + to_string((*bd)[0]) + " values, expected one per column of b (" +
                    to_string(cols_of(ctx, 3)) + ")");
  return Status::ok();
}

Status infer_fused_dynamic_quant_matmul(InferContext& ctx) {
  if (ctx.in(0).dtype != DType::F32) return ctx.fail("input 0 (x) must be float32, got " + type_name(ctx.in(0).dtype));
  MS_RETURN_IF_ERROR(require_int8(ctx, 1, "b"));
  MS_RETURN_IF_ERROR(require_float_scale(ctx, 2, "b_scale", DType::F32));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, nn::require_rank(ctx, 1, "b", 2, 2));
  const int64_t n = bd ? (*bd)[1] : -1;
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 2, "b_scale", 2, n));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 3, "b_zero_point", 1, n));
  if (ctx.has_input(4)) {
    if (ctx.in(4).dtype != DType::F32)
      return ctx.fail("input 4 (bias) must be float32, got " + type_name(ctx.in(4).dtype));
    MS_RETURN_IF_ERROR(check_zero_point(ctx, 4, "bias", 4, n));
  }
  return nn::matmul_output(ctx, 0, 1, DType::F32);
}

Status infer_qlinear_conv(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_int8(ctx, 0, "x"));
  MS_RETURN_IF_ERROR(require_int8(ctx, 3, "w"));
  MS_RETURN_IF_ERROR(require_int8(ctx, 7, "y_zero_point"));
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}})
    MS_RETURN_IF_ERROR(require_float_scale(ctx, i, i == 1 ? "x_scale" : i == 4 ? "w_scale" : "y_scale", DType::F32));
  int64_t m = -1;
  MS_RETURN_IF_ERROR(conv_output(ctx, 0, 3, ctx.in(7).dtype, m));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 2, "x_zero_point", 0, 1));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 5, "w_zero_point", 3, m));
  if (ctx.has_input(8)) {
    if (ctx.in(8).dtype != DType::I32) return ctx.fail("input 8 (B) must be int32, got " + type_name(ctx.in(8).dtype));
    MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, nn::require_rank(ctx, 8, "B", 1, 1));
    if (bd && nn::dims_conflict((*bd)[0], m))
      return ctx.fail("input 8 (B) has " + to_string((*bd)[0]) + " values, expected one per output channel (" +
                      to_string(m) + ")");
  }
  return Status::ok();
}

// 2 * multiply-adds: each output element meets K (matmul) or W.numel / W[0] (conv) products.
Cost matmul_cost(const CostContext& c, size_t ia) {
  Cost cost = nn::io_cost(c, 0);
  const auto& a = c.inputs[ia].dims;
  const int64_t on = static_numel(c.outputs[0]);
  if (a && !a->empty() && a->back() > 0 && on > 0)
    cost.flops = 2.0 * static_cast<double>(on) * static_cast<double>(a->back());
  return cost;
}
Cost conv_cost(const CostContext& c, size_t iw) {
  Cost cost = nn::io_cost(c, 0);
  const int64_t wn = static_numel(c.inputs[iw]);
  const int64_t on = static_numel(c.outputs[0]);
  if (wn > 0 && on > 0 && (*c.inputs[iw].dims)[0] > 0)
    cost.flops = 2.0 * static_cast<double>(on) * static_cast<double>(wn / (*c.inputs[iw].dims)[0]);
  return cost;
}

Status infer_fused_qlinear_add(InferContext& ctx) {
  for (size_t i : {size_t{0}, size_t{3}, size_t{7}})
    MS_RETURN_IF_ERROR(require_int8(ctx, i, i == 7 ? "y_zero_point" : "x"));
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}})
    MS_RETURN_IF_ERROR(require_float_scale(ctx, i, "scale", DType::F32));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 2, "a_zero_point", 0, 1));
  MS_RETURN_IF_ERROR(check_zero_point(ctx, 5, "b_zero_point", 3, 1));
  const std::vector<int64_t>* a = ctx.dims(0);
  const std::vector<int64_t>* b = ctx.dims(3);
  if (a && b && *a != *b)
    return ctx.fail("a " + dims_string(*a) + " and b " + dims_string(*b) + " must have one shape");
  ctx.outputs[0] = ctx.in(0);
  ctx.outputs[0].dtype = ctx.in(7).dtype;
  return Status::ok();
}

}  // namespace

void register_quant_int_ops(Registry& r) {
  r.add(nn::make_schema("MatMulInteger", 10, 2, 4, 1, 1, OpCategory::MatMul, infer_matmul_integer,
                        [](const CostContext& c) { return matmul_cost(c, 0); }));
  r.add(nn::make_schema("QLinearMatMul", 10, 8, 8, 1, 1, OpCategory::MatMul, infer_qlinear_matmul,
                        [](const CostContext& c) { return matmul_cost(c, 0); }));
  OpSchema fused = nn::make_schema("FusedQLinearMatMul", 1, 8, 9, 1, 1, OpCategory::MatMul, infer_fused_qlinear_matmul,
                                   [](const CostContext& c) { return matmul_cost(c, 0); });
  fused.domain = kFusedDomain;
  r.add(fused);
  OpSchema dynamic =
      nn::make_schema("FusedDynamicQuantMatMul", 1, 4, 5, 1, 1, OpCategory::MatMul, infer_fused_dynamic_quant_matmul,
                      [](const CostContext& c) { return matmul_cost(c, 0); });
  dynamic.domain = kFusedDomain;
  r.add(dynamic);
  OpSchema add =
      nn::make_schema("FusedQLinearAdd", 1, 8, 8, 1, 1, OpCategory::Elementwise, infer_fused_qlinear_add, nullptr);
  add.domain = kFusedDomain;
  r.add(add);
  r.add(nn::make_schema("ConvInteger", 10, 2, 4, 1, 1, OpCategory::Conv, infer_conv_integer,
                        [](const CostContext& c) { return conv_cost(c, 1); }));
  r.add(nn::make_schema("QLinearConv", 10, 8, 9, 1, 1, OpCategory::Conv, infer_qlinear_conv,
                        [](const CostContext& c) { return conv_cost(c, 3); }));
}

}  // namespace ms::ops::quant
