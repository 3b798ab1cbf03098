// GraphView's fallback marks: nodes of the op types a run reported as not run as asked (a CPU detour
// from the device, a case the device kernel hands back, another precision) carry a badge and the
// reason in their tooltip. Kept by op type, so every snapshot of the pass stepper shows them.
#include "views/graph/graph_view.h"

namespace ms::views {

void GraphView::set_fallbacks(std::map<std::string, QString> by_op) {
  fallbacks_ = std::move(by_op);
  apply_fallbacks();
}

QString GraphView::fallback_reason(int node) const {
  if (!model_ || node < 0 || static_cast<size_t>(node) >= model_->nodes.size()) return {};
  const ir::Node* n = model_->nodes[static_cast<size_t>(node)].node;
  if (!n) return {};
  auto it = fallbacks_.find(n->op_type);
  return it == fallbacks_.end() ? QString() : it->second;
}

int GraphView::badged_nodes() const {
  int n = 0;
  for (const BoxItem* b : boxes_) n += !b->badge().isEmpty();
  return n;
}

void GraphView::apply_fallbacks() {
  if (!model_ || !view_) return;
  for (const auto& it : view_->visible.items) {
    if (it.kind != VisibleItem::Kind::Node) continue;
    if (auto* b = boxes_.value(QString::fromStdString(it.key))) b->set_badge(fallback_reason(it.index));
  }
}

}  // namespace ms::views
