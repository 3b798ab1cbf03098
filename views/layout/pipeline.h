// Model + collapsed groups -> visible graph -> DOT -> Graphviz layout, in one call for a worker.
#pragma once

#include <set>
#include <string>

#include "views/layout/graph_model.h"
#include "views/layout/graphviz_layout.h"
#include "views/layout/visible_graph.h"

namespace ms::views {

struct PreparedView {
  std::set<int> collapsed;
  VisibleGraph visible;
  std::string dot;
  Layout layout;
};

Expected<PreparedView> prepare_view(const GraphModel& m, std::set<int> collapsed);

}  // namespace ms::views
