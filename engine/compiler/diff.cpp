#include "engine/compiler/diff.h"

#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace ms::compiler {
namespace {

// Same op, attributes (as dumped; a subgraph counts as the same attribute, its nodes are compared
// one by one), inputs and outputs.
bool same_node(const ir::Node& a, const ir::Node& b) {
  if (a.op_type != b.op_type || a.domain != b.domain || a.inputs != b.inputs || a.outputs != b.outputs) return false;
  if (a.attrs.size() != b.attrs.size()) return false;
  if (a.attrs.empty()) return true;  // most nodes: no one-node dumps to compare
  // Attributes compare through a one-node dump: cheap and covers every kind.
  auto attr_text = [](const ir::Node& n) {
    ir::Graph g;
    ir::Node copy = n;
    copy.id = ir::NodeId{1};
    copy.origins = {copy.id};
    copy.name.clear();
    for (auto& [k, a] : copy.attrs)
      if (a.is_graph()) a = ir::Attribute(std::string("<subgraph>"));
    g.add_node(copy);
    return ir::dump_text(g);
  };
  return attr_text(a) == attr_text(b);
}

// The graph's nodes and those of its subgraphs (If branches, Loop bodies), outer ones first.
std::vector<const ir::Node*> all_nodes(const ir::Graph& g) {
  std::vector<const ir::Node*> out;
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& x) {
    for (const auto& n : x.nodes()) {
      out.push_back(&n);
      for (const auto& sub : n.subgraphs()) walk(*sub);
    }
  };
  walk(g);
  return out;
}

}  // namespace

GraphDiff diff_graphs(const ir::Graph& before_graph, const ir::Graph& after_graph) {
  GraphDiff d;
  const std::vector<const ir::Node*> before = all_nodes(before_graph), after = all_nodes(after_graph);
  std::unordered_map<uint64_t, const ir::Node*> old_nodes;
  for (const auto* n : before) old_nodes.emplace(n->id.value, n);
  std::set<uint64_t> present;
  for (const auto* n : after) present.insert(n->id.value);
  // An original id is covered when any node of `before` carrying it in its origins is gone and a new
  // node of `after` carries it: map origin id -> node of `before`.
  std::unordered_map<uint64_t, uint64_t> before_by_origin;
  for (const auto* n : before)
    for (const auto& o : n->origins) before_by_origin.emplace(o.value, n->id.value);
  std::set<uint64_t> covered;
  for (const auto* np : after) {
    const ir::Node& n = *np;
    auto it = old_nodes.find(n.id.value);
    if (it != old_nodes.end()) {
      if (!same_node(*it->second, n)) d.rewritten.push_back(n.id);
      continue;
    }
    FusedFrom f{n.id, {}};
    std::set<uint64_t> seen;
    for (const auto& o : n.origins) {
      auto b = before_by_origin.find(o.value);
      if (b == before_by_origin.end() || present.count(b->second) || !seen.insert(b->second).second) continue;
      f.from.push_back(ir::NodeId{b->second});
      covered.insert(b->second);
    }
    if (f.from.empty())
      d.added.push_back(n.id);
    else
      d.fused.push_back(std::move(f));
  }
  for (const auto* n : before)
    if (!present.count(n->id.value) && !covered.count(n->id.value)) d.removed.push_back(n->id);
  return d;
}

std::string diff_to_json(const GraphDiff& d) {
  std::ostringstream os;
  auto ids = [&](const std::vector<ir::NodeId>& v) {
    os << '[';
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i].value;
    os << ']';
  };
  os << "{\"added\":";
  ids(d.added);
  os << ",\"removed\":";
  ids(d.removed);
  os << ",\"rewritten\":";
  ids(d.rewritten);
  os << ",\"fused\":[";
  for (size_t i = 0; i < d.fused.size(); ++i) {
    os << (i ? "," : "") << "{\"node\":" << d.fused[i].node.value << ",\"from\":";
    ids(d.fused[i].from);
    os << '}';
  }
  os << "]}";
  return os.str();
}

}  // namespace ms::compiler
