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
    std::vector<size_t> at;     // the nodes' places in the graph
    std::vector<int64_t> dims;  // the chain value's shape
  };

  // What one scan knows of the graph: each value's uses, producer and (last) reader, and the nodes
  // some chain has taken.
  struct Scan {
    explicit Scan(const ir::Graph& g) : uses(compute_uses(g)), prod(producer_index(g)), claimed(g.nodes().size(), 0) {
      for (size_t i = 0; i < g.nodes().size(); ++i)
        for (const auto& in : g.nodes()[i].inputs)
          if (!in.empty()) reader[in] = i;
    }
    const Uses uses;
    const Producers prod;
    std::unordered_map<std::string, size_t> reader;
    std::vector<char> claimed;
  };

  // A QDQ model's QuantizeLinear at `qi` on the chain value `cur` whose only reader is its
  // DequantizeLinear: one link for the pair (elementwise_chain.h), the DequantizeLinear at `di`.
  static bool qdq_pair(const ir::Graph& g, const Scan& s, size_t qi, const std::string& cur,
                       const std::vector<int64_t>& dims, Link& l, size_t& di) {
    const ir::Node& q = g.nodes()[qi];
    if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.outputs.size() != 1) return false;
    const std::string& qo = q.outputs[0];
    if (s.uses.of(qo) != 1 || !s.uses.only_plain(qo)) return false;
    auto r = s.reader.find(qo);
    if (r == s.reader.end() || s.claimed[r->second] || !qdq_link(g, q, g.nodes()[r->second], cur, dims, l))
      return false;
    di = r->second;
    return true;
  }

  // The chain's first link from node i (its input the operand of the output's shape), or false.
  static bool start_chain(const ir::Graph& g, const Scan& s, size_t i, Chain& c) {
    const ir::Node& first = g.nodes()[i];
    Link l;
    size_t di = 0;
    c.at = {i};
    if (const ir::ValueType* xt = first.inputs.empty() ? nullptr : static_float(g, first.inputs[0]);
        xt && qdq_pair(g, s, i, first.inputs[0], *xt->dims, l, di)) {
      // A chain that starts at a quantize-dequantize pair (a QDQ model's after a float MatMul).
      c.dims = *xt->dims;
      c.x = first.inputs[0];
      c.out = g.nodes()[di].outputs[0];
      c.links = {l};
      c.ids = {first.id.value, g.nodes()[di].id.value};
      c.at.push_back(di);
      return true;
    }
    const ir::ValueType* ot = static_float(g, first.outputs[0]);
    if (!ot) return false;
    // A Cast to f32 is left to its readers, which read its bf16 input (the chain it would start
    // could take a reader another chain would grow into).
    if (!widened_from(g, s.prod, first.outputs[0]).empty()) return false;
    c.dims = *ot->dims;
    // The chain's input: the operand with the output's shape; of two, one the loop can compute
    // from a narrower value with an operand (the other, a Cast of bf16, is read as bf16 anyway).
    std::string x;
    for (const auto& in : first.inputs)
      if (const ir::ValueType* t = static_float(g, in); t && *t->dims == c.dims) {
        if (x.empty()) x = in;
        if (in != x && recompute_of(g, s.prod, in).links.size() == 2) x = in;
      }
    if (x.empty() || !as_link(g, first, x, c.dims, l, &s.prod)) return false;
    c.x = x;
    c.out = first.outputs[0];
    c.links = {l};
    c.ids = {first.id.value};
    // An f32 input that is a Cast of bf16 (maybe with an operand): compute it from the bf16 value
    // in the loop (its node stays for other readers, if any; a chain of one op and such a Cast
    // is worth fusing).
    if (Recompute rc = recompute_of(g, s.prod, x); !rc.source.empty() && first.op_type != "Cast") {
      c.x = rc.source;
      c.links.insert(c.links.begin(), rc.links.begin(), rc.links.end());
    }
    return true;
  }

  // Grows the chain through the sole readers of its value while they make links.
  static void grow_chain(const ir::Graph& g, const Scan& s, Chain& c) {
    Link l;
    size_t di = 0;
    for (;;) {
      if (s.uses.of(c.out) != 1 || !s.uses.only_plain(c.out)) break;
      auto r = s.reader.find(c.out);
      if (r == s.reader.end() || s.claimed[r->second]) break;
      const ir::Node& n = g.nodes()[r->second];
      if (qdq_pair(g, s, r->second, c.out, c.dims, l, di)) {
        work().nodes_visited += 2;
        c.links.push_back(l);
        c.ids.push_back(n.id.value);
        c.ids.push_back(g.nodes()[di].id.value);
        c.at.push_back(r->second);
        c.at.push_back(di);
        c.out = g.nodes()[di].outputs[0];
        continue;
      }
      // Nor does a chain grow into one: its readers may read its bf16 input in its place, which
      // must stay a written value.
      if (!widened_from(g, s.prod, n.outputs.empty() ? "" : n.outputs[0]).empty()) break;
      if (!as_link(g, n, c.out, c.dims, l, &s.prod)) break;
      ++work().nodes_visited;
      c.links.push_back(l);
      c.ids.push_back(n.id.value);
      c.at.push_back(r->second);
      c.out = n.outputs[0];
    }
  }

  // Worth a loop: two links or more (not just two Casts), or one quantize-dequantize pair (two
  // passes and a byte tensor less).
  static bool worth_fusing(const Chain& c) {
    if (c.links.size() == 1) return c.ids.size() == 2;
    return !(c.links.size() == 2 && c.links[0].op == "Cast" && c.links[1].op == "Cast");
  }

  // One scan finds every chain (a node joins at most one), then all are fused: training graphs have
  // hundreds of chains, and rescanning the graph after each fusion made this pass quadratic.
  bool step(ir::Graph& g, bool& any) {
    Scan s(g);
    std::vector<Chain> chains;
    bool refused = false;
    work().nodes_visited += 2 * g.nodes().size();
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (s.claimed[i] || g.nodes()[i].outputs.size() != 1) continue;
      ++work().patterns_tried;
      Chain c;
      if (!start_chain(g, s, i, c)) continue;
      grow_chain(g, s, c);
      if (!worth_fusing(c)) continue;
      if (!take_rewrite()) {
        refused = true;
        break;
      }
      for (size_t k : c.at) s.claimed[k] = 1;
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
