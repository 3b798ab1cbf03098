// Operator fusion around compute anchors: Conv / Gemm / MatMul, then (MatMul only) a bias Add over
// the last axis, activations, and at most one residual Add of a same-shaped value, into one
// FusedConv / FusedGemm / FusedMatMul node (ai.modescope) whose kernel applies the tail as oneDNN
// post-ops or in one loop. Only f32 or bf16 results of known rank are fused (symbolic dims allowed); every
// intermediate must be read by the next node of the chain alone.

#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/post_op_match.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

namespace ms::compiler {

bool activation_post_op(const ir::Graph& g, const ir::Node& n, ops::PostOp& p) {
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
    case ops::PostOp::Kind::Swish: p.alpha = n.attr_float("alpha", 1.0f); break;
    case ops::PostOp::Kind::HardSigmoid:
      p.alpha = n.attr_float("alpha", 0.2f);
      p.beta = n.attr_float("beta", 0.5f);
      break;
    case ops::PostOp::Kind::Clip: {
      // Bounds of the operand's type (a bf16 graph's ReLU6 has bf16 ones).
      const ir::Value* x = g.value(n.inputs[0]);
      if (!x || !clip_bounds(g, n, x->type.dtype, p.alpha, p.beta)) return false;
      break;
    }
    default: break;
  }
  return true;
}

void set_post_op_attrs(const std::vector<ops::PostOp>& post, ir::Node& f) {
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
}

namespace {

// A value of dtype `t` and known rank. Symbolic dims (a shape bucket's, -1) are allowed: a chain's
// links keep the anchor's shape whatever size they take (activations; a bias over the last axis,
// which must be static), and a residual must be of the same shape for sure (fused_residual_type).
const ir::ValueType* ranked(const ir::Graph& g, const std::string& name, DType t) {
  const ir::Value* v = g.value(name);
  return v && v->type.dtype == t && v->type.is_tensor() && v->type.has_rank() ? &v->type : nullptr;
}

// A product fold-weight-transpose made (FusedMatMul with transB, nothing fused yet) anchors like a
// MatMul; the fused node keeps its attributes.
bool bare_fused_matmul(const ir::Node& a) {
  return a.domain == ops::kFusedDomain && a.op_type == "FusedMatMul" && a.inputs.size() == 2 &&
         !a.attrs.count("post_ops");
}

bool is_anchor(const ir::Node& a) {
  return (a.domain.empty() && (a.op_type == "Conv" || a.op_type == "Gemm" || a.op_type == "MatMul")) ||
         bare_fused_matmul(a);
}

// The anchor's output type when a chain can start there: f32 or bf16 (a bf16 Graph's: FusedConv and
// FusedMatMul/FusedGemm run oneDNN's bf16 primitives with the post-ops), or f16 (an fp16 Graph's on a
// device: the pass fuses those only for a device backend, whose kernels take f16).
const ir::ValueType* anchor_type(const ir::Graph& g, const ir::Node& a) {
  if (a.outputs.size() != 1) return nullptr;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    if (const ir::ValueType* r = ranked(g, a.outputs[0], t)) return r;
  return nullptr;
}

// A residual operand of the chain's shape: equal dims, where each symbolic dim has the same name as
// the anchor's (unnamed symbolic dims may differ at run time, so they do not count as equal).
bool same_shape_for_sure(const ir::ValueType& a, const ir::ValueType& b) {
  if (*a.dims != *b.dims) return false;
  for (size_t i = 0; i < a.dims->size(); ++i) {
    if ((*a.dims)[i] >= 0) continue;
    const std::string pa = i < a.dim_params.size() ? a.dim_params[i] : "",
                      pb = i < b.dim_params.size() ? b.dim_params[i] : "";
    if (pa.empty() || pa != pb) return false;
  }
  return true;
}

// A chain from an anchor: its nodes and their indices, the post-ops of its tail, the bias and
// residual operands, and the chain's output so far.
struct FusionChain {
  std::vector<const ir::Node*> nodes;
  std::vector<size_t> at;
  std::vector<ops::PostOp> post;
  std::string bias, residual, out;
  bool have_add = false;
};

// The index of the node that can extend the chain from `cur`: its single plain reader, not taken
// by another chain, with one f32 output of the chain's static shape; nothing when there is none.
std::optional<size_t> next_link(const ir::Graph& g, const std::string& cur, const ir::ValueType& out_type,
                                const Uses& uses, const std::unordered_map<std::string, size_t>& readers,
                                const std::vector<char>& taken) {
  if (uses.of(cur) != 1 || !uses.only_plain(cur)) return std::nullopt;
  auto r = readers.find(cur);
  if (r == readers.end() || taken[r->second]) return std::nullopt;
  const ir::Node& n = g.nodes()[r->second];
  ++work().nodes_visited;
  if (n.outputs.size() != 1 || n.outputs[0].empty() || !n.domain.empty()) return std::nullopt;
  const ir::ValueType* nt = ranked(g, n.outputs[0], out_type.dtype);
  if (!nt || *nt->dims != *out_type.dims) return std::nullopt;
  return r->second;
}

// Takes node n into the chain's tail: a bias Add (MatMul only, before any post-op), one residual Add
// of a same-shaped value, or an activation. False when n ends the chain instead.
bool take_link(const ir::Graph& g, const ir::Node& n, const ir::ValueType& out_type, bool matmul, FusionChain& c) {
  ops::PostOp p;
  if (n.op_type == "Add" && n.inputs.size() == 2) {
    const std::string other = n.inputs[0] == c.out ? n.inputs[1] : n.inputs[0];
    if (other == c.out) return false;
    const Tensor* t = constant_of(g, other);
    if (matmul && c.post.empty() && c.bias.empty() && t && (t->dtype() == DType::F32 || t->dtype() == out_type.dtype) &&
        !out_type.dims->empty() && out_type.dims->back() >= 0 && t->numel() == out_type.dims->back() &&
        t->rank() >= 1 && t->dim(-1) == t->numel()) {
      c.bias = other;
    } else if (!c.have_add && (matmul || c.post.empty() || c.post.back().kind == ops::PostOp::Kind::Add)) {
      // A conv's residual Add comes before its activations: oneDNN's convs have no eltwise-then-sum
      // (only the reference conv), so an Add after an activation ends a conv's chain.
      const ir::ValueType* ot = ranked(g, other, out_type.dtype);
      if (!ot || !same_shape_for_sure(*ot, out_type)) return false;
      c.residual = other;
      c.have_add = true;
      c.post.push_back(ops::PostOp{ops::PostOp::Kind::Add, 0, 0});
    } else {
      return false;
    }
  } else if (activation_post_op(g, n, p)) {
    c.post.push_back(p);
  } else {
    return false;
  }
  return true;
}

// The chain from `anchor` as far as it goes (only the anchor when nothing follows).
FusionChain collect_chain(const ir::Graph& g, size_t anchor, const Uses& uses,
                          const std::unordered_map<std::string, size_t>& readers, const std::vector<char>& taken) {
  const ir::Node& a = g.nodes()[anchor];
  const bool matmul = a.op_type == "MatMul" || bare_fused_matmul(a);
  FusionChain c;
  c.nodes = {&a};
  c.at = {anchor};
  c.out = a.outputs[0];
  const ir::ValueType out_type = *anchor_type(g, a);
  for (;;) {
    const std::optional<size_t> r = next_link(g, c.out, out_type, uses, readers, taken);
    if (!r) break;
    const ir::Node& n = g.nodes()[*r];
    if (!take_link(g, n, out_type, matmul, c)) break;
    c.nodes.push_back(&n);
    c.at.push_back(*r);
    c.out = n.outputs[0];
  }
  return c;
}

// The bias as a 1-D initializer: itself when it is one, else a flattened copy under a new name.
std::string flat_bias(ir::Graph& g, const std::string& bias) {
  if (g.value(bias)->constant->rank() == 1) return bias;
  const Tensor flat = g.value(bias)->constant->reshaped({g.value(bias)->constant->numel()});
  const std::string name = fresh_name(g, bias + "_flat");
  g.add_initializer(name, flat);
  return name;
}

// The fused node's inputs: the anchor's (X, W and, but for MatMul, B), then MatMul's bias, then the
// residual at index 3; trailing empty ones dropped.
std::vector<std::string> fused_inputs(const ir::Node& a, const FusionChain& c, bool matmul) {
  std::vector<std::string> inputs = a.inputs;
  inputs.resize(matmul ? 2 : 3);
  if (matmul) inputs.push_back(c.bias);
  if (!c.residual.empty()) {
    inputs.resize(3);
    inputs.push_back(c.residual);
  }
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  return inputs;
}

class FuseOps final : public Pass {
 public:
  explicit FuseOps(bool f16) : f16_(f16) {}
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
    bool refused = false;
    for (size_t i = 0; i < g.nodes().size() && !refused; ++i) {
      const ir::Node& a = g.nodes()[i];
      if (!is_anchor(a)) continue;
      const ir::ValueType* t = anchor_type(g, a);
      if (!t || (t->dtype == DType::F16 && !f16_)) continue;
      ++work().patterns_tried;
      if (auto grp = fuse_from(g, i, uses, readers, taken, refused)) groups.push_back(std::move(*grp));
    }
    const bool groups_empty = groups.empty();
    replace_node_groups(g, std::move(groups));
    if (!groups_empty && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }

 private:
  bool f16_;  // f16 anchors too (a device backend's fp16 graph)
  // The fused node of the chain from `anchor`, or nothing; marks the chain's nodes taken. `refused`
  // when take_rewrite() said no.
  std::optional<NodeGroup> fuse_from(ir::Graph& g, size_t anchor, const Uses& uses,
                                     const std::unordered_map<std::string, size_t>& readers, std::vector<char>& taken,
                                     bool& refused) {
    const ir::Node& a = g.nodes()[anchor];
    const bool matmul = a.op_type == "MatMul" || bare_fused_matmul(a);
    FusionChain c = collect_chain(g, anchor, uses, readers, taken);
    if (c.nodes.size() == 1) return std::nullopt;
    if (!take_rewrite()) {
      refused = true;
      return std::nullopt;
    }
    if (!c.bias.empty()) c.bias = flat_bias(g, c.bias);
    const std::string op = a.op_type == "Conv" ? "FusedConv" : a.op_type == "Gemm" ? "FusedGemm" : "FusedMatMul";
    ir::Node f = new_node(g, op, ops::kFusedDomain, fused_inputs(a, c, matmul), {c.out}, c.nodes);
    f.attrs = a.attrs;
    set_post_op_attrs(c.post, f);
    // The fused node goes where the last node of the chain was: the residual is defined by then.
    NodeGroup grp;
    for (const auto* n : c.nodes) grp.ids.insert(n->id.value);
    for (size_t k : c.at) taken[k] = 1;
    grp.node = std::move(f);
    grp.place = Place::Last;
    return grp;
  }
};

}  // namespace

PassPtr make_fuse_ops_pass(bool f16_anchors) { return std::make_unique<FuseOps>(f16_anchors); }

}  // namespace ms::compiler
