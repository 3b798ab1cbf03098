// Quantized (QDQ) models into integer kernels. Quantizers such as ONNX Runtime's write a statically
// quantized model as float ops wrapped in QuantizeLinear/DequantizeLinear pairs:
//   y = QuantizeLinear(Conv(DequantizeLinear(xq, sx, zx), DequantizeLinear(wq, sw, zw)[,
//                           DequantizeLinear(bq, sb, 0)]), sy, zy)
// which, run as written, dequantizes every activation and weight and convolves in float. Each such
// Conv becomes one QLinearConv(xq, sx, zx, wq, sw, zw, sy, zy[, bq]) on the 8-bit tensors, the
// requantization folded into its output: the integer convolution the quantizer meant. Runs before
// constant folding, which would otherwise turn the weights' DequantizeLinear into float constants.
// Conditions (else the Conv stays float): 8-bit activations and weights, scalar activation scales
// and zero points, weights quantized per tensor or per output channel (axis 0) with zero points of 0,
// a bias quantized to int32 with scale sx * sw and zero point 0 (or no bias), no blocked quantization.
// Likewise QuantizeLinear(MatMul(DequantizeLinear(xq), DequantizeLinear(wq))) (or a Gemm without C,
// alpha 1, no transA; transB gets a transposed copy of the weights) becomes one QLinearMatMul, which
// runs oneDNN's int8 matmul: constant 2-D 8-bit weights, per tensor or per column, any zero points.
// A matmul of two activations (attention's) stays float: the int8 kernel wants constant weights.
#include <cmath>
#include <limits>
#include <optional>
#include <variant>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

bool is_8bit(DType t) { return t == DType::U8 || t == DType::I8; }

// The operands of a DequantizeLinear: data, scale, zero point ("" when absent) and axis.
struct Dq {
  const ir::Node* node = nullptr;
  std::string data, scale, zero;
  int64_t axis = 1;
};

std::optional<Dq> dq_of(const PatternView& v, const std::string& value) {
  const ir::Node* n = v.def(value, "DequantizeLinear");
  if (!n || n->inputs.size() < 2 || n->attr_int("block_size", 0) != 0) return std::nullopt;
  Dq d;
  d.node = n;
  d.data = n->inputs[0];
  d.scale = n->inputs[1];
  d.zero = n->inputs.size() > 2 ? n->inputs[2] : "";
  d.axis = n->attr_int("axis", 1);
  return d;
}

DType type_of(const PatternView& v, const std::string& value) {
  const ir::Value* val = v.graph().value(value);
  return val ? val->type.dtype : DType::Undefined;
}

// A constant with one element (any rank), or a scalar-shaped static value.
bool is_scalar_value(const PatternView& v, const std::string& value) {
  if (value.empty()) return true;
  if (const Tensor* t = constant_of(v.graph(), value)) return t->numel() == 1;
  const auto* d = v.static_dims(value);
  return d && numel(Shape(*d)) == 1;
}

// Weights: constant 8-bit data, constant f32 scales (one, or one per output channel on axis 0) and
// zero points that are all 0 (symmetric, as every int8 convolution kernel wants them).
bool weights_ok(const PatternView& v, const Dq& w) {
  const Tensor* data = constant_of(v.graph(), w.data);
  const Tensor* scale = constant_of(v.graph(), w.scale);
  if (!data || !scale || data->dtype() != DType::I8 || scale->dtype() != DType::F32 || data->rank() < 3) return false;
  const int64_t m = data->dim(0);
  if (scale->numel() != 1 && !(scale->rank() == 1 && scale->numel() == m && (w.axis == 0 || w.axis == -data->rank())))
    return false;
  if (w.zero.empty()) return true;
  const Tensor* zero = constant_of(v.graph(), w.zero);
  return zero && zero->dtype() == DType::I8 && zero->numel() == scale->numel() && all_equal(*zero, 0);
}

// Bias: int32 constant, scale sx * sw (per channel, 1e-6 relative), zero point 0.
bool bias_ok(const PatternView& v, const Dq& b, const Dq& x, const Dq& w) {
  const Tensor* data = constant_of(v.graph(), b.data);
  const Tensor* bs = constant_of(v.graph(), b.scale);
  const Tensor* xs = constant_of(v.graph(), x.scale);
  const Tensor* ws = constant_of(v.graph(), w.scale);
  if (!data || !bs || !xs || !ws || data->dtype() != DType::I32 || data->rank() != 1) return false;
  if (bs->numel() != data->numel() && bs->numel() != 1) return false;
  if (!b.zero.empty()) {
    const Tensor* z = constant_of(v.graph(), b.zero);
    if (!z || !all_equal(*z, 0)) return false;
  }
  for (int64_t c = 0; c < data->numel(); ++c) {
    const double want = xs->at_double(0) * ws->at_double(ws->numel() == 1 ? 0 : c);
    const double got = bs->at_double(bs->numel() == 1 ? 0 : c);
    if (std::fabs(got - want) > 1e-6 * std::fabs(want)) return false;
  }
  return true;
}

struct QConvMatch {
  const ir::Node* conv = nullptr;
  const ir::Node* q = nullptr;
  Dq x, w;
  std::optional<Dq> b;
};

std::optional<QConvMatch> match_qconv(const PatternView& v, const ir::Node& q) {
  if (q.inputs.size() < 3 || q.attr_int("block_size", 0) != 0 || q.attr_int("output_dtype", 0) != 0)
    return std::nullopt;
  QConvMatch m;
  m.q = &q;
  m.conv = v.def(q.inputs[0], "Conv");
  if (!m.conv || !v.read_only_by(q.inputs[0], 1) || m.conv->inputs.size() < 2) return std::nullopt;
  auto x = dq_of(v, m.conv->inputs[0]);
  auto w = dq_of(v, m.conv->inputs[1]);
  if (!x || !w || !is_8bit(type_of(v, x->data)) || !is_8bit(type_of(v, q.inputs[2]))) return std::nullopt;
  if (x->zero.empty() || type_of(v, x->scale) != DType::F32 || type_of(v, q.inputs[1]) != DType::F32)
    return std::nullopt;
  if (!is_scalar_value(v, x->scale) || !is_scalar_value(v, x->zero) || !is_scalar_value(v, q.inputs[1]) ||
      !is_scalar_value(v, q.inputs[2]) || !weights_ok(v, *w))
    return std::nullopt;
  m.x = *x;
  m.w = *w;
  if (m.conv->inputs.size() > 2 && !m.conv->inputs[2].empty()) {
    m.b = dq_of(v, m.conv->inputs[2]);
    if (!m.b || !constant_of(v.graph(), m.x.scale) || !bias_ok(v, *m.b, m.x, m.w)) return std::nullopt;
  }
  return m;
}

// The weights' zero point as QLinearConv needs it (the weights' type, one per scale): the model's, or
// zeros when it has none.
std::string weight_zero(ir::Graph& g, const QConvMatch& m) {
  if (!m.w.zero.empty()) return m.w.zero;
  const Tensor* scale = constant_of(g, m.w.scale);
  const std::string name = fresh_name(g, m.w.data + "_zero_point");
  g.add_initializer(name, Tensor::zeros(DType::I8, scale->shape()));
  return name;
}

NodeGroup qlinear_conv(ir::Graph& g, const QConvMatch& m) {
  std::vector<std::string> in = {m.x.data,  m.x.scale,         m.x.zero,       m.w.data,
                                 m.w.scale, weight_zero(g, m), m.q->inputs[1], m.q->inputs[2]};
  if (m.b) in.push_back(m.b->data);
  ir::Node n = new_node(g, "QLinearConv", "", std::move(in), {m.q->outputs[0]}, {m.conv, m.q});
  for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (auto it = m.conv->attrs.find(a); it != m.conv->attrs.end()) n.attrs[a] = it->second;
  NodeGroup grp;
  grp.ids = {m.conv->id.value, m.q->id.value};
  grp.node = std::move(n);
  grp.place = Place::Last;
  return grp;
}

// ---- MatMul / Gemm ----

// Matmul weights: a constant 8-bit [K, N] matrix ([N, K] for a Gemm with transB), with constant f32
// scales (one, or one per column N) and constant zero points of its type matching the scales' count
// (any values: the int8 matmul takes per-column zero points).
bool matmul_weights_ok(const PatternView& v, const Dq& w, bool trans) {
  const Tensor* data = constant_of(v.graph(), w.data);
  const Tensor* scale = constant_of(v.graph(), w.scale);
  if (!data || !scale || !is_8bit(data->dtype()) || data->rank() != 2 || scale->dtype() != DType::F32) return false;
  const int64_t n = data->dim(trans ? 0 : 1), axis = w.axis < 0 ? w.axis + 2 : w.axis;
  if (scale->numel() != 1 && !(scale->rank() == 1 && scale->numel() == n && axis == (trans ? 0 : 1))) return false;
  if (w.zero.empty()) return true;
  const Tensor* zero = constant_of(v.graph(), w.zero);
  return zero && zero->dtype() == data->dtype() && zero->numel() == scale->numel();
}

struct QMatMulMatch {
  const ir::Node* mm = nullptr;
  const ir::Node* q = nullptr;
  Dq x, w;
  std::optional<Dq> b;   // Gemm's C: an int32 bias at scale sx * sw
  bool trans_w = false;  // Gemm's transB: the weights are stored [N, K]
};

// Q(MatMul(DQ(x), DQ(W))) or Q(Gemm(DQ(x), DQ(W)[, DQ(bias)])) with Gemm's alpha and beta 1 and no
// transA.
std::optional<QMatMulMatch> match_qmatmul(const PatternView& v, const ir::Node& q) {
  if (q.inputs.size() < 3 || q.attr_int("block_size", 0) != 0 || q.attr_int("output_dtype", 0) != 0)
    return std::nullopt;
  QMatMulMatch m;
  m.q = &q;
  m.mm = v.def(q.inputs[0], "MatMul");
  if (!m.mm) {
    m.mm = v.def(q.inputs[0], "Gemm");
    if (!m.mm || m.mm->attr_int("transA", 0) != 0 || m.mm->attr_float("alpha", 1.f) != 1.f ||
        m.mm->attr_float("beta", 1.f) != 1.f)
      return std::nullopt;
    m.trans_w = m.mm->attr_int("transB", 0) != 0;
  }
  if (m.mm->inputs.size() < 2 || !v.read_only_by(q.inputs[0], 1)) return std::nullopt;
  auto x = dq_of(v, m.mm->inputs[0]);
  auto w = dq_of(v, m.mm->inputs[1]);
  if (!x || !w || !is_8bit(type_of(v, x->data)) || !is_8bit(type_of(v, q.inputs[2]))) return std::nullopt;
  if (type_of(v, x->scale) != DType::F32 || type_of(v, q.inputs[1]) != DType::F32) return std::nullopt;
  if (!is_scalar_value(v, x->scale) || !is_scalar_value(v, x->zero) || !is_scalar_value(v, q.inputs[1]) ||
      !is_scalar_value(v, q.inputs[2]) || !matmul_weights_ok(v, *w, m.trans_w))
    return std::nullopt;
  m.x = *x;
  m.w = *w;
  if (m.mm->inputs.size() > 2 && !m.mm->inputs[2].empty()) {
    m.b = dq_of(v, m.mm->inputs[2]);
    const Tensor* w_data = constant_of(v.graph(), m.w.data);
    if (!m.b || !constant_of(v.graph(), m.x.scale) || !bias_ok(v, *m.b, m.x, m.w)) return std::nullopt;
    if (constant_of(v.graph(), m.b->data)->numel() != w_data->dim(m.trans_w ? 0 : 1)) return std::nullopt;
  }
  return m;
}

// A zero point of type `t` and shape `shape` as a new initializer.
std::string zero_point_init(ir::Graph& g, const std::string& base, DType t, const Shape& shape) {
  const std::string name = fresh_name(g, base + "_zero_point");
  g.add_initializer(name, Tensor::zeros(t, shape));
  return name;
}

// The weights as [K, N]: the model's, or (transB) a transposed copy.
std::string weights_kn(ir::Graph& g, const QMatMulMatch& m) {
  if (!m.trans_w) return m.w.data;
  const Tensor* w = constant_of(g, m.w.data);
  const int64_t n = w->dim(0), k = w->dim(1);
  Tensor t = Tensor::empty(w->dtype(), {k, n});
  const auto* src = static_cast<const uint8_t*>(w->raw());
  auto* dst = static_cast<uint8_t*>(t.raw());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) dst[c * n + r] = src[r * k + c];
  const std::string name = fresh_name(g, m.w.data + "_kn");
  g.add_initializer(name, std::move(t));
  return name;
}

NodeGroup qlinear_matmul(ir::Graph& g, const QMatMulMatch& m) {
  const DType xt = g.value(m.x.data)->type.dtype;
  const Tensor* ws = constant_of(g, m.w.scale);
  const DType wt = constant_of(g, m.w.data)->dtype();
  std::vector<std::string> in = {
      m.x.data,         m.x.scale,     m.x.zero.empty() ? zero_point_init(g, m.x.data, xt, {}) : m.x.zero,
      weights_kn(g, m), m.w.scale,     m.w.zero.empty() ? zero_point_init(g, m.w.data, wt, ws->shape()) : m.w.zero,
      m.q->inputs[1],   m.q->inputs[2]};
  // With a bias, the fused form of QLinearMatMul that adds it to the accumulators.
  if (m.b) in.push_back(m.b->data);
  ir::Node n = new_node(g, m.b ? "FusedQLinearMatMul" : "QLinearMatMul", m.b ? ops::kFusedDomain : "", std::move(in),
                        {m.q->outputs[0]}, {m.mm, m.q});
  NodeGroup grp;
  grp.ids = {m.mm->id.value, m.q->id.value};
  grp.node = std::move(n);
  grp.place = Place::Last;
  return grp;
}

// ---- dynamic quantization (ONNX Runtime's quantize_dynamic) ----
//
//   x ─ DynamicQuantizeLinear ─┬ xq ───────────── MatMulInteger(xq, wq, xz, wz) ─ Cast(float) ─┐
//                              ├ xs ─ Mul(·, ws) ────────────────────────────────────────────── Mul ─ [Add(bias)]
//                              └ xz ─────────────┘
// becomes FusedDynamicQuantMatMul(x, wq, ws, wz[, bias]): constant 2-D 8-bit wq, its constant f32
// scale (one or one per column), constant zero point, constant f32 bias over the columns. The
// DynamicQuantizeLinear stays for its other readers (the q, k and v projections share it) until
// dead-code elimination; the fused step quantizes x itself, the same way.
struct DynMatch {
  const ir::Node* dql = nullptr;
  const ir::Node* mmi = nullptr;
  const ir::Node* cast = nullptr;
  const ir::Node* mul = nullptr;
  const ir::Node* scale_mul = nullptr;  // Mul(xs, ws), folded when this match reads it alone
  const ir::Node* add = nullptr;
  std::string ws, bias;
};

bool dyn_weights_ok(const PatternView& v, const ir::Node& mmi) {
  const Tensor* w = constant_of(v.graph(), mmi.inputs[1]);
  if (!w || w->rank() != 2 || !is_8bit(w->dtype())) return false;
  if (mmi.inputs.size() < 4 || mmi.inputs[3].empty()) return true;
  const Tensor* z = constant_of(v.graph(), mmi.inputs[3]);
  return z && z->dtype() == w->dtype() && z->rank() <= 1 && (z->numel() == 1 || z->numel() == w->dim(1));
}

// A constant f32 with one value or (1-D) one per column.
bool per_column_f32(const PatternView& v, const std::string& name, int64_t n) {
  const Tensor* t = constant_of(v.graph(), name);
  return t && t->dtype() == DType::F32 && t->rank() <= 1 && (t->numel() == 1 || t->numel() == n);
}

std::optional<DynMatch> match_dynamic(const PatternView& v, const ir::Node& mul) {
  if (mul.inputs.size() != 2) return std::nullopt;
  DynMatch m;
  m.mul = &mul;
  std::string scales;
  for (size_t side = 0; side < 2 && !m.cast; ++side)
    if (const ir::Node* c = v.def(mul.inputs[side], "Cast"); c && c->attr_int("to", 0) == 1) {
      m.cast = c;
      scales = mul.inputs[1 - side];
    }
  if (!m.cast || !v.read_only_by(m.cast->outputs[0], 1)) return std::nullopt;
  m.mmi = v.def(m.cast->inputs[0], "MatMulInteger");
  if (!m.mmi || m.mmi->inputs.size() < 3 || !v.read_only_by(m.cast->inputs[0], 1) || !dyn_weights_ok(v, *m.mmi))
    return std::nullopt;
  m.dql = v.def(m.mmi->inputs[0], "DynamicQuantizeLinear");
  if (!m.dql || m.dql->outputs.size() < 3 || m.mmi->inputs[2] != m.dql->outputs[2]) return std::nullopt;
  const int64_t n = constant_of(v.graph(), m.mmi->inputs[1])->dim(1);
  m.scale_mul = v.def(scales, "Mul");
  if (!m.scale_mul || m.scale_mul->inputs.size() != 2) return std::nullopt;
  const std::string* ws = PatternView::other_input(*m.scale_mul, m.dql->outputs[1]);
  if (!ws || *ws == m.dql->outputs[1] || !per_column_f32(v, *ws, n)) return std::nullopt;
  m.ws = *ws;
  if (!v.read_only_by(scales, 1)) m.scale_mul = nullptr;  // shared: it stays
  if (const ir::Node* add = v.sole_reader(mul.outputs[0], "Add")) {
    const std::string* bias = PatternView::other_input(*add, mul.outputs[0]);
    const Tensor* bt = bias ? constant_of(v.graph(), *bias) : nullptr;
    if (bt && bt->rank() == 1 && bt->numel() == n && bt->dtype() == DType::F32) {
      m.add = add;
      m.bias = *bias;
    }
  }
  return m;
}

NodeGroup dynamic_quant_matmul(ir::Graph& g, const DynMatch& m) {
  const Tensor* w = constant_of(g, m.mmi->inputs[1]);
  const bool has_wz = m.mmi->inputs.size() > 3 && !m.mmi->inputs[3].empty();
  std::vector<std::string> in = {m.dql->inputs[0], m.mmi->inputs[1], m.ws,
                                 has_wz ? m.mmi->inputs[3] : zero_point_init(g, m.mmi->inputs[1], w->dtype(), {})};
  if (m.add) in.push_back(m.bias);
  std::vector<const ir::Node*> parts = {m.mmi, m.cast, m.mul};
  if (m.scale_mul) parts.push_back(m.scale_mul);
  if (m.add) parts.push_back(m.add);
  const ir::Node* last = m.add ? m.add : m.mul;
  return fused_group(
      parts, new_node(g, "FusedDynamicQuantMatMul", ops::kFusedDomain, std::move(in), {last->outputs[0]}, parts));
}

// A data move between a DequantizeLinear and a QuantizeLinear of the same per-tensor scale and zero
// point, as quantizers wrap Reshape and Transpose: Q(move(DQ(q))) = move(q) exactly, since
// (q - z) * s / s rounds back to q - z for a finite normal s. The move then runs on the 8-bit tensor
// and the pair goes (in ONNX Runtime's QDQ transformer encoder, 10 of each layer's Q/DQ pairs, and
// the embedding's Gather, which then reads 128 rows of bytes instead of dequantizing the table).
// MaxPool likewise, for a positive scale: DequantizeLinear is then increasing (distinct integers
// give distinct products), so the max of the dequantized window is the dequantized max, and the
// padding is skipped either way (the QDQ ResNet-18's stem pool on 8 bits instead of 4x the bytes).
struct QMoveMatch {
  const ir::Node* move = nullptr;
  const ir::Node* q = nullptr;
  std::string data;  // the 8-bit tensor the DequantizeLinear read
};

// A constant with one element, of any type.
std::optional<double> one_value(const PatternView& v, const std::string& name) {
  const Tensor* t = constant_of(v.graph(), name);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->at_double(0);
}

// Zero points "" (absent: 0) or one-element constants, equal.
bool same_zero_point(const PatternView& v, const std::string& a, const std::string& b) {
  if (a == b) return true;
  const auto x = a.empty() ? std::optional<double>(0.0) : one_value(v, a);
  const auto y = b.empty() ? std::optional<double>(0.0) : one_value(v, b);
  return x && y && *x == *y;
}

std::optional<QMoveMatch> match_qmove(const PatternView& v, const ir::Node& q) {
  if (q.inputs.size() < 2 || q.attr_int("block_size", 0) != 0 || q.attr_int("output_dtype", 0) != 0)
    return std::nullopt;
  const ir::Node* move = nullptr;
  for (const char* op : {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Gather", "MaxPool"})
    if ((move = v.def(q.inputs[0], op))) break;
  if (!move || move->inputs.empty() || !v.read_only_by(q.inputs[0], 1)) return std::nullopt;
  if (move->op_type == "MaxPool" && move->outputs.size() > 1 && !move->outputs[1].empty()) return std::nullopt;
  auto d = dq_of(v, move->inputs[0]);
  if (!d) return std::nullopt;
  const DType t = type_of(v, d->data);
  if (!is_8bit(t) || type_of(v, q.outputs[0]) != t) return std::nullopt;
  if (type_of(v, d->scale) != DType::F32 || type_of(v, q.inputs[1]) != DType::F32) return std::nullopt;
  const auto s = one_value(v, d->scale), sq = one_value(v, q.inputs[1]);
  if (!s || !sq || *s != *sq || !std::isfinite(*s) || std::fabs(*s) < std::numeric_limits<float>::min())
    return std::nullopt;
  if (move->op_type == "MaxPool" && *s < 0) return std::nullopt;  // a negative scale turns max into min
  if (!same_zero_point(v, d->zero, q.inputs.size() > 2 ? q.inputs[2] : "")) return std::nullopt;
  return QMoveMatch{move, &q, d->data};
}

NodeGroup qdq_move(ir::Graph& g, const QMoveMatch& m) {
  std::vector<std::string> in = m.move->inputs;
  in[0] = m.data;
  ir::Node n = new_node(g, m.move->op_type, m.move->domain, std::move(in), {m.q->outputs[0]}, {m.move, m.q});
  n.attrs = m.move->attrs;
  return fused_group({m.move, m.q}, std::move(n));
}

// A QDQ residual: QuantizeLinear(Add(DequantizeLinear(a), DequantizeLinear(b))) of per-tensor f32
// scales and 8-bit tensors of one type and one static shape, the Add read by the QuantizeLinear
// alone, becomes one FusedQLinearAdd over the bytes (each step in float32, so the same bytes): the
// QDQ ResNet-18's 8 residual Adds no longer dequantize both sides to float and quantize the sum.
struct QAddMatch {
  const ir::Node* add = nullptr;
  const ir::Node* q = nullptr;
  Dq a, b;
};

bool per_tensor_8bit(const PatternView& v, const Dq& d, DType t) {
  return type_of(v, d.data) == t && type_of(v, d.scale) == DType::F32 && one_value(v, d.scale) &&
         (d.zero.empty() ? t == DType::U8 : one_value(v, d.zero).has_value());
}

std::optional<QAddMatch> match_qadd(const PatternView& v, const ir::Node& q) {
  if (q.inputs.size() < 3 || q.attr_int("block_size", 0) != 0 || q.attr_int("output_dtype", 0) != 0)
    return std::nullopt;
  QAddMatch m;
  m.q = &q;
  m.add = v.def(q.inputs[0], "Add");
  if (!m.add || m.add->inputs.size() != 2 || !v.read_only_by(q.inputs[0], 1)) return std::nullopt;
  auto a = dq_of(v, m.add->inputs[0]);
  auto b = dq_of(v, m.add->inputs[1]);
  const DType t = type_of(v, q.inputs[2]);
  if (!a || !b || !is_8bit(t) || !per_tensor_8bit(v, *a, t) || !per_tensor_8bit(v, *b, t)) return std::nullopt;
  if (type_of(v, q.inputs[1]) != DType::F32 || !one_value(v, q.inputs[1]) || !one_value(v, q.inputs[2]))
    return std::nullopt;
  const auto* da = v.static_dims(a->data);
  const auto* db = v.static_dims(b->data);
  if (!da || !db || *da != *db) return std::nullopt;
  m.a = *a;
  m.b = *b;
  return m;
}

NodeGroup qlinear_add(ir::Graph& g, const QAddMatch& m) {
  const auto zero = [&](const Dq& d) { return d.zero.empty() ? zero_point_init(g, d.data, DType::U8, {}) : d.zero; };
  std::vector<std::string> in = {m.a.data,  m.a.scale, zero(m.a),      m.b.data,
                                 m.b.scale, zero(m.b), m.q->inputs[1], m.q->inputs[2]};
  return fused_group({m.add, m.q},
                     new_node(g, "FusedQLinearAdd", ops::kFusedDomain, std::move(in), {m.q->outputs[0]}, {m.add, m.q}));
}

class FoldQdq final : public Pass {
 public:
  std::string name() const override { return "FoldQdq"; }
  std::string argument() const override { return "fold-qdq"; }
  std::string description() const override {
    return "QuantizeLinear(Conv/MatMul/Gemm(DequantizeLinear...)) of a QDQ-quantized model into one 8-bit "
           "QLinearConv or QLinearMatMul; DynamicQuantizeLinear-MatMulInteger-Cast-Mul into one int8 matmul step; "
           "a Reshape, Transpose, Gather or MaxPool between a DequantizeLinear and a QuantizeLinear of one scale onto "
           "the "
           "8-bit tensor; a QDQ Add into one FusedQLinearAdd over the bytes";
  }
  bool runs_on_subgraphs() const override { return true; }

  // The matches are disjoint (each Conv output is read by its QuantizeLinear alone); the
  // DequantizeLinear nodes stay for dead-code elimination or their other readers.
  Status run(ir::Graph& g) override {
    using Found = std::variant<DynMatch, QConvMatch, QMatMulMatch, QMoveMatch, QAddMatch>;
    fuse_matches(
        g, [](const ir::Node& n) { return n.op_type == "QuantizeLinear" || n.op_type == "Mul"; },
        [](const PatternView& v, const ir::Node& n) -> std::optional<Found> {
          if (n.op_type == "Mul") {
            if (auto d = match_dynamic(v, n)) return Found(std::move(*d));
          } else if (auto m = match_qconv(v, n)) {
            return Found(std::move(*m));
          } else if (auto mm = match_qmatmul(v, n)) {
            return Found(std::move(*mm));
          } else if (auto mv = match_qmove(v, n)) {
            return Found(*mv);
          } else if (auto qa = match_qadd(v, n)) {
            return Found(std::move(*qa));
          }
          return std::nullopt;
        },
        [](ir::Graph& g2, const Found& f) {
          if (const auto* d = std::get_if<DynMatch>(&f)) return dynamic_quant_matmul(g2, *d);
          if (const auto* m = std::get_if<QConvMatch>(&f)) return qlinear_conv(g2, *m);
          if (const auto* mv = std::get_if<QMoveMatch>(&f)) return qdq_move(g2, *mv);
          if (const auto* qa = std::get_if<QAddMatch>(&f)) return qlinear_add(g2, *qa);
          return qlinear_matmul(g2, std::get<QMatMulMatch>(f));
        });
    return Status::ok();
  }
};

}  // namespace

PassPtr make_fold_qdq_pass() { return std::make_unique<FoldQdq>(); }

}  // namespace ms::compiler
