#include "views/layout/pipeline.h"

namespace ms::views {

Expected<PreparedView> prepare_view(const GraphModel& m, std::set<int> collapsed) {
  PreparedView p;
  p.collapsed = std::move(collapsed);
  VisibleOptions opts;
  // Edge labels make dot insert a label node per edge; past a few hundred edges that costs more
  // layout time than the labels are worth at the zoom such a graph is seen at.
  p.visible = make_visible(m, p.collapsed, opts);
  if (p.visible.edges.size() > 600) {
    opts.edge_labels = false;
    p.visible = make_visible(m, p.collapsed, opts);
  }
  p.dot = to_dot(m, p.visible);
  auto layout = layout_dot(p.dot);
  if (!layout) return std::move(layout).take_status();
  p.layout = std::move(*layout);
  return p;
}

}  // namespace ms::views
