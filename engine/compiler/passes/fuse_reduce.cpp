// Reduction fusion: a ReduceSum or ReduceMean over f32 whose input is made by an elementwise chain
// (a FusedElementwise, or one elementwise op) becomes one FusedElementwise that reduces as it goes
// (attributes reduce, reduce_axes, keepdims). When nothing else reads the chain's result it is never
// written; otherwise the loop writes it too, as a second output, and the reduction does not read it
// again. BatchNorm in training mode is made of such pairs: the variance is the mean of squared
// deviations, the scale's gradient the sum of dY times the normalized input, the bias's the sum of
// dY (which the input's gradient reads as well). A reduction of a Cast of bf16 to f32 reads the bf16
// value, however many other readers the Cast has.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "engine/compiler/passes/elementwise_chain.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

bool is_chain(const ir::Node& n) {
  return n.domain == ops::kFusedDomain && n.op_type == "FusedElementwise" && !n.attrs.count("reduce");
}

class FuseReduce final : public Pass {
 public:
  std::string name() const override { return "FuseReduce"; }
  std::string argument() const override { return "fuse-reduce"; }
  std::string description() const override {
    return "an elementwise chain and a ReduceSum/ReduceMean of its result into one loop";
  }

  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    bool any = false;  // some pair fused (the scan that was refused may have fused some too)
    rewrite_to_fixpoint([&] { return step(g, any); });
    if (any && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }

 private:
  struct Match {
    uint64_t reduce = 0, producer = 0;
    std::vector<int64_t> axes;
    bool keep = false;    // the chain's result has other readers: a second output
    std::string widen;    // the producer is a Cast of this bf16 value to f32: read it instead
    uint64_t negate = 0;  // a Neg between the chain (the producer) and the reduction
  };

  // One scan collects every (reduction, producer) pair, then all are fused (each node in one pair).
  bool step(ir::Graph& g, bool& any) {
    const Uses uses = compute_uses(g);
    const auto prod = producer_index(g);
    std::vector<Match> found;
    std::set<uint64_t> taken;
    bool refused = false;
    work().nodes_visited += g.nodes().size();
    for (const ir::Node& r : g.nodes()) {
      if (!r.domain.empty() || (r.op_type != "ReduceSum" && r.op_type != "ReduceMean") || r.inputs.empty() ||
          r.outputs.size() != 1)
        continue;
      ++work().patterns_tried;
      const std::string& x = r.inputs[0];
      const ir::ValueType* xt = static_float(g, x);
      if (!xt || !static_float(g, r.outputs[0]) || uses.of(x) < 1) continue;
      auto p = prod.find(x);
      if (p == prod.end()) continue;
      const ir::Node& pn = g.nodes()[p->second];
      if (pn.outputs.size() != 1 || taken.count(pn.id.value)) continue;
      Match m;
      if (!reduce_axes(g, r, xt->dims->size(), m.axes)) continue;
      // A Cast of bf16 to f32 (mixed precision: a gradient widened for BatchNorm's backward, whose
      // bias gradients in a residual block are two sums of it): each reduction reads the bf16 value
      // and widens it in its loop; the Cast stays while anything else reads its result.
      if (std::string w = widened_from(g, prod, x); !w.empty()) {
        if (!take_rewrite()) {
          refused = true;
          break;
        }
        m.reduce = r.id.value;
        m.widen = w;
        found.push_back(std::move(m));
        continue;
      }
      // A reduction of Neg(v), v the result of a chain that others read too (BatchNorm's input
      // gradient, whose mean's gradient sums its negation): the chain's loop sums v as it writes it,
      // negated, instead of a second pass over v.
      if (pn.domain.empty() && pn.op_type == "Neg" && pn.inputs.size() == 1 && uses.of(x) == 1 && uses.only_plain(x)) {
        auto q = prod.find(pn.inputs[0]);
        if (q != prod.end()) {
          const ir::Node& qn = g.nodes()[q->second];
          if (is_chain(qn) && qn.outputs.size() == 1 && !taken.count(qn.id.value) && static_float(g, qn.outputs[0])) {
            if (!take_rewrite()) {
              refused = true;
              break;
            }
            m.reduce = r.id.value;
            m.producer = qn.id.value;
            m.negate = pn.id.value;
            m.keep = true;
            taken.insert(qn.id.value);
            taken.insert(pn.id.value);
            found.push_back(std::move(m));
            continue;
          }
        }
      }
      Link l;
      std::string in;
      if (!is_chain(pn) && !single_link(g, pn, *xt->dims, l, in)) continue;
      if (!take_rewrite()) {
        refused = true;
        break;
      }
      m.reduce = r.id.value;
      m.producer = pn.id.value;
      // Read elsewhere too (or a graph output): the loop writes the chain's result as well.
      m.keep = uses.of(x) != 1 || !uses.only_plain(x);
      taken.insert(pn.id.value);
      found.push_back(std::move(m));
    }
    std::unordered_map<uint64_t, const ir::Node*> by_id;
    for (const auto& n : g.nodes()) by_id.emplace(n.id.value, &n);
    std::vector<NodeGroup> groups;
    for (const Match& m : found)
      if (auto grp = fused(g, m, by_id)) groups.push_back(std::move(*grp));
    replace_node_groups(g, std::move(groups));
    any = any || !found.empty();
    return !found.empty() && !refused;
  }

  // A plain elementwise node as a one-link chain over its full-shape input `x`.
  static bool single_link(const ir::Graph& g, const ir::Node& n, const std::vector<int64_t>& dims, Link& l,
                          std::string& x) {
    for (const auto& in : n.inputs)
      if (const ir::ValueType* t = static_float(g, in); t && *t->dims == dims && as_link(g, n, in, dims, l)) {
        x = in;
        return true;
      }
    return false;
  }

  // The node that replaces a match (all made before any is swapped in, so the pointers hold).
  static std::optional<NodeGroup> fused(ir::Graph& g, const Match& m,
                                        const std::unordered_map<uint64_t, const ir::Node*>& by_id) {
    const ir::Node* r = by_id.at(m.reduce);
    ir::Node f;
    const std::string reduced = r->outputs[0];
    if (!m.widen.empty()) {
      Link widen;
      widen.op = "Cast";
      widen.alpha = static_cast<float>(dtype_to_onnx(DType::F32));
      f = chain_node(g, m.widen, {widen}, {r}, reduced);
      f.attrs["reduce"] = ir::Attribute(r->op_type);
      f.attrs["reduce_axes"] = ir::Attribute(m.axes);
      f.attrs["keepdims"] = ir::Attribute(r->attr_int("keepdims", 1));
      NodeGroup grp;
      grp.ids = {m.reduce};
      grp.node = std::move(f);
      return grp;
    }
    const ir::Node* p = by_id.at(m.producer);
    const std::string result = p->outputs[0];
    if (m.negate) {
      const ir::Node* neg = by_id.at(m.negate);
      f = new_node(g, "FusedElementwise", ops::kFusedDomain, p->inputs, {result, reduced}, {p, neg, r});
      f.attrs = p->attrs;
      f.attrs["reduce"] = ir::Attribute(r->op_type);
      f.attrs["reduce_axes"] = ir::Attribute(m.axes);
      f.attrs["keepdims"] = ir::Attribute(r->attr_int("keepdims", 1));
      f.attrs["reduce_scale"] = ir::Attribute(-1.0f);
      NodeGroup grp;
      grp.ids = {m.reduce, m.producer, m.negate};
      grp.place = Place::First;
      grp.node = std::move(f);
      return grp;
    }
    if (is_chain(*p)) {
      f = new_node(g, "FusedElementwise", ops::kFusedDomain, p->inputs, {reduced}, {p, r});
      f.attrs = p->attrs;
    } else {
      const ir::ValueType* xt = static_float(g, result);
      Link l;
      std::string x;
      if (!xt || !single_link(g, *p, *xt->dims, l, x)) return std::nullopt;
      f = chain_node(g, x, {l}, {p, r}, reduced);
    }
    f.attrs["reduce"] = ir::Attribute(r->op_type);
    f.attrs["reduce_axes"] = ir::Attribute(m.axes);
    f.attrs["keepdims"] = ir::Attribute(r->attr_int("keepdims", 1));
    NodeGroup grp;
    grp.ids = {m.reduce, m.producer};
    if (m.keep) {
      // Where the producer was: the result's other readers may come before the reduction.
      f.outputs = {result, reduced};
      grp.place = Place::First;
    }
    grp.node = std::move(f);
    return grp;
  }
};

}  // namespace

PassPtr make_fuse_reduce_pass() { return std::make_unique<FuseReduce>(); }

}  // namespace ms::compiler
