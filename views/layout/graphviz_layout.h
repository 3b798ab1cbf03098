// Runs Graphviz `dot` (libgvc/libcgraph) on DOT text and returns box positions, edge splines and
// cluster rectangles in points, y pointing down (scene coordinates). Qt-free; call it from a worker
// thread. Graphviz is not thread-safe: calls are serialized.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace ms::views {

struct PointF {
  double x = 0, y = 0;
};

struct LayoutBox {
  std::string key;      // DOT node id
  double x = 0, y = 0;  // centre
  double w = 0, h = 0;
};

struct LayoutEdge {
  int index = -1;              // from the edge's id attribute "e<i>"
  std::vector<PointF> points;  // cubic Bezier: p0, (c1, c2, p)...
  bool has_arrow = false;
  PointF arrow_tip;
  bool has_label = false;
  PointF label_pos;  // centre of the label
};

struct LayoutCluster {
  int group = -1;  // from the subgraph name "cluster_g<i>"
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct Layout {
  double width = 0, height = 0;
  std::vector<LayoutBox> nodes;
  std::vector<LayoutEdge> edges;
  std::vector<LayoutCluster> clusters;
  double layout_ms = 0;
};

Expected<Layout> layout_dot(const std::string& dot);

}  // namespace ms::views
