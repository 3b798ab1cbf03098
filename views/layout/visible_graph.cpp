#include "views/layout/visible_graph.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

namespace ms::views {

namespace {

// Rough text metrics of the view's fonts, in points: Graphviz only needs box sizes, the view draws
// the text (eliding what does not fit).
constexpr double kCharWidth = 6.4;
constexpr double kLineHeight = 14.0;

std::string join_ints(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [&](int64_t y) { return y == x; });
}

std::string key_attributes(const ir::Node& n) {
  std::vector<std::string> parts;
  auto ints = [&](const char* key) { return n.attr_ints(key); };
  if (auto k = ints("kernel_shape"); !k.empty()) parts.push_back(join_ints(k, "×"));
  if (auto s = ints("strides"); !s.empty() && !all_equal(s, 1)) parts.push_back("/" + join_ints(s, ","));
  if (auto d = ints("dilations"); !d.empty() && !all_equal(d, 1)) parts.push_back("d" + join_ints(d, ","));
  if (n.has_attr("group") && n.attr_int("group", 1) > 1) parts.push_back("g" + std::to_string(n.attr_int("group", 1)));
  if (auto p = ints("perm"); !p.empty()) parts.push_back("perm " + join_ints(p, ","));
  if (n.has_attr("axis")) parts.push_back("axis " + std::to_string(n.attr_int("axis", 0)));
  if (auto a = ints("axes"); !a.empty()) parts.push_back("axes " + join_ints(a, ","));
  if (n.has_attr("to")) parts.push_back("to " + std::to_string(n.attr_int("to", 0)));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "  ") + p;
  return s;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void size_item(VisibleItem& it) {
  double w = 0;
  for (size_t i = 0; i < it.lines.size(); ++i) {
    // The first line is bold and larger.
    const double per_char = i == 0 ? kCharWidth * 1.18 : kCharWidth;
    w = std::max(w, static_cast<double>(std::min<size_t>(utf8_length(it.lines[i]), 36)) * per_char + 24);
  }
  it.width = std::max(it.kind == VisibleItem::Kind::Terminal ? 90.0 : 96.0, w);
  it.height = static_cast<double>(std::max<size_t>(it.lines.size(), 1)) * kLineHeight + 12;
  if (it.kind == VisibleItem::Kind::Group) it.height += 6;  // room for the stacked-box look
}

// Outermost collapsed group on the way from the root to g, or -1.
int collapsed_ancestor(const GraphModel& m, const std::set<int>& collapsed, int g) {
  if (collapsed.empty()) return -1;
  for (int x : m.ancestors(g))
    if (x != 0 && collapsed.count(x)) return x;
  return -1;
}

}  // namespace

std::vector<std::string> node_lines(const GraphModel& m, int node) {
  const ModelNode& mn = m.nodes[node];
  std::vector<std::string> lines{mn.node->op_type};
  if (!mn.short_name.empty() && mn.short_name != mn.node->op_type) lines.push_back(mn.short_name);
  std::string attrs = key_attributes(*mn.node);
  if (!mn.weights.empty()) {
    if (const Tensor* w = m.constant(mn, mn.weights[0])) {
      char scalar[32] = "(not kept)";  // a session file kept no value: never show its stand-in zero
      if (w->numel() == 1 && m.values_known(*w)) std::snprintf(scalar, sizeof scalar, "%g", w->at_double(0));
      const std::string shape = w->numel() == 1 ? std::string("= ") + scalar : "W " + join_ints(w->shape(), "×");
      attrs = attrs.empty() ? shape : shape + "  " + attrs;
    }
  }
  if (!attrs.empty()) lines.push_back(attrs);
  return lines;
}

int VisibleGraph::item_index(const std::string& key) const {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].key == key) return static_cast<int>(i);
  return -1;
}

std::string visible_key(const GraphModel& m, const std::set<int>& collapsed, int node) {
  const int g = collapsed_ancestor(m, collapsed, m.nodes[node].group);
  return g >= 0 ? "g" + std::to_string(g) : "n" + std::to_string(node);
}

VisibleGraph make_visible(const GraphModel& m, const std::set<int>& collapsed, const VisibleOptions& opts) {
  VisibleGraph v;
  std::vector<std::string> key_of(m.nodes.size());
  // Clusters and collapsed boxes, parents first.
  std::vector<int> group_shown(m.groups.size(), 0);  // 0 hidden, 1 cluster, 2 collapsed box
  group_shown[0] = 1;
  for (size_t g = 1; g < m.groups.size(); ++g) {
    const int parent = m.groups[g].parent;
    if (group_shown[parent] != 1) continue;
    group_shown[g] = collapsed.count(static_cast<int>(g)) ? 2 : 1;
    if (group_shown[g] == 1) {
      v.clusters.push_back(static_cast<int>(g));
    } else {
      VisibleItem it;
      it.kind = VisibleItem::Kind::Group;
      it.index = static_cast<int>(g);
      it.key = "g" + std::to_string(g);
      it.cluster = parent;
      it.lines = {m.groups[g].title, std::to_string(m.groups[g].total_nodes) + " nodes"};
      size_item(it);
      v.items.push_back(std::move(it));
    }
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].folded) continue;
    key_of[i] = visible_key(m, collapsed, static_cast<int>(i));
    if (key_of[i][0] == 'g') continue;
    VisibleItem it;
    it.index = static_cast<int>(i);
    it.key = key_of[i];
    it.cluster = m.nodes[i].group;
    it.lines = node_lines(m, static_cast<int>(i));
    size_item(it);
    v.items.push_back(std::move(it));
  }
  std::map<std::string, std::string> terminal_key;
  for (size_t t = 0; t < m.terminals.size(); ++t) {
    VisibleItem it;
    it.kind = VisibleItem::Kind::Terminal;
    it.index = static_cast<int>(t);
    it.key = "t" + std::to_string(t);
    const ir::Value* val = m.graph->value(m.terminals[t].value);
    it.lines = {m.terminals[t].value};
    if (val) it.lines.push_back(val->type.to_string());
    size_item(it);
    if (m.terminals[t].input) terminal_key[m.terminals[t].value] = it.key;
    v.items.push_back(std::move(it));
  }
  // Edges, deduplicated per (from, to) in first-seen order.
  std::map<std::pair<std::string, std::string>, size_t> edge_at;
  std::set<std::pair<std::string, std::string>> labelled;
  auto add_edge = [&](const std::string& from, const std::string& to, const std::string& value, const ir::Value* val) {
    if (from == to) return;
    auto [it, fresh] = edge_at.emplace(std::make_pair(from, to), v.edges.size());
    if (!fresh) {
      ++v.edges[it->second].values;
      return;
    }
    VisibleEdge e;
    e.from = from;
    e.to = to;
    e.value = value;
    // A value read by several nodes is labelled once, on its first edge: the others repeat it.
    if (opts.edge_labels && val && val->type.dtype != DType::Undefined && labelled.insert({from, value}).second)
      e.label = val->type.to_string();
    v.edges.push_back(std::move(e));
  };
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].folded) continue;
    const ModelNode& mn = m.nodes[i];
    for (const auto& in : mn.node->inputs) {
      if (in.empty()) continue;
      auto p = m.producer.find(in);
      if (p != m.producer.end()) {
        if (m.nodes[p->second].folded) continue;
        add_edge(key_of[p->second], key_of[i], in, m.value(mn, in));
      } else if (auto t = terminal_key.find(in); t != terminal_key.end()) {
        add_edge(t->second, key_of[i], in, m.value(mn, in));
      }
    }
  }
  for (size_t t = 0; t < m.terminals.size(); ++t) {
    if (m.terminals[t].input) continue;
    auto p = m.producer.find(m.terminals[t].value);
    if (p != m.producer.end())
      add_edge(key_of[p->second], "t" + std::to_string(t), m.terminals[t].value,
               m.graph->resolve(m.terminals[t].value));
  }
  for (const auto& [a, b] : m.links)
    if (!key_of[static_cast<size_t>(a)].empty() && !key_of[static_cast<size_t>(b)].empty())
      add_edge(key_of[static_cast<size_t>(a)], key_of[static_cast<size_t>(b)], "", nullptr);
  for (auto& e : v.edges)
    if (e.values > 1 && !e.label.empty()) e.label += " +" + std::to_string(e.values - 1);
  // Tie each shown If/Loop body to its node, so the layout puts the body next to it.
  std::function<int(int)> first_node = [&](int g) {
    for (int n : m.groups[static_cast<size_t>(g)].nodes) return n;
    for (int c : m.groups[static_cast<size_t>(g)].groups)
      if (int n = first_node(c); n >= 0) return n;
    return -1;
  };
  for (size_t g = 1; g < m.groups.size(); ++g) {
    const ModelGroup& grp = m.groups[g];
    if (!grp.subgraph || grp.owner < 0 || group_shown[g] == 0 || key_of[static_cast<size_t>(grp.owner)].empty())
      continue;
    std::string to = group_shown[g] == 2 ? "g" + std::to_string(g) : "";
    if (to.empty()) {
      const int n = first_node(static_cast<int>(g));
      if (n < 0 || key_of[static_cast<size_t>(n)].empty()) continue;
      to = key_of[static_cast<size_t>(n)];
    }
    const std::string& from = key_of[static_cast<size_t>(grp.owner)];
    if (from == to) continue;
    VisibleEdge e;
    e.from = from;
    e.to = to;
    e.nesting = true;
    v.edges.push_back(std::move(e));
  }
  return v;
}

std::set<int> default_collapsed(const GraphModel& m, int budget) {
  std::set<int> collapsed;
  if (m.drawn_nodes + static_cast<int>(m.terminals.size()) <= budget) return collapsed;
  for (size_t g = 1; g < m.groups.size(); ++g) collapsed.insert(static_cast<int>(g));
  int visible = static_cast<int>(m.groups[0].nodes.size() + m.groups[0].groups.size() + m.terminals.size());
  std::vector<int> queue(m.groups[0].groups.begin(), m.groups[0].groups.end());
  for (size_t q = 0; q < queue.size(); ++q) {
    const ModelGroup& g = m.groups[queue[q]];
    const int grow = static_cast<int>(g.nodes.size() + g.groups.size()) - 1;
    if (visible + grow > budget) continue;
    visible += grow;
    collapsed.erase(queue[q]);
    queue.insert(queue.end(), g.groups.begin(), g.groups.end());
  }
  return collapsed;
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string to_dot(const GraphModel& m, const VisibleGraph& v, const DotOptions& opts) {
  std::ostringstream os;
  char num[64];
  auto inches = [&](double pt) {
    std::snprintf(num, sizeof num, "%.3f", pt / 72.0);
    return std::string(num);
  };
  os << "digraph modescope {\n"
     << "  graph [rankdir=" << opts.rankdir
     << " newrank=true nodesep=0.25 ranksep=0.3 fontname=\"Helvetica\" fontsize=11 labeljust=l];\n"
     << "  node [shape=box fixedsize=true fontname=\"Helvetica\" fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\" fontsize=8 arrowsize=0.6];\n";
  std::map<int, std::vector<const VisibleItem*>> by_cluster;
  for (const auto& it : v.items) by_cluster[it.cluster].push_back(&it);
  std::map<int, std::vector<int>> child_clusters;
  for (int c : v.clusters) child_clusters[m.groups[c].parent].push_back(c);
  std::function<void(int, int)> emit_cluster = [&](int cluster, int depth) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    for (const VisibleItem* it : by_cluster[cluster]) {
      std::string label;
      for (const auto& l : it->lines) label += (label.empty() ? "" : "\n") + l;
      os << pad << it->key << " [label=" << dot_quote(label) << " width=" << inches(it->width)
         << " height=" << inches(it->height);
      if (it->kind == VisibleItem::Kind::Terminal) os << " shape=ellipse";
      if (it->kind == VisibleItem::Kind::Group) os << " shape=box3d";
      os << "];\n";
    }
    for (int c : child_clusters[cluster]) {
      os << pad << "subgraph cluster_g" << c << " {\n"
         << pad << "  label=" << dot_quote("▾ " + m.groups[c].title + "  ") << ";\n";
      emit_cluster(c, depth + 1);
      os << pad << "}\n";
    }
  };
  emit_cluster(0, 1);
  for (size_t i = 0; i < v.edges.size(); ++i) {
    const auto& e = v.edges[i];
    os << "  " << e.from << " -> " << e.to << " [id=e" << i;
    if (e.nesting) os << " style=dashed arrowhead=none";
    if (!e.label.empty()) os << " label=" << dot_quote(e.label);
    os << "];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace ms::views
