// GraphView's fallback marks: nodes a run reported as not run as asked (a CPU detour from the
// device, a case the device kernel hands back, another precision) carry a badge and the reason in
// their tooltip. Kept by node id and followed through origins, so every snapshot of the pass stepper
// shows them on the nodes that stand for those that fell back; by op type for fallbacks that name no
// nodes.
#include "views/graph/graph_view.h"

#include <algorithm>

namespace ms::views {

namespace {

void join_reason(QString& into, const QString& why) {
  if (into.isEmpty())
    into = why;
  else if (!into.split(QStringLiteral("; ")).contains(why))
    into += QStringLiteral("; ") + why;
}

const ir::Node* find_fallback_node(const ir::Graph& g, uint64_t id) {
  for (const ir::Node& n : g.nodes()) {
    if (n.id.value == id) return &n;
    for (const auto& sub : n.subgraphs())
      if (const ir::Node* in = sub ? find_fallback_node(*sub, id) : nullptr) return in;
  }
  return nullptr;
}

}  // namespace

void FallbackMarks::add_nodes(const std::vector<uint64_t>& ids, const QString& why, const ir::Graph* ran) {
  for (uint64_t id : ids) {
    join_reason(nodes[id], why);
    if (const ir::Node* n = ran ? find_fallback_node(*ran, id) : nullptr)
      for (ir::NodeId o : n->origins) join_reason(nodes[o.value], why);
  }
}

void FallbackMarks::add_op(const std::string& op, const QString& why) { join_reason(ops[op], why); }

void GraphView::set_fallbacks(FallbackMarks marks) {
  fallbacks_ = std::move(marks);
  apply_fallbacks();
}

QString GraphView::fallback_reason(int node) const {
  if (!model_ || node < 0 || static_cast<size_t>(node) >= model_->nodes.size()) return {};
  const ir::Node* n = model_->nodes[static_cast<size_t>(node)].node;
  if (!n) return {};
  if (auto it = fallbacks_.nodes.find(n->id.value); it != fallbacks_.nodes.end()) return it->second;
  // Rewritten or fused from a node that fell back.
  for (ir::NodeId o : n->origins)
    if (auto it = fallbacks_.nodes.find(o.value); it != fallbacks_.nodes.end()) return it->second;
  auto it = fallbacks_.ops.find(n->op_type);
  return it == fallbacks_.ops.end() ? QString() : it->second;
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
