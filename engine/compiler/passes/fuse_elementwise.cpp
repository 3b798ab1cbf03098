// Elementwise-chain fusion: a run of f32 or bf16 elementwise ops (unary, binary with a broadcast
// operand, or Casts between the two) where each intermediate has one reader becomes one
// FusedElementwise node (ai.modescope): one loop over memory instead of one per op, and no
// intermediate buffers. Values that are Casts of bf16 to f32 are read as the bf16 value. A QDQ
// model's QuantizeLinear -> DequantizeLinear pair between float ops is one link (its GELU is five
// float ops with a pair after each: the QDQ encoder 37.0 -> 35.5 ms, the same outputs).
#include "engine/compiler/passes/elementwise_chain.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

class FuseElementwise final : public Pass {
 public:
  std::string name() const override { return "FuseElementwise"; }
  std::string argument() const override { return "fuse-elementwise"; }
  std::string description() const override { return "chains of elementwise ops into one fused loop kernel"; }

  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    bool any = false;  // some chain fused (the scan that was refused may have fused some too)
    rewrite_to_fixpoint([&] { return step(g, any); });
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
  bool step(ir::Graph& g, bool& any) {
    const Uses uses = compute_uses(g);
    const Producers prod = producer_index(g);
    std::unordered_map<std::string, size_t> reader;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const auto& in : g.nodes()[i].inputs)
        if (!in.empty()) reader[in] = i;
    std::vector<char> claimed(g.nodes().size(), 0);
    std::vector<Chain> chains;
    bool refused = false;
    work().nodes_visited += 2 * g.nodes().size();
    // A QDQ model's QuantizeLinear at `qi` on the chain value `cur` whose only reader is its
    // DequantizeLinear: one link for the pair (elementwise_chain.h), the DequantizeLinear at `di`.
    auto qdq_pair = [&](size_t qi, const std::string& cur, const std::vector<int64_t>& dims, Link& l, size_t& di) {
      const ir::Node& q = g.nodes()[qi];
      if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.outputs.size() != 1) return false;
      const std::string& qo = q.outputs[0];
      if (uses.of(qo) != 1 || !uses.only_plain(qo)) return false;
      auto r = reader.find(qo);
      if (r == reader.end() || claimed[r->second] || !qdq_link(g, q, g.nodes()[r->second], cur, dims, l)) return false;
      di = r->second;
      return true;
    };
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& first = g.nodes()[i];
      if (claimed[i] || first.outputs.size() != 1) continue;
      ++work().patterns_tried;
      Chain c;
      std::vector<size_t> at{i};
      std::vector<int64_t> dims;
      Link l;
      size_t di = 0;
      if (const ir::ValueType* xt = first.inputs.empty() ? nullptr : static_float(g, first.inputs[0]);
          xt && qdq_pair(i, first.inputs[0], *xt->dims, l, di)) {
        // A chain that starts at a quantize-dequantize pair (a QDQ model's after a float MatMul).
        dims = *xt->dims;
        c = Chain{first.inputs[0], g.nodes()[di].outputs[0], {l}, {first.id.value, g.nodes()[di].id.value}};
        at.push_back(di);
      } else {
        const ir::ValueType* ot = static_float(g, first.outputs[0]);
        if (!ot) continue;
        // A Cast to f32 is left to its readers, which read its bf16 input (the chain it would start
        // could take a reader another chain would grow into).
        if (!widened_from(g, prod, first.outputs[0]).empty()) continue;
        dims = *ot->dims;
        // The chain's input: the operand with the output's shape; of two, one the loop can compute
        // from a narrower value with an operand (the other, a Cast of bf16, is read as bf16 anyway).
        std::string x;
        for (const auto& in : first.inputs)
          if (const ir::ValueType* t = static_float(g, in); t && *t->dims == dims) {
            if (x.empty()) x = in;
            if (in != x && recompute_of(g, prod, in).links.size() == 2) x = in;
          }
        if (x.empty()) continue;
        if (!as_link(g, first, x, dims, l, &prod)) continue;
        c = Chain{x, first.outputs[0], {l}, {first.id.value}};
        // An f32 input that is a Cast of bf16 (maybe with an operand): compute it from the bf16 value
        // in the loop (its node stays for other readers, if any; a chain of one op and such a Cast
        // is worth fusing).
        if (Recompute rc = recompute_of(g, prod, x); !rc.source.empty() && first.op_type != "Cast") {
          c.x = rc.source;
          c.links.insert(c.links.begin(), rc.links.begin(), rc.links.end());
        }
      }
      for (;;) {
        if (uses.of(c.out) != 1 || !uses.only_plain(c.out)) break;
        auto r = reader.find(c.out);
        if (r == reader.end() || claimed[r->second]) break;
        const ir::Node& n = g.nodes()[r->second];
        if (qdq_pair(r->second, c.out, dims, l, di)) {
          work().nodes_visited += 2;
          c.links.push_back(l);
          c.ids.push_back(n.id.value);
          c.ids.push_back(g.nodes()[di].id.value);
          at.push_back(r->second);
          at.push_back(di);
          c.out = g.nodes()[di].outputs[0];
          continue;
        }
        // Nor does a chain grow into one: its readers may read its bf16 input in its place, which
        // must stay a written value.
        if (!widened_from(g, prod, n.outputs.empty() ? "" : n.outputs[0]).empty()) break;
        if (!as_link(g, n, c.out, dims, l, &prod)) break;
        ++work().nodes_visited;
        c.links.push_back(l);
        c.ids.push_back(n.id.value);
        at.push_back(r->second);
        c.out = n.outputs[0];
      }
      // One quantize-dequantize pair alone is worth a loop too (two passes and a byte tensor less).
      const bool lone_pair = c.ids.size() == 2 && c.links.size() == 1;
      if ((c.links.size() < 2 && !lone_pair) ||
          (c.links.size() == 2 && c.links[0].op == "Cast" && c.links[1].op == "Cast"))
        continue;
      if (!take_rewrite()) {
        refused = true;
        break;
      }
      for (size_t k : at) claimed[k] = 1;
      chains.push_back(std::move(c));
    }
    // All fused nodes are made while the node pointers are valid, then swapped in at once.
    std::unordered_map<uint64_t, const ir::Node*> by_id;
    for (const auto& n : g.nodes()) by_id.emplace(n.id.value, &n);
    std::vector<NodeGroup> groups;
    for (const Chain& c : chains) {
      std::vector<const ir::Node*> nodes;
      for (uint64_t id : c.ids) nodes.push_back(by_id.at(id));
      NodeGroup grp;
      grp.ids.insert(c.ids.begin(), c.ids.end());
      grp.node = chain_node(g, c.x, c.links, nodes, c.out);
      groups.push_back(std::move(grp));
    }
    replace_node_groups(g, std::move(groups));
    any = any || !chains.empty();
    return !chains.empty() && !refused;
  }
};

}  // namespace

PassPtr make_fuse_elementwise_pass() { return std::make_unique<FuseElementwise>(); }

}  // namespace ms::compiler
