// Elementwise-chain fusion: a run of f32 elementwise ops (unary, or binary with a broadcast operand)
// where each intermediate has one reader becomes one FusedElementwise node (ai.modescope): one loop
// over memory instead of one per op, and no intermediate buffers.
#include <cmath>

#include <limits>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

// A Clip without a bound: the largest finite float (infinities would not survive the JSON dumps).
constexpr float kNoBound = std::numeric_limits<float>::max();

bool unary_op(const std::string& op) {
  static const std::set<std::string> ops = {"Relu", "Sigmoid", "Tanh",     "Exp",  "Log",       "Neg",   "Abs",
                                            "Sqrt", "Erf",     "LeakyRelu", "Elu", "Reciprocal", "Floor", "Ceil",
                                            "Softplus", "HardSigmoid", "Clip", "Sign"};
  return ops.count(op) != 0;
}
bool binary_op(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min"; }

const ir::ValueType* static_f32(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = name.empty() ? nullptr : g.value(name);
  return v && v->type.dtype == DType::F32 && v->type.is_static() ? &v->type : nullptr;
}

struct Link {
  std::string op;
  int arity = 1, side = 0;
  float alpha = 0, beta = 0;
  std::string operand;
};

// The link `n` makes when the chain value `cur` (of shape `dims`) flows into it; false if it cannot.
bool as_link(const ir::Graph& g, const ir::Node& n, const std::string& cur, const std::vector<int64_t>& dims, Link& l) {
  if (!n.domain.empty() || n.outputs.size() != 1) return false;
  const ir::ValueType* ot = static_f32(g, n.outputs[0]);
  if (!ot || *ot->dims != dims) return false;
  l = Link{};
  l.op = n.op_type;
  if (unary_op(n.op_type)) {
    if (n.inputs.empty() || n.inputs[0] != cur) return false;
    if (n.op_type == "LeakyRelu") l.alpha = n.attr_float("alpha", 0.01f);
    else if (n.op_type == "Elu") l.alpha = n.attr_float("alpha", 1.f);
    else if (n.op_type == "HardSigmoid") {
      l.alpha = n.attr_float("alpha", 0.2f);
      l.beta = n.attr_float("beta", 0.5f);
    } else if (n.op_type == "Clip") {
      l.alpha = -kNoBound;
      l.beta = kNoBound;
      if (g.opset() < 11) {  // bounds were attributes before opset 11, inputs since
        l.alpha = n.attr_float("min", -kNoBound);
        l.beta = n.attr_float("max", kNoBound);
      }
      for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
        if (n.inputs[i].empty()) continue;
        const Tensor* t = constant_of(g, n.inputs[i]);
        if (!t || t->numel() != 1 || t->dtype() != DType::F32) return false;
        (i == 1 ? l.alpha : l.beta) = static_cast<float>(t->at_double(0));
      }
    } else if (n.inputs.size() != 1) {
      return false;
    }
    return true;
  }
  if (!binary_op(n.op_type) || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return false;
  l.arity = 2;
  l.side = n.inputs[0] == cur ? 0 : 1;
  l.operand = n.inputs[1 - l.side];
  if (n.inputs[l.side] != cur) return false;
  const ir::ValueType* t = static_f32(g, l.operand);
  return t && t->dims->size() <= dims.size();
}

class FuseElementwise final : public Pass {
 public:
  std::string name() const override { return "ElementwiseFusion"; }
  std::string argument() const override { return "fuse-elementwise"; }
  std::string description() const override { return "chains of elementwise ops into one fused loop kernel"; }

  Status run(ir::Graph& g) override {
    const bool any = rewrite_to_fixpoint([&] { return step(g); });
    if (any && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }

 private:
  struct Chain {
    std::string x, out;
    std::vector<Link> links;
    std::vector<uint64_t> ids;
  };

  // One scan finds every chain (a node joins at most one), then all are fused: training graphs have
  // hundreds of chains, and rescanning the graph after each fusion made this pass quadratic.
  bool step(ir::Graph& g) {
    const Uses uses = compute_uses(g);
    std::unordered_map<std::string, size_t> reader;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const auto& in : g.nodes()[i].inputs)
        if (!in.empty()) reader[in] = i;
    std::vector<char> claimed(g.nodes().size(), 0);
    std::vector<Chain> chains;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& first = g.nodes()[i];
      if (claimed[i] || first.outputs.size() != 1) continue;
      const ir::ValueType* ot = static_f32(g, first.outputs[0]);
      if (!ot) continue;
      const std::vector<int64_t> dims = *ot->dims;
      // The chain's input: the operand with the output's shape.
      std::string x;
      for (const auto& in : first.inputs)
        if (const ir::ValueType* t = static_f32(g, in); t && *t->dims == dims) {
          x = in;
          break;
        }
      if (x.empty()) continue;
      Link l;
      if (!as_link(g, first, x, dims, l)) continue;
      Chain c{x, first.outputs[0], {l}, {first.id.value}};
      std::vector<size_t> at{i};
      for (;;) {
        if (uses.of(c.out) != 1 || !uses.only_plain(c.out)) break;
        auto r = reader.find(c.out);
        if (r == reader.end() || claimed[r->second]) break;
        const ir::Node& n = g.nodes()[r->second];
        if (!as_link(g, n, c.out, dims, l)) break;
        c.links.push_back(l);
        c.ids.push_back(n.id.value);
        at.push_back(r->second);
        c.out = n.outputs[0];
      }
      if (c.links.size() < 2) continue;
      for (size_t k : at) claimed[k] = 1;
      chains.push_back(std::move(c));
    }
    for (const Chain& c : chains) {
      std::vector<const ir::Node*> nodes;
      for (uint64_t id : c.ids)
        for (const auto& n : g.nodes())
          if (n.id.value == id) {
            nodes.push_back(&n);
            break;
          }
      fuse(g, c.x, c.links, nodes, c.out);
    }
    return !chains.empty();
  }

  static void fuse(ir::Graph& g, const std::string& x, const std::vector<Link>& links,
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
    std::set<uint64_t> ids;
    for (const auto* n : nodes) ids.insert(n->id.value);
    replace_nodes(g, ids, std::move(f), Place::Last);
  }
};

}  // namespace

PassPtr make_fuse_elementwise_pass() { return std::make_unique<FuseElementwise>(); }

}  // namespace ms::compiler
