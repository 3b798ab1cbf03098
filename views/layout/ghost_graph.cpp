#include "views/layout/ghost_graph.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace ms::views {

GhostGraph ghost_graph(const ir::Graph& before, const ir::Graph& after, const std::vector<ir::NodeId>& removed) {
  auto g = std::make_shared<ir::Graph>(after);  // shallow for subgraphs: they are only read
  GhostGraph out;
  std::unordered_set<uint64_t> wanted;
  for (auto id : removed)
    if (!after.find_node(id)) wanted.insert(id.value);
  // Output names of ghosts that `after` still produces are renamed, in the ghosts' readers too.
  std::unordered_map<std::string, std::string> renamed;
  for (const ir::Node& n : before.nodes()) {
    if (!wanted.count(n.id.value)) continue;
    for (const auto& o : n.outputs)
      if (!o.empty() && after.has_value(o)) renamed[o] = o + " (removed)";
  }
  for (const ir::Node& n : before.nodes()) {
    if (!wanted.count(n.id.value)) continue;
    ir::Node ghost = n;
    for (auto& in : ghost.inputs) {
      if (in.empty()) continue;
      if (auto r = renamed.find(in); r != renamed.end()) {
        in = r->second;
        continue;
      }
      if (!g->has_value(in))
        if (const ir::Value* v = before.value(in)) g->add_value(*v);
    }
    for (auto& o : ghost.outputs)
      if (auto r = renamed.find(o); r != renamed.end()) o = r->second;
    ir::Node& added = g->add_node(std::move(ghost));
    for (size_t i = 0; i < added.outputs.size() && i < n.outputs.size(); ++i) {
      if (added.outputs[i].empty()) continue;
      ir::Value* v = g->value(added.outputs[i]);
      const ir::Value* old = before.value(n.outputs[i]);
      if (v && old) v->type = old->type;
    }
    out.ghosts.insert(added.id.value);
  }
  // Readers in `before` of a ghost's outputs that are still live.
  std::unordered_map<std::string, ir::NodeId> ghost_output;
  for (const ir::Node& n : before.nodes())
    if (wanted.count(n.id.value))
      for (const auto& o : n.outputs)
        if (!o.empty()) ghost_output[o] = n.id;
  for (const ir::Node& n : before.nodes()) {
    if (wanted.count(n.id.value) || !after.find_node(n.id)) continue;
    for (const auto& in : n.inputs)
      if (auto it = ghost_output.find(in); it != ghost_output.end()) out.links.emplace_back(it->second, n.id);
  }
  out.graph = std::move(g);
  return out;
}

}  // namespace ms::views
