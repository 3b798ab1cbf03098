// Shared by the elementwise-chain and reduction fusions: which nodes make a link of a fused
// elementwise chain, and the FusedElementwise node of a chain.
#include "engine/compiler/passes/elementwise_chain.h"

#include <cmath>

#include "engine/compiler/rewrite.h"
#include "engine/ops/elementwise_params.h"
#include "engine/ops/fused.h"

namespace ms::compiler {

namespace {

// The table ops (ops/elementwise_math.h) chains take; the fused loop runs any table op.
constexpr ew::Op kChainOps[] = {ew::Op::Relu,  ew::Op::Sigmoid,  ew::Op::Tanh,        ew::Op::Exp,        ew::Op::Log,
                                ew::Op::Neg,   ew::Op::Abs,      ew::Op::Sqrt,        ew::Op::Erf,        ew::Op::Gelu,
                                ew::Op::Swish, ew::Op::Elu,      ew::Op::LeakyRelu,   ew::Op::Reciprocal, ew::Op::Floor,
                                ew::Op::Ceil,  ew::Op::Softplus, ew::Op::HardSigmoid, ew::Op::Clip,       ew::Op::Sign,
                                ew::Op::Add,   ew::Op::Sub,      ew::Op::Mul,         ew::Op::Div,        ew::Op::Max,
                                ew::Op::Min};

// The chain op named `op` of `arity`, or null.
const ew::OpInfo* chain_op(const std::string& op, int arity) {
  const ew::OpInfo* i = ew::find(op.c_str());
  if (!i || i->arity != arity) return nullptr;
  for (ew::Op c : kChainOps)
    if (c == i->op) return i;
  return nullptr;
}
bool binary_op(const std::string& op) { return chain_op(op, 2) != nullptr; }

}  // namespace

const ir::ValueType* static_float(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = name.empty() ? nullptr : g.value(name);
  return v && (v->type.dtype == DType::F32 || v->type.dtype == DType::BF16) && v->type.is_static() ? &v->type : nullptr;
}

std::string widened_from(const ir::Graph& g, const Producers& prod, const std::string& name) {
  const ir::ValueType* t = static_float(g, name);
  auto p = prod.find(name);
  if (!t || t->dtype != DType::F32 || p == prod.end()) return "";
  const ir::Node& c = g.nodes()[p->second];
  if (!c.domain.empty() || c.op_type != "Cast" || c.inputs.size() != 1 || c.outputs.size() != 1) return "";
  const ir::ValueType* s = static_float(g, c.inputs[0]);
  return s && s->dtype == DType::BF16 && *s->dims == *t->dims ? c.inputs[0] : "";
}

Recompute recompute_of(const ir::Graph& g, const Producers& prod, const std::string& name) {
  Recompute r;
  Link widen;
  widen.op = "Cast";
  widen.alpha = static_cast<float>(dtype_to_onnx(DType::F32));
  if (std::string w = widened_from(g, prod, name); !w.empty()) {
    r.source = w;
    r.links = {widen};
    return r;
  }
  const ir::ValueType* t = static_float(g, name);
  auto p = prod.find(name);
  if (!t || t->dtype != DType::F32 || p == prod.end()) return r;
  const ir::Node& n = g.nodes()[p->second];
  if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.size() != 2 ||
      (n.op_type != "Add" && n.op_type != "Sub" && n.op_type != "Mul" && n.op_type != "Div"))
    return r;
  int64_t size = 1;
  for (int64_t d : *t->dims) size *= d;
  for (int side = 0; side < 2; ++side) {
    const std::string w = widened_from(g, prod, n.inputs[static_cast<size_t>(side)]);
    const ir::ValueType* bt = static_float(g, n.inputs[static_cast<size_t>(1 - side)]);
    if (w.empty() || !bt || bt->dtype != DType::F32 || bt->dims->size() > t->dims->size()) continue;
    int64_t small = 1;
    for (int64_t d : *bt->dims) small *= d;
    if (small * 8 > size) continue;
    Link op;
    op.op = n.op_type;
    op.arity = 2;
    op.side = side;
    op.operand = n.inputs[static_cast<size_t>(1 - side)];
    r.source = w;
    r.links = {widen, op};
    return r;
  }
  return r;
}

bool as_link(const ir::Graph& g, const ir::Node& n, const std::string& cur, const std::vector<int64_t>& dims, Link& l,
             const Producers* prod) {
  if (!n.domain.empty() || n.outputs.size() != 1) return false;
  const ir::ValueType* ot = static_float(g, n.outputs[0]);
  const ir::ValueType* ct = static_float(g, cur);
  if (!ot || !ct || *ot->dims != dims) return false;
  l = Link{};
  l.op = n.op_type;
  if (n.op_type == "Cast") {  // between f32 and bf16: the loop rounds (to bf16) or does nothing
    if (n.inputs.size() != 1 || n.inputs[0] != cur || n.attr_int("to", 0) != dtype_to_onnx(ot->dtype)) return false;
    l.alpha = static_cast<float>(dtype_to_onnx(ot->dtype));  // the ONNX `to`
    return true;
  }
  if (ot->dtype != ct->dtype) return false;
  if (const ew::OpInfo* u = chain_op(n.op_type, 1)) {
    if (n.inputs.empty() || n.inputs[0] != cur) return false;
    if (u->op == ew::Op::Clip) {
      if (!clip_bounds(g, n, ct->dtype, l.alpha, l.beta)) return false;
    } else {
      if (n.inputs.size() != 1) return false;
      const ops::ElementwiseParams p = ops::elementwise_params(n, u->op);
      l.alpha = p.a;
      l.beta = p.b;
    }
    return true;
  }
  if (n.op_type == "Mul" && n.inputs.size() == 2 && n.inputs[0] == cur && n.inputs[1] == cur) {
    l.op = "Square";  // x * x: a variance's squared deviations
    return true;
  }
  if (!binary_op(n.op_type) || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return false;
  l.arity = 2;
  l.side = n.inputs[0] == cur ? 0 : 1;
  l.operand = n.inputs[1 - l.side];
  if (n.inputs[l.side] != cur) return false;
  if (prod)
    if (std::string w = widened_from(g, *prod, l.operand); !w.empty()) l.operand = w;
  const ir::ValueType* t = static_float(g, l.operand);
  return t && (t->dtype == ct->dtype || (ct->dtype == DType::F32 && t->dtype == DType::BF16)) &&
         t->dims->size() <= dims.size();
}

namespace {

// The constant scalar `name` as a float (f32, or an 8-bit integer), or false. An absent zero point
// (empty name) is uint8 0.
bool scalar_constant(const ir::Graph& g, const std::string& name, DType want, float& out) {
  if (name.empty()) {
    out = 0;
    return want == DType::U8;
  }
  const Tensor* t = constant_of(g, name);
  if (!t || t->numel() != 1 || t->dtype() != want) return false;
  out = want == DType::F32 ? t->data<float>()[0] : static_cast<float>(t->at_int(0));
  return true;
}

}  // namespace

bool qdq_link(const ir::Graph& g, const ir::Node& q, const ir::Node& dq, const std::string& cur,
              const std::vector<int64_t>& dims, Link& l) {
  if (!q.domain.empty() || q.op_type != "QuantizeLinear" || !dq.domain.empty() || dq.op_type != "DequantizeLinear" ||
      q.inputs.size() < 2 || q.inputs[0] != cur || q.outputs.size() != 1 || dq.inputs.size() < 2 ||
      dq.inputs[0] != q.outputs[0] || dq.outputs.size() != 1)
    return false;
  for (const ir::Node* n : {&q, &dq})
    if (n->attr_int("block_size", 0) != 0 || n->attr_int("output_dtype", 0) != 0 || n->attr_int("precision", 0) != 0)
      return false;
  const ir::ValueType* ct = static_float(g, cur);
  const ir::ValueType* ot = static_float(g, dq.outputs[0]);
  const ir::Value* qv = g.value(q.outputs[0]);
  if (!ct || !ot || !qv || ct->dtype != DType::F32 || ot->dtype != DType::F32 || *ot->dims != dims) return false;
  const DType t = qv->type.dtype;
  if (t != DType::U8 && t != DType::I8) return false;
  auto input = [](const ir::Node& n, size_t i) { return n.inputs.size() > i ? n.inputs[i] : std::string(); };
  float s1 = 0, s2 = 0, z1 = 0, z2 = 0;
  if (!scalar_constant(g, q.inputs[1], DType::F32, s1) || !scalar_constant(g, dq.inputs[1], DType::F32, s2) ||
      !scalar_constant(g, input(q, 2), t, z1) || !scalar_constant(g, input(dq, 2), t, z2) || s1 != s2 || z1 != z2 ||
      !(s1 > 0) || !std::isfinite(s1))
    return false;
  l = Link{};
  l.op = t == DType::U8 ? "QuantizeDequantizeU8" : "QuantizeDequantizeS8";
  l.alpha = s1;
  l.beta = z1;
  return true;
}

ir::Node chain_node(ir::Graph& g, const std::string& x, const std::vector<Link>& links,
                    const std::vector<const ir::Node*>& nodes, const std::string& out) {
  std::vector<std::string> inputs{x}, chain;
  std::vector<int64_t> arity, side;
  std::vector<float> alphas, betas;
  for (const auto& l : links) {
    chain.push_back(l.op);
    arity.push_back(l.arity);
    side.push_back(l.side);
    alphas.push_back(l.alpha);
    betas.push_back(l.beta);
    if (l.arity == 2) inputs.push_back(l.operand);
  }
  ir::Node f = new_node(g, "FusedElementwise", ops::kFusedDomain, inputs, {out}, nodes);
  f.attrs["chain"] = ir::Attribute(chain);
  f.attrs["chain_arity"] = ir::Attribute(arity);
  f.attrs["chain_side"] = ir::Attribute(side);
  f.attrs["chain_alphas"] = ir::Attribute(alphas);
  f.attrs["chain_betas"] = ir::Attribute(betas);
  return f;
}

}  // namespace ms::compiler
