// Attention as exported by PyTorch (nn.MultiheadAttention, F.scaled_dot_product_attention before
// opset 23) and as hand-written models spell it:
//   [Q = Mul|Div(Q, c)] ; S = MatMul(Q, Kt) ; [S = Mul|Div(S, c)] ;
//   [S = Add(S, mask) | Where(constant bool mask, -inf, S) (GPT-2's masked_fill)] ;
//   [S = Reshape(Add(Reshape(S, [A/W, W, ...]), constant window mask), [A, ...]) (Swin's shifted windows)] ;
//   P = Softmax(S, last axis) ; O = MatMul(P, V) ; [O = Transpose(O)]
// over rank-3 [H, S, D] or rank-4 [B, H, S, D] operands, every intermediate read by the pattern
// alone, f32; or bf16 (a bf16 Graph's), with the Softmax kept f32 between Cast(to f32) and
// Cast(to bf16), which the kernel's f32 scores and softmax keep the same. The chain becomes one FusedAttention
// (ops/fused_attention.h) whose kernel never writes the scores for more than a block of query rows. A Transpose that
// makes Q, Kᵀ or V (the head split: [S, H, D] -> [H, S, D]) or that follows O (the head merge) is read through strides
// instead of copied: the operand's layout says where its axes lie.
#include <cmath>
#include <limits>
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

struct AttentionMatch {
  std::vector<const ir::Node*> nodes;
  std::string q, k, v, mask, out;
  std::string q_layout, k_layout, v_layout, y_layout;
  double scale = 1;
  // A boolean mask filled with -inf by Where (GPT-2's masked_fill): the scores are masked where the
  // constant `mask` is true (+1) or false (-1); it becomes an additive f32 mask. 0: additive already.
  int where_mask = 0;
  // Swin's shifted windows: a constant mask added to the scores split as window_dims [A/W, W, H, Sq, Sk];
  // with `mask` (then constant too) it folds into one [A, H, Sq, Sk] constant.
  std::string window_mask;
  std::vector<int64_t> window_dims, score_dims;
};

// out (dims `dims`, row-major) += t broadcast to dims by numpy's rules (t's dims right-aligned).
void add_broadcast(float* out, const std::vector<int64_t>& dims, const Tensor& t) {
  const size_t r = dims.size(), tr = t.shape().size();
  std::vector<int64_t> stride(r, 0);
  for (int64_t k = static_cast<int64_t>(tr) - 1, st = 1; k >= 0; --k) {
    const int64_t d = t.shape()[static_cast<size_t>(k)];
    stride[r - tr + static_cast<size_t>(k)] = d == 1 ? 0 : st;
    st *= d;
  }
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0, n = numel(dims); i < n; ++i) {
    out[i] += static_cast<float>(t.at_double(off));
    for (size_t a = r; a-- > 0;) {  // odometer over dims, keeping the source offset
      off += stride[a];
      if (++idx[a] < dims[a]) break;
      off -= stride[a] * dims[a];
      idx[a] = 0;
    }
  }
}

// A value made by Mul(x, c) / Mul(c, x) / Div(x, c) with c a scalar constant, read once.
struct Scaled {
  const ir::Node* node;
  std::string x;
  double factor;  // c, or 1/c for Div
};

std::optional<Scaled> scaled(const PatternView& v, const std::string& value) {
  if (!v.read_only_by(value, 1)) return std::nullopt;
  if (const ir::Node* d = v.def(value, "Div"); d && d->inputs.size() == 2) {
    const auto c = v.scalar(d->inputs[1]);
    if (c && *c != 0) return Scaled{d, d->inputs[0], 1.0 / *c};
  }
  if (const ir::Node* m = v.def(value, "Mul"); m && m->inputs.size() == 2)
    for (int k = 0; k < 2; ++k)
      if (const auto c = v.scalar(m->inputs[1 - k])) return Scaled{m, m->inputs[k], *c};
  return std::nullopt;
}

// The layout of the value a Transpose with `perm` reads, when its output is in order `canonical`
// (out axis i is in axis perm[i]); "" when perm does not fit.
std::string read_through(const std::vector<int64_t>& perm, const std::string& canonical) {
  if (perm.size() != canonical.size()) return "";
  std::string in(canonical.size(), '?');
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(in.size()) || in[static_cast<size_t>(perm[i])] != '?') return "";
    in[static_cast<size_t>(perm[i])] = canonical[i];
  }
  return in;
}

class FuseAttention final : public Pass {
 public:
  std::string name() const override { return "FuseAttention"; }
  std::string argument() const override { return "fuse-attention"; }
  std::string description() const override {
    return "MatMul(Q,Kt) -> scale -> (+mask) -> Softmax -> MatMul(.,V) into one FusedAttention, head transposes "
           "read in place";
  }
  bool runs_on_subgraphs() const override { return true; }

  Status run(ir::Graph& g) override {
    const size_t fused_count = fuse_matches(
        g, [](const ir::Node& n) { return n.op_type == "MatMul" && n.inputs.size() == 2; }, match, fused);
    if (fused_count && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }

 private:
  // A static value of type t.
  static bool is_type(const PatternView& v, const std::string& name, DType t) {
    const ir::Value* val = v.graph().value(name);
    return val && val->type.dtype == t && val->type.is_static();
  }

  // In a bf16 graph, Cast(to `t`) making `x`, read by the pattern alone: the Cast, else nullptr.
  static const ir::Node* cast_to(const PatternView& v, const std::string& x, DType t) {
    const ir::Node* c = v.def(x, "Cast");
    if (!c || !c->has_input(0) || c->attr_int("to", 0) != dtype_to_onnx(t) || !v.read_only_by(x, 1)) return nullptr;
    return c;
  }

  // Whether Softmax n normalizes over the last of `rank` axes.
  static bool last_axis_softmax(const PatternView& v, const ir::Node& n, size_t rank) {
    const bool legacy = v.graph().opset() < 13;
    int64_t axis = n.attr_int("axis", legacy ? 1 : -1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    return axis == static_cast<int64_t>(rank) - 1;
  }

  // Softmax input Where(cond, -inf, S) or Where(cond, S, -inf) with a constant boolean cond: the
  // scores, and cond as the mask.
  static const ir::Node* scores_and_where_mask(const PatternView& v, const std::string& x, AttentionMatch& m,
                                               std::string& scores) {
    const ir::Node* w = v.def(x, "Where");
    if (!w || w->inputs.size() != 3 || !v.read_only_by(x, 1)) return nullptr;
    const Tensor* cond = constant_of(v.graph(), w->inputs[0]);
    if (!cond || cond->dtype() != DType::Bool) return nullptr;
    auto minus_inf = [&](const std::string& c) {
      const auto s = v.scalar(c);
      return s && std::isinf(*s) && *s < 0;
    };
    for (int k = 1; k <= 2; ++k) {
      const std::string& s = w->inputs[static_cast<size_t>(3 - k)];
      if (!minus_inf(w->inputs[static_cast<size_t>(k)]) || !(v.def(s, "MatMul") || scaled(v, s))) continue;
      scores = s;
      m.mask = w->inputs[0];
      m.where_mask = k == 1 ? 1 : -1;
      return w;
    }
    return nullptr;
  }

  // Softmax input Reshape(Add(Reshape(y, [A/W, W, rest]), mask), [A, rest]) with a constant f32 mask
  // that broadcasts into the split (Swin's shifted windows): y, the three nodes joining m.nodes; else x.
  static std::string window_masked(const PatternView& v, const std::string& x, AttentionMatch& m) {
    const ir::Node* back = v.def(x, "Reshape");
    if (!back || !v.read_only_by(x, 1)) return x;
    const ir::Node* add = v.def(back->inputs[0], "Add");
    if (!add || add->inputs.size() != 2 || !v.read_only_by(back->inputs[0], 1)) return x;
    for (size_t k = 0; k < 2; ++k) {
      const ir::Node* split = v.def(add->inputs[k], "Reshape");
      const std::string& mask = add->inputs[1 - k];
      if (!split || !v.read_only_by(add->inputs[k], 1) || !is_constant_float(v, mask)) continue;
      const auto *yd = v.static_dims(split->inputs[0]), *sd = v.static_dims(add->inputs[k]), *xd = v.static_dims(x),
                 *ad = v.static_dims(add->outputs[0]), *md = v.static_dims(mask);
      if (!yd || !sd || !xd || !ad || !md || *yd != *xd || *ad != *sd || yd->empty() || sd->size() != yd->size() + 1 ||
          (*sd)[0] * (*sd)[1] != (*yd)[0] || !std::equal(sd->begin() + 2, sd->end(), yd->begin() + 1) ||
          md->size() > sd->size())
        continue;
      m.window_mask = mask;
      m.window_dims = *sd;
      m.nodes.insert(m.nodes.end(), {back, add, split});
      return split->inputs[0];
    }
    return x;
  }

  // A constant f32 or bf16 mask (a bf16 graph's); the fused node gets its sum in f32.
  static bool is_constant_float(const PatternView& v, const std::string& name) {
    const Tensor* t = constant_of(v.graph(), name);
    return t && (t->dtype() == DType::F32 || t->dtype() == DType::BF16);
  }

  // Softmax input: the scores, with an additive mask split off.
  static const ir::Node* scores_and_mask(const PatternView& v, const std::string& x, AttentionMatch& m,
                                         std::string& scores) {
    scores = x;
    if (const ir::Node* w = scores_and_where_mask(v, x, m, scores)) return w;
    const ir::Node* add = v.def(x, "Add");
    if (!add || add->inputs.size() != 2 || !v.read_only_by(x, 1)) return nullptr;
    for (int k = 0; k < 2; ++k) {
      const std::string& s = add->inputs[k];
      if (v.def(s, "MatMul") || scaled(v, s)) {
        scores = s;
        m.mask = add->inputs[1 - k];
        return add;
      }
    }
    return nullptr;
  }

  // The operand `value` read through the Transpose that makes it, or as it is in `canonical` order.
  static std::string operand(const PatternView& v, const std::string& value, const std::string& canonical,
                             std::string& layout) {
    layout = canonical;
    const ir::Node* t = v.def(value, "Transpose");
    if (!t || !v.static_dims(t->inputs[0])) return value;
    const std::string in = read_through(t->attr_ints("perm"), canonical);
    // oneDNN reads rows with the head dim (or, for Kᵀ, either of the last two axes) innermost.
    const char inner = in.empty() ? '?' : in.back();
    if (inner != 'd' && !(canonical.back() == 's' && inner == 's')) return value;
    layout = in;
    return t->inputs[0];
  }

  static std::optional<AttentionMatch> match(const PatternView& v, const ir::Node& root) {
    AttentionMatch m;
    // A bf16 graph's probabilities: Cast(to bf16) of an f32 Softmax over Cast(to f32) of the scores.
    const ir::Node* narrow = cast_to(v, root.inputs[0], DType::BF16);
    const std::string probs = narrow ? narrow->inputs[0] : root.inputs[0];
    const ir::Node* softmax = v.def(probs, "Softmax");
    const std::vector<int64_t>* pd = v.static_dims(root.inputs[0]);
    if (!softmax || !pd || (pd->size() != 3 && pd->size() != 4) || !v.read_only_by(probs, 1) ||
        !last_axis_softmax(v, *softmax, pd->size()))
      return std::nullopt;
    const ir::Node* widen = narrow ? cast_to(v, softmax->inputs[0], DType::F32) : nullptr;
    if (narrow && (!widen || !is_type(v, widen->inputs[0], DType::BF16))) return std::nullopt;
    const size_t rank = pd->size();
    std::string s;
    m.nodes = {softmax, &root};
    if (narrow) m.nodes.insert(m.nodes.end(), {narrow, widen});
    const std::string scores = window_masked(v, widen ? widen->inputs[0] : softmax->inputs[0], m);
    const ir::Node* add = scores_and_mask(v, scores, m, s);
    if (add) m.nodes.push_back(add);
    if (!m.window_mask.empty() && (m.where_mask || (!m.mask.empty() && !is_constant_float(v, m.mask))))
      return std::nullopt;
    m.score_dims = *v.static_dims(scores);
    if (auto sc = scaled(v, s)) {
      m.scale *= sc->factor;
      m.nodes.push_back(sc->node);
      s = sc->x;
    }
    const ir::Node* mm = v.def(s, "MatMul");
    if (!mm || mm->inputs.size() != 2 || !v.read_only_by(s, 1)) return std::nullopt;
    m.nodes.push_back(mm);
    std::string q = mm->inputs[0];
    if (auto sc = scaled(v, q)) {
      m.scale *= sc->factor;
      m.nodes.push_back(sc->node);
      q = sc->x;
    }
    if (!shapes_fit(v, q, mm->inputs[1], root.inputs[1], root.outputs[0], m.mask, m.where_mask != 0, rank))
      return std::nullopt;
    const std::string lead = rank == 4 ? "bh" : "h";
    m.q = operand(v, q, lead + "sd", m.q_layout);
    m.k = operand(v, mm->inputs[1], lead + "ds", m.k_layout);
    m.v = operand(v, root.inputs[1], lead + "sd", m.v_layout);
    m.out = root.outputs[0];
    m.y_layout = lead + "sd";
    if (const ir::Node* t = v.sole_reader(m.out, "Transpose")) {
      // The head merge after O: write Y in the Transpose's order.
      const std::vector<int64_t> perm = t->attr_ints("perm");
      std::string y(perm.size(), '?');
      for (size_t i = 0; i < perm.size() && perm.size() == rank; ++i)
        if (perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank)) y[i] = m.y_layout[static_cast<size_t>(perm[i])];
      if (perm.size() == rank && y.back() == 'd' && y.find('?') == std::string::npos) {
        m.y_layout = y;
        m.out = t->outputs[0];
        m.nodes.push_back(t);
      }
    }
    return m;
  }

  // Q [.., Sq, D], Kᵀ [.., D, Sk], V [.., Sk, Dv] with equal leading dims, all f32 or all bf16; a
  // mask of that type or f32 with last dim Sk broadcasting to the scores.
  static bool shapes_fit(const PatternView& v, const std::string& q, const std::string& kt, const std::string& val,
                         const std::string& out, const std::string& mask, bool bool_mask, size_t rank) {
    const DType t = is_type(v, q, DType::BF16) ? DType::BF16 : DType::F32;
    for (const std::string* name : {&q, &kt, &val, &out})
      if (!is_type(v, *name, t)) return false;
    const auto &qd = *v.static_dims(q), &kd = *v.static_dims(kt), &vd = *v.static_dims(val);
    if (qd.size() != rank || kd.size() != rank || vd.size() != rank) return false;
    for (size_t i = 0; i + 2 < rank; ++i)
      if (qd[i] != kd[i] || qd[i] != vd[i]) return false;
    const int64_t sk = kd[rank - 1];
    if (qd[rank - 1] != kd[rank - 2] || vd[rank - 2] != sk) return false;
    if (mask.empty()) return true;
    if (bool_mask ? !v.static_dims(mask) : !is_type(v, mask, DType::F32) && !is_type(v, mask, t)) return false;
    const auto& md = *v.static_dims(mask);
    if (md.empty() || md.size() > rank || md.back() != sk) return false;
    for (size_t j = 0; j + 1 < md.size(); ++j) {
      const size_t axis = rank - md.size() + j;
      const int64_t want = axis == rank - 2 ? qd[rank - 2] : qd[axis];
      if (md[j] != 1 && md[j] != want) return false;
    }
    return true;
  }

  // The boolean mask as an additive one: -inf where the scores are masked, 0 elsewhere.
  static std::string additive_mask(ir::Graph& g, const AttentionMatch& m) {
    const Tensor& cond = *constant_of(g, m.mask);
    Tensor add = Tensor::empty(DType::F32, cond.shape());
    const bool masked_when = m.where_mask > 0;
    for (int64_t i = 0; i < cond.numel(); ++i)
      add.data<float>()[i] = cond.data<bool>()[i] == masked_when ? -std::numeric_limits<float>::infinity() : 0.f;
    const std::string name = fresh_name(g, m.mask + "_additive");
    g.add_initializer(name, add);
    return name;
  }

  // The window mask (and the mask before it) as one [A, H, Sq, Sk] constant.
  static std::string window_mask(ir::Graph& g, const AttentionMatch& m) {
    Tensor sum = Tensor::zeros(DType::F32, m.score_dims);
    if (!m.mask.empty()) add_broadcast(sum.data<float>(), m.score_dims, *constant_of(g, m.mask));
    add_broadcast(sum.data<float>(), m.window_dims, *constant_of(g, m.window_mask));  // same order, split
    const std::string name = fresh_name(g, m.window_mask + "_windows");
    g.add_initializer(name, sum);
    return name;
  }

  static NodeGroup fused(ir::Graph& g, const AttentionMatch& m) {
    std::vector<std::string> inputs = {m.q, m.k, m.v};
    if (!m.window_mask.empty())
      inputs.push_back(window_mask(g, m));
    else if (!m.mask.empty())
      inputs.push_back(m.where_mask ? additive_mask(g, m) : m.mask);
    ir::Node n = new_node(g, "FusedAttention", ops::kFusedDomain, std::move(inputs), {m.out}, m.nodes);
    n.attrs["q_layout"] = ir::Attribute(m.q_layout);
    n.attrs["k_layout"] = ir::Attribute(m.k_layout);
    n.attrs["v_layout"] = ir::Attribute(m.v_layout);
    n.attrs["y_layout"] = ir::Attribute(m.y_layout);
    n.attrs["scale"] = ir::Attribute(static_cast<float>(m.scale));
    return fused_group(m.nodes, std::move(n));
  }
};

}  // namespace

PassPtr make_fuse_attention_pass() { return std::make_unique<FuseAttention>(); }

}  // namespace ms::compiler
