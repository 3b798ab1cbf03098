// Operator fusion around compute anchors: Conv / Gemm / MatMul, then (MatMul only) a bias Add over
// the last axis, activations, and at most one residual Add of a same-shaped value, into one
// FusedConv / FusedGemm / FusedMatMul node (ai.modescope) whose kernel applies the tail as oneDNN
// post-ops or in one loop. Only f32 results with static shapes are fused; every intermediate must be
// read by the next node of the chain alone.

#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

const ir::ValueType* static_f32(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.value(name);
  return v && v->type.dtype == DType::F32 && v->type.is_static() ? &v->type : nullptr;
}

// Activation node -> post-op (Clip needs constant bounds).
bool as_activation(const ir::Graph& g, const ir::Node& n, ops::PostOp& p) {
  if (!n.domain.empty() || n.op_type == "Add" || !ops::post_op_kind(n.op_type, p.kind)) return false;
  if (n.inputs.empty() || n.outputs.size() != 1) return false;
  switch (p.kind) {
    case ops::PostOp::Kind::LeakyRelu: p.alpha = n.attr_float("alpha", 0.01f); break;
    case ops::PostOp::Kind::Elu: p.alpha = n.attr_float("alpha", 1.0f); break;
    case ops::PostOp::Kind::Gelu: {
      const std::string approximate = n.attr_string("approximate", "none");
      if (approximate != "none" && approximate != "tanh") return false;
      p.alpha = approximate == "tanh" ? 1.f : 0.f;
      break;
    }
    case ops::PostOp::Kind::HardSigmoid:
      p.alpha = n.attr_float("alpha", 0.2f);
      p.beta = n.attr_float("beta", 0.5f);
      break;
    case ops::PostOp::Kind::Clip: {
      if (!clip_bounds(g, n, DType::F32, p.alpha, p.beta)) return false;
      break;
    }
    default: break;
  }
  return true;
}

class FuseOps final : public Pass {
 public:
  std::string name() const override { return "FuseOps"; }
  std::string argument() const override { return "fuse-ops"; }
  std::string description() const override {
    return "Conv/Gemm/MatMul + bias + activation (+ residual Add) into one oneDNN post-op kernel";
  }

  bool runs_on_subgraphs() const override { return true; }
  // One scan in node order, each anchor tried once; the fused nodes are swapped in together at the
  // end. That is what rewriting to a fixpoint (first fusable anchor, rewrite, rescan) gives: an anchor
  // that cannot fuse never becomes fusable by a later fusion (its reader is not a chain link, or is
  // then a fused node, which ends a chain just the same), fusions do not change the use counts of the
  // values that remain, and a node taken by an earlier chain ends a later one as its fused node would.
  Status run(ir::Graph& g) override {
    const Uses uses = compute_uses(g);
    std::unordered_map<std::string, size_t> readers;  // value -> index of its single reader
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const auto& in : g.nodes()[i].inputs)
        if (!in.empty()) readers[in] = i;
    work().nodes_visited += 2 * g.nodes().size();
    std::vector<char> taken(g.nodes().size(), 0);
    std::vector<NodeGroup> groups;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& a = g.nodes()[i];
      if (!a.domain.empty() || (a.op_type != "Conv" && a.op_type != "Gemm" && a.op_type != "MatMul")) continue;
      if (a.outputs.size() != 1 || !static_f32(g, a.outputs[0])) continue;
      ++work().patterns_tried;
      if (auto grp = fuse_from(g, i, uses, readers, taken)) groups.push_back(std::move(*grp));
    }
    const bool groups_empty = groups.empty();
    replace_node_groups(g, std::move(groups));
    if (!groups_empty && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }

 private:
  // The fused node of the chain from `anchor`, or nothing; marks the chain's nodes taken.
  std::optional<NodeGroup> fuse_from(ir::Graph& g, size_t anchor, const Uses& uses,
                                     const std::unordered_map<std::string, size_t>& readers, std::vector<char>& taken) {
    const ir::Node& a = g.nodes()[anchor];
    const bool matmul = a.op_type == "MatMul";
    std::vector<const ir::Node*> chain{&a};
    std::vector<size_t> at{anchor};
    std::vector<ops::PostOp> post;
    std::string bias, residual, cur = a.outputs[0];
    const ir::ValueType out_type = *static_f32(g, cur);
    bool have_add = false;
    for (;;) {
      if (uses.of(cur) != 1 || !uses.only_plain(cur)) break;
      auto r = readers.find(cur);
      if (r == readers.end() || taken[r->second]) break;
      const ir::Node& n = g.nodes()[r->second];
      ++work().nodes_visited;
      if (n.outputs.size() != 1 || n.outputs[0].empty() || !n.domain.empty()) break;
      const ir::ValueType* nt = static_f32(g, n.outputs[0]);
      if (!nt || *nt->dims != *out_type.dims) break;
      ops::PostOp p;
      if (n.op_type == "Add" && n.inputs.size() == 2) {
        const std::string other = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
        if (other == cur) break;
        const Tensor* c = constant_of(g, other);
        if (matmul && post.empty() && bias.empty() && c && c->dtype() == DType::F32 &&
            c->numel() == out_type.dims->back() && c->rank() >= 1 && c->dim(-1) == c->numel()) {
          bias = other;
        } else if (!have_add) {
          const ir::ValueType* ot = static_f32(g, other);
          if (!ot || *ot->dims != *out_type.dims) break;
          residual = other;
          have_add = true;
          post.push_back(ops::PostOp{ops::PostOp::Kind::Add, 0, 0});
        } else {
          break;
        }
      } else if (as_activation(g, n, p)) {
        post.push_back(p);
      } else {
        break;
      }
      chain.push_back(&n);
      at.push_back(r->second);
      cur = n.outputs[0];
    }
    if (chain.size() == 1) return std::nullopt;
    if (!bias.empty() && g.value(bias)->constant->rank() != 1) {
      const Tensor flat = g.value(bias)->constant->reshaped({g.value(bias)->constant->numel()});
      const std::string name = fresh_name(g, bias + "_flat");
      g.add_initializer(name, flat);
      bias = name;
    }
    const std::string op = a.op_type == "Conv" ? "FusedConv" : a.op_type == "Gemm" ? "FusedGemm" : "FusedMatMul";
    std::vector<std::string> inputs = a.inputs;
    inputs.resize(matmul ? 2 : 3);
    if (matmul) inputs.push_back(bias);
    if (!residual.empty()) {
      inputs.resize(3);
      inputs.push_back(residual);
    }
    while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
    ir::Node f = new_node(g, op, ops::kFusedDomain, inputs, {cur}, chain);
    f.attrs = a.attrs;
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (const auto& p : post) {
      names.push_back(ops::post_op_name(p.kind));
      alphas.push_back(p.alpha);
      betas.push_back(p.beta);
    }
    if (!names.empty()) {
      f.attrs["post_ops"] = ir::Attribute(names);
      f.attrs["post_alphas"] = ir::Attribute(alphas);
      f.attrs["post_betas"] = ir::Attribute(betas);
    }
    // The fused node goes where the last node of the chain was: the residual is defined by then.
    NodeGroup grp;
    for (const auto* n : chain) grp.ids.insert(n->id.value);
    for (size_t k : at) taken[k] = 1;
    grp.node = std::move(f);
    grp.place = Place::Last;
    return grp;
  }
};

}  // namespace

PassPtr make_fuse_ops_pass() { return std::make_unique<FuseOps>(); }

}  // namespace ms::compiler
