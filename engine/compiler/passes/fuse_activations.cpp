// Activations from their elementwise spelling, as PyTorch exports nn.GELU before opset 20 and nn.SiLU
// before opset 24, and as hand-written models write them:
//   erf form:   0.5 * x * (1 + Erf(x / sqrt(2)))                       -> Gelu(x)
//   tanh form:  0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  -> Gelu(x) {approximate="tanh"}
//   SiLU:       x * Sigmoid(x)                                         -> Swish(x)
// with x / sqrt(2) also as x * (1/sqrt(2)), x^3 as Pow(x, 3) or x * x * x, operands of Add and Mul in
// either order, and the halving on x, on the product or on (1 + ...). Every intermediate must be read
// by the pattern alone. One Gelu or Swish node is one op-table call per element (and a post-op for
// fuse-ops: EfficientNet's convs end in SiLU) instead of two to nine passes over the tensor.
#include <cmath>
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"

namespace ms::compiler {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kKappa = 0.044715;
constexpr double kRel = 1e-5;  // exported constants are f32 roundings of the exact values

struct ActivationMatch {
  std::vector<const ir::Node*> nodes;
  std::string x, out;
  bool tanh = false;
  bool swish = false;  // a SiLU: Swish, not Gelu
};

class FuseActivations final : public Pass {
 public:
  std::string name() const override { return "FuseActivations"; }
  std::string argument() const override { return "fuse-activations"; }
  std::string description() const override {
    return "GELU spelled with Erf or Tanh into one Gelu, x * Sigmoid(x) (SiLU) into one Swish";
  }
  bool runs_on_subgraphs() const override { return true; }

  // One scan from each Erf, Tanh and Sigmoid; matches are disjoint (their intermediates have one
  // reader).
  Status run(ir::Graph& g) override {
    fuse_matches(
        g,
        [](const ir::Node& n) {
          return n.inputs.size() == 1 && n.outputs.size() == 1 &&
                 (n.op_type == "Erf" || n.op_type == "Tanh" || n.op_type == "Sigmoid");
        },
        [](const PatternView& v, const ir::Node& n) {
          return n.op_type == "Erf" ? match_erf(v, n) : n.op_type == "Tanh" ? match_tanh(v, n) : match_silu(v, n);
        },
        fused);
    return Status::ok();
  }

 private:
  // Mul(a, c) or Mul(c, a) with c the scalar `want`: returns a's name, else nullptr.
  static const std::string* times_scalar(const PatternView& v, const ir::Node* mul, double want) {
    if (!mul || mul->inputs.size() != 2) return nullptr;
    for (int k = 0; k < 2; ++k)
      if (v.scalar_is(mul->inputs[1 - k], want, kRel)) return &mul->inputs[k];
    return nullptr;
  }

  // x / sqrt(2) or x * (1/sqrt(2)): x's name, else nullptr.
  static const std::string* x_over_sqrt2(const PatternView& v, const std::string& a) {
    if (const ir::Node* div = v.def(a, "Div"); div && v.scalar_is(div->inputs[1], kSqrt2, kRel)) {
      return &div->inputs[0];
    }
    return times_scalar(v, v.def(a, "Mul"), 1.0 / kSqrt2);
  }

  // x^3 as Pow(x, 3) or Mul(Mul(x, x), x) in any order: appends its nodes and returns x, else nullptr.
  static const std::string* cube(const PatternView& v, const std::string& c, std::vector<const ir::Node*>& nodes) {
    if (const ir::Node* p = v.def(c, "Pow"); p && v.scalar_is(p->inputs[1], 3.0, kRel)) {
      nodes.push_back(p);
      return &p->inputs[0];
    }
    const ir::Node* m = v.def(c, "Mul");
    if (!m || m->inputs.size() != 2) return nullptr;
    for (int k = 0; k < 2; ++k) {
      const ir::Node* sq = v.def(m->inputs[k], "Mul");
      const std::string& x = m->inputs[1 - k];
      if (sq && sq->inputs.size() == 2 && sq->inputs[0] == x && sq->inputs[1] == x && v.read_only_by(m->inputs[k], 1)) {
        nodes.push_back(m);
        nodes.push_back(sq);
        return &x;
      }
    }
    return nullptr;
  }

  // From `one_plus` = 1 + f(x), the final product 0.5 * x * one_plus in any of its groupings; appends
  // its nodes and sets m.out. False when it is not there.
  static bool half_x_times(const PatternView& v, const std::string& one_plus, ActivationMatch& m) {
    const ir::Node* m1 = v.sole_reader(one_plus, "Mul");
    const std::string* other = m1 ? PatternView::other_input(*m1, one_plus) : nullptr;
    if (!other) return false;
    const ir::Node* last = nullptr;
    if (*other == m.x) {  // (x * b) * 0.5
      last = v.sole_reader(m1->outputs[0], "Mul");
      if (!last || !times_scalar(v, last, 0.5)) return false;
    } else if (v.scalar_is(*other, 0.5, kRel)) {  // x * (b * 0.5)
      last = v.sole_reader(m1->outputs[0], "Mul");
      if (!last || !PatternView::other_input(*last, m1->outputs[0]) ||
          *PatternView::other_input(*last, m1->outputs[0]) != m.x)
        return false;
    } else {  // (x * 0.5) * b
      const ir::Node* half = v.def(*other, "Mul");
      const std::string* hx = times_scalar(v, half, 0.5);
      if (!hx || *hx != m.x || !v.read_only_by(*other, 1)) return false;
      m.nodes.push_back(half);
      last = m1;
      m1 = nullptr;
    }
    if (m1) m.nodes.push_back(m1);
    m.nodes.push_back(last);
    m.out = last->outputs[0];
    return true;
  }

  // Add(f, 1) or Add(1, f) reading `f` alone: the sum's node, else nullptr.
  static const ir::Node* plus_one(const PatternView& v, const std::string& f) {
    const ir::Node* add = v.sole_reader(f, "Add");
    const std::string* one = add ? PatternView::other_input(*add, f) : nullptr;
    return one && v.scalar_is(*one, 1.0, kRel) ? add : nullptr;
  }

  static std::optional<ActivationMatch> match_erf(const PatternView& v, const ir::Node& erf) {
    const std::string* x = x_over_sqrt2(v, erf.inputs[0]);
    const ir::Node* add = plus_one(v, erf.outputs[0]);
    if (!x || !add || !v.read_only_by(erf.inputs[0], 1)) return std::nullopt;
    ActivationMatch m;
    m.x = *x;
    m.nodes = {v.def(erf.inputs[0], "Div") ? v.def(erf.inputs[0], "Div") : v.def(erf.inputs[0], "Mul"), &erf, add};
    if (!half_x_times(v, add->outputs[0], m)) return std::nullopt;
    return m;
  }

  // sqrt(2/pi) * (x + 0.044715 * x^3) feeding the Tanh.
  static std::optional<ActivationMatch> match_tanh(const PatternView& v, const ir::Node& tanh) {
    const ir::Node* scale = v.def(tanh.inputs[0], "Mul");
    const std::string* inner = times_scalar(v, scale, kSqrt2OverPi);
    const ir::Node* sum = inner ? v.def(*inner, "Add") : nullptr;
    if (!sum || sum->inputs.size() != 2 || !v.read_only_by(tanh.inputs[0], 1) || !v.read_only_by(*inner, 1))
      return std::nullopt;
    ActivationMatch m;
    m.tanh = true;
    m.nodes = {scale, sum, &tanh};
    for (int k = 0; k < 2 && m.x.empty(); ++k) {
      const ir::Node* kappa = v.def(sum->inputs[1 - k], "Mul");
      const std::string* c = times_scalar(v, kappa, kKappa);
      if (!c || !v.read_only_by(sum->inputs[1 - k], 1) || !v.read_only_by(*c, 1)) continue;
      std::vector<const ir::Node*> cube_nodes;
      const std::string* x = cube(v, *c, cube_nodes);
      if (!x || *x != sum->inputs[k]) continue;
      m.x = *x;
      m.nodes.push_back(kappa);
      m.nodes.insert(m.nodes.end(), cube_nodes.begin(), cube_nodes.end());
    }
    const ir::Node* add = m.x.empty() ? nullptr : plus_one(v, tanh.outputs[0]);
    if (!add) return std::nullopt;
    m.nodes.push_back(add);
    if (!half_x_times(v, add->outputs[0], m)) return std::nullopt;
    return m;
  }

  // x * Sigmoid(x), the product in either order.
  static std::optional<ActivationMatch> match_silu(const PatternView& v, const ir::Node& sig) {
    const ir::Node* mul = v.sole_reader(sig.outputs[0], "Mul");
    const std::string* x = mul ? PatternView::other_input(*mul, sig.outputs[0]) : nullptr;
    if (!x || *x != sig.inputs[0]) return std::nullopt;
    ActivationMatch m;
    m.swish = true;
    m.x = *x;
    m.out = mul->outputs[0];
    m.nodes = {&sig, mul};
    return m;
  }

  static NodeGroup fused(ir::Graph& g, const ActivationMatch& m) {
    ir::Node gelu = new_node(g, m.swish ? "Swish" : "Gelu", "", {m.x}, {m.out}, m.nodes);
    if (m.tanh) gelu.attrs["approximate"] = ir::Attribute(std::string("tanh"));
    return fused_group(m.nodes, std::move(gelu));
  }
};

}  // namespace

PassPtr make_fuse_activations_pass() { return std::make_unique<FuseActivations>(); }

}  // namespace ms::compiler
