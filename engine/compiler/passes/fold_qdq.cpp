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
#include <cmath>
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"
#include "engine/compiler/work.h"

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

class FoldQdq final : public Pass {
 public:
  std::string name() const override { return "FoldQdq"; }
  std::string argument() const override { return "fold-qdq"; }
  std::string description() const override {
    return "QuantizeLinear(Conv(DequantizeLinear...)) of a QDQ-quantized model into one 8-bit QLinearConv";
  }
  bool runs_on_subgraphs() const override { return true; }

  // The matches are disjoint (each Conv output is read by its QuantizeLinear alone); the
  // DequantizeLinear nodes stay for dead-code elimination or their other readers.
  Status run(ir::Graph& g) override {
    const PatternView v(g);
    std::vector<NodeGroup> groups;
    work().nodes_visited += g.nodes().size();
    for (const ir::Node& n : g.nodes()) {
      if (!n.domain.empty() || n.op_type != "QuantizeLinear") continue;
      ++work().patterns_tried;
      if (auto m = match_qconv(v, n)) {
        if (!take_rewrite()) break;
        groups.push_back(qlinear_conv(g, *m));
      }
    }
    replace_node_groups(g, std::move(groups));
    return Status::ok();
  }
};

}  // namespace

PassPtr make_fold_qdq_pass() { return std::make_unique<FoldQdq>(); }

}  // namespace ms::compiler
