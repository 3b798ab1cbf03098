#include "views/layout/graph_model.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>

namespace ms::views {

std::vector<std::string> scope_parts(const std::string& name) {
  // Exporters write scopes with '/' ("/layer1/layer1.0/conv1/Conv"); the builder names a node by
  // its module path with '.' ("layer1.0.conv1"). Dots count only where no slash is present.
  const char sep = name.find('/') != std::string::npos ? '/' : '.';
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= name.size()) {
    size_t cut = name.find(sep, start);
    if (cut == std::string::npos) cut = name.size();
    if (cut > start) {
      std::string part = name.substr(start, cut - start);
      // "layers.0" reads better than a group titled "0": a list index keeps its list's name.
      const bool index = sep == '.' && !parts.empty() && part.find_first_not_of("0123456789") == std::string::npos;
      parts.push_back(index ? parts.back() + "." + part : part);
    }
    start = cut + 1;
  }
  if (!parts.empty()) parts.pop_back();  // the node's own name
  return parts;
}

namespace {

std::string last_part(const std::string& name) {
  const size_t slash = name.find_last_of('/');
  if (slash != std::string::npos) return name.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || dot + 1 == name.size()) return name;
  const std::string tail = name.substr(dot + 1);
  return tail.find_first_not_of("0123456789") == std::string::npos ? name : tail;
}

struct Builder {
  GraphModel& m;
  std::map<std::string, int> by_path;

  int group(int parent, const std::string& part, bool subgraph) {
    const std::string path = m.groups[parent].path + "/" + part;
    auto it = by_path.find(path);
    if (it != by_path.end()) return it->second;
    ModelGroup g;
    g.path = path;
    g.title = part;
    g.parent = parent;
    g.subgraph = subgraph;
    m.groups.push_back(g);
    const int idx = static_cast<int>(m.groups.size()) - 1;
    m.groups[parent].groups.push_back(idx);
    by_path[path] = idx;
    return idx;
  }

  void walk(const ir::Graph& g, int context) {
    for (const ir::Node& node : g.nodes()) {
      int grp = context;
      for (const auto& part : scope_parts(node.name)) grp = group(grp, part, false);
      ModelNode mn;
      mn.node = &node;
      mn.graph = &g;
      mn.group = grp;
      mn.short_name = last_part(node.name);
      const int idx = static_cast<int>(m.nodes.size());
      m.nodes.push_back(mn);
      m.by_id[node.id.value] = idx;
      for (const auto& out : node.outputs)
        if (!out.empty()) m.producer.emplace(out, idx);  // outer definitions come first and win
      for (const auto& [key, attr] : node.attrs) {
        std::vector<ir::Attribute::GraphPtr> subs;
        if (auto* one = attr.get_if<ir::Attribute::GraphPtr>()) subs.push_back(*one);
        if (auto* many = attr.get_if<std::vector<ir::Attribute::GraphPtr>>()) subs = *many;
        for (const auto& sub : subs) {
          if (!sub) continue;
          const std::string label =
              node.op_type + " " + (node.name.empty() ? "#" + std::to_string(node.id.value) : mn.short_name);
          const int sg = group(grp, label + ": " + key, true);
          m.groups[static_cast<size_t>(sg)].owner = idx;
          m.enclosing[sub.get()] = &g;
          walk(*sub, sg);
        }
      }
    }
  }
};

// Drops groups that hold fewer than two drawn nodes, and wrapper groups that hold nothing but one
// other group, so the tree shows only the scopes that matter.
void simplify(GraphModel& m) {
  const int n = static_cast<int>(m.groups.size());
  std::vector<int> direct(n, 0), total(n, 0);
  for (const auto& node : m.nodes)
    if (!node.folded) ++direct[node.group];
  // Children have larger indices than their parents: accumulate bottom-up.
  for (int g = n - 1; g >= 0; --g) {
    total[g] += direct[g];
    if (m.groups[g].parent >= 0) total[m.groups[g].parent] += total[g];
  }
  // Edges inside each group's subtree: a scope whose nodes never feed each other (one reused
  // activation module called at two places) is a name, not a unit of the graph; drawing it as a
  // frame would tie distant nodes together.
  std::vector<int> depth(n, 0), internal(n, 0);
  for (int g = 1; g < n; ++g) depth[g] = depth[m.groups[g].parent] + 1;
  for (const auto& node : m.nodes) {
    if (node.folded) continue;
    for (const auto& in : node.node->inputs) {
      auto p = m.producer.find(in);
      if (p == m.producer.end() || m.nodes[static_cast<size_t>(p->second)].folded) continue;
      int a = node.group, b = m.nodes[static_cast<size_t>(p->second)].group;
      while (a != b) {
        if (depth[a] >= depth[b])
          a = m.groups[a].parent;
        else
          b = m.groups[b].parent;
      }
      ++internal[a];
    }
  }
  for (int g = n - 1; g > 0; --g) internal[m.groups[g].parent] += internal[g];
  std::vector<bool> keep(n, false);
  keep[0] = true;
  for (int g = 1; g < n; ++g) keep[g] = m.groups[g].subgraph || (total[g] >= 2 && internal[g] > 0);
  std::vector<std::string> prefix(n);
  for (int g = 1; g < n; ++g) {
    if (!keep[g] || m.groups[g].subgraph || direct[g] != 0) continue;
    int kept_children = 0, only = -1;
    for (int c : m.groups[g].groups)
      if (keep[c]) ++kept_children, only = c;
    if (kept_children == 1 && total[only] == total[g]) {
      keep[g] = false;
      prefix[only] = (prefix[g].empty() ? m.groups[g].title : prefix[g]) + "/";
    }
  }
  std::vector<int> remap(n, -1);
  std::vector<ModelGroup> out;
  std::function<int(int)> kept_ancestor = [&](int g) { return keep[g] ? remap[g] : kept_ancestor(m.groups[g].parent); };
  for (int g = 0; g < n; ++g) {
    if (!keep[g]) continue;
    ModelGroup ng = m.groups[g];
    if (!prefix[g].empty()) ng.title = prefix[g] + ng.title;
    ng.groups.clear();
    ng.nodes.clear();
    ng.parent = g == 0 ? -1 : kept_ancestor(m.groups[g].parent);
    ng.total_nodes = total[g];
    remap[g] = static_cast<int>(out.size());
    if (ng.parent >= 0) out[ng.parent].groups.push_back(remap[g]);
    out.push_back(std::move(ng));
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    m.nodes[i].group = kept_ancestor(m.nodes[i].group);
    if (!m.nodes[i].folded) out[m.nodes[i].group].nodes.push_back(static_cast<int>(i));
  }
  m.groups = std::move(out);
}

// A graph without name scopes (or a scope holding thousands of ops) has nothing to collapse; cut
// runs of consecutive nodes into groups of kChunk so a huge flat graph still opens collapsed.
void chunk_long_groups(GraphModel& m) {
  constexpr size_t kLong = 400, kChunk = 100;
  const size_t n = m.groups.size();
  for (size_t g = 0; g < n; ++g) {
    if (m.groups[g].nodes.size() <= kLong) continue;
    std::vector<int> nodes = std::move(m.groups[g].nodes);
    m.groups[g].nodes.clear();
    for (size_t start = 0; start < nodes.size(); start += kChunk) {
      const size_t end = std::min(nodes.size(), start + kChunk);
      ModelGroup c;
      c.title = "nodes " + std::to_string(start + 1) + "–" + std::to_string(end);
      c.path = m.groups[g].path + "/#" + std::to_string(start);
      c.parent = static_cast<int>(g);
      c.nodes.assign(nodes.begin() + static_cast<std::ptrdiff_t>(start),
                     nodes.begin() + static_cast<std::ptrdiff_t>(end));
      c.total_nodes = static_cast<int>(end - start);
      const int idx = static_cast<int>(m.groups.size());
      for (int node : c.nodes) m.nodes[static_cast<size_t>(node)].group = idx;
      m.groups[g].groups.push_back(idx);
      m.groups.push_back(std::move(c));
    }
  }
}

}  // namespace

std::shared_ptr<const GraphModel> GraphModel::build(std::shared_ptr<const ir::Graph> graph,
                                                    const std::vector<std::pair<ir::NodeId, ir::NodeId>>& links,
                                                    const std::vector<Tensor>& not_kept) {
  auto m = std::make_shared<GraphModel>();
  m->graph = graph;
  for (const Tensor& t : not_kept)
    if (t.buffer()) m->unknown_buffers.insert(t.buffer().get());
  ModelGroup root;
  root.title = graph->name;
  m->groups.push_back(root);
  Builder b{*m, {}};
  b.walk(*graph, 0);

  // Fold initializers and Constant nodes into their readers.
  std::unordered_set<std::string> graph_outputs(graph->outputs.begin(), graph->outputs.end());
  std::unordered_map<std::string, int> consumers;
  for (const auto& n : m->nodes)
    for (const auto& in : n.node->inputs) ++consumers[in];
  // A node folds when it computes only from constants (Constant itself, or an Identity/Cast/Reshape
  // of an initializer, as exporters emit for shared weights): it is data, not a step.
  for (auto& n : m->nodes) {
    const ir::Node& node = *n.node;
    if (node.outputs.size() != 1 || graph_outputs.count(node.outputs[0]) || consumers[node.outputs[0]] == 0) continue;
    if (node.has_subgraph()) continue;
    bool constant = node.op_type == "Constant" && node.inputs.empty();
    if (!node.inputs.empty()) {
      constant = true;
      for (const auto& in : node.inputs) {
        if (in.empty()) continue;
        auto p = m->producer.find(in);
        const ir::Value* v = m->resolve(n.graph, in);
        const bool is_const =
            p != m->producer.end() ? m->nodes[static_cast<size_t>(p->second)].folded : (v && v->is_initializer());
        constant &= is_const;
      }
    }
    n.folded = constant;
  }
  for (auto& n : m->nodes) {
    for (const auto& in : n.node->inputs) {
      if (in.empty()) continue;
      const ir::Value* v = m->resolve(n.graph, in);
      auto p = m->producer.find(in);
      const bool folded_const = p != m->producer.end() && m->nodes[p->second].folded;
      if ((v && v->is_initializer() && p == m->producer.end()) || folded_const) n.weights.push_back(in);
    }
  }
  for (const auto& in : graph->inputs) {
    const ir::Value* v = graph->value(in);
    if (!v || !v->is_initializer()) m->terminals.push_back({in, true});
  }
  for (const auto& out : graph->outputs) m->terminals.push_back({out, false});
  simplify(*m);
  chunk_long_groups(*m);
  m->drawn_nodes = m->groups[0].total_nodes;
  for (const auto& [from, to] : links) {
    const int a = m->index_of(from), b = m->index_of(to);
    if (a >= 0 && b >= 0 && a != b) m->links.emplace_back(a, b);
  }
  return m;
}

const ir::Value* GraphModel::value(const ModelNode& n, const std::string& name) const {
  return resolve(n.graph ? n.graph : graph.get(), name);
}

const ir::Value* GraphModel::resolve(const ir::Graph* g, const std::string& name) const {
  while (g) {
    if (const ir::Value* v = g->value(name)) return v;
    auto it = enclosing.find(g);
    g = it == enclosing.end() ? nullptr : it->second;
  }
  return nullptr;
}

std::vector<int> GraphModel::ancestors(int g) const {
  std::vector<int> chain;
  for (int x = g; x >= 0; x = groups[x].parent) chain.push_back(x);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

const Tensor* GraphModel::constant(const ModelNode& reader, std::string name) const {
  for (int hops = 0; hops < 16; ++hops) {
    const ir::Value* v = value(reader, name);
    if (v && v->constant) return &*v->constant;
    auto p = producer.find(name);
    if (p == producer.end()) return nullptr;
    const ir::Node& n = *nodes[static_cast<size_t>(p->second)].node;
    if (n.op_type == "Constant") return n.attr_tensor("value");
    if (n.inputs.empty() || n.inputs[0].empty()) return nullptr;
    name = n.inputs[0];  // Identity/Cast/Reshape of a weight: show the weight
  }
  return nullptr;
}

int GraphModel::index_of(ir::NodeId id) const {
  auto it = by_id.find(id.value);
  return it == by_id.end() ? -1 : it->second;
}

}  // namespace ms::views
