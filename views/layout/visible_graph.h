// What is on screen for a given set of collapsed groups: drawn nodes, collapsed groups as single
// boxes, graph inputs/outputs, the clusters of expanded groups, and edges between visible items
// (deduplicated, labelled with the tensor type). to_dot() turns it into Graphviz text. Qt-free.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "views/layout/graph_model.h"

namespace ms::views {

struct VisibleItem {
  enum class Kind { Node, Group, Terminal };
  Kind kind = Kind::Node;
  int index = 0;                   // into GraphModel::nodes / groups / terminals
  std::string key;                 // DOT id: n<i>, g<i>, t<i>
  int cluster = 0;                 // group whose cluster holds it (0 = top level)
  std::vector<std::string> lines;  // label: op type, name, key attributes
  double width = 0, height = 0;    // points
};

struct VisibleEdge {
  std::string from, to;  // item keys
  std::string label;     // tensor type ("f32[1,64,56,56]"), "+N" when several values
  std::string value;     // first value carried
  int values = 1;
  bool nesting = false;  // If/Loop node -> its body (drawn dashed, no arrow)
};

struct VisibleGraph {
  std::vector<VisibleItem> items;
  std::vector<VisibleEdge> edges;
  std::vector<int> clusters;  // expanded groups below the root, parents before children
  int item_index(const std::string& key) const;
};

struct VisibleOptions {
  bool edge_labels = true;
};

VisibleGraph make_visible(const GraphModel& m, const std::set<int>& collapsed, const VisibleOptions& opts = {});

// Groups to collapse so that about `budget` items are visible: expanded breadth-first from the root
// while the count stays under the budget. Empty when everything fits.
std::set<int> default_collapsed(const GraphModel& m, int budget = 300);

// The visible item that shows node `node` (itself, or its outermost collapsed group).
std::string visible_key(const GraphModel& m, const std::set<int>& collapsed, int node);

// Label lines of a node: op type, short name, key attributes and the first weight's shape.
std::vector<std::string> node_lines(const GraphModel& m, int node);

struct DotOptions {
  std::string rankdir = "TB";
};
std::string to_dot(const GraphModel& m, const VisibleGraph& v, const DotOptions& opts = {});

// Quotes a string for DOT ("a\"b").
std::string dot_quote(const std::string& s);

}  // namespace ms::views
