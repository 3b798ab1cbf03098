#include "views/graph/graph_view.h"

#include <QLabel>

#include <algorithm>

#include <QGestureEvent>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QMouseEvent>
#include <QNativeGestureEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>
#include <QWheelEvent>

#include "views/graph/minimap.h"
#include "views/graph/search_bar.h"

namespace ms::views {

// ---------------------------------------------------------------------------------------------
GraphCanvas::GraphCanvas(QWidget* parent) : QGraphicsView(parent) {
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState);
  setFrameShape(QFrame::NoFrame);
  viewport()->grabGesture(Qt::PinchGesture);
}

void GraphCanvas::zoom_by(double factor) {
  const double current = transform().m11();
  const double target = std::clamp(current * factor, 0.02, 6.0);
  scale(target / current, target / current);
  Q_EMIT viewport_changed();
}

void GraphCanvas::wheelEvent(QWheelEvent* e) {
  // Wheel zooms (the graph is a map); Shift+wheel / horizontal wheels scroll.
  if (e->modifiers() & Qt::ShiftModifier || e->angleDelta().x() != 0) {
    QGraphicsView::wheelEvent(e);
    return;
  }
  const double steps = e->angleDelta().y() / 120.0;
  zoom_by(std::pow(1.2, steps));
  e->accept();
}

bool GraphCanvas::viewportEvent(QEvent* e) {
  if (e->type() == QEvent::Gesture) {
    auto* g = static_cast<QGestureEvent*>(e);
    if (auto* pinch = static_cast<QPinchGesture*>(g->gesture(Qt::PinchGesture))) {
      if (pinch->changeFlags() & QPinchGesture::ScaleFactorChanged) zoom_by(pinch->scaleFactor());
      return true;
    }
  }
  if (e->type() == QEvent::NativeGesture) {
    auto* g = static_cast<QNativeGestureEvent*>(e);
    if (g->gestureType() == Qt::ZoomNativeGesture) {
      zoom_by(1.0 + g->value());
      return true;
    }
  }
  return QGraphicsView::viewportEvent(e);
}

void GraphCanvas::mouseDoubleClickEvent(QMouseEvent* e) {
  const QPointF sp = mapToScene(e->position().toPoint());
  QGraphicsItem* hit = nullptr;
  for (QGraphicsItem* it : items(e->position().toPoint()))
    if (it->data(kRoleKind).toInt() != 0 && it->data(kRoleKind).toInt() != kKindEdge) {
      hit = it;
      break;
    }
  Q_EMIT item_double_clicked(hit, sp);
  e->accept();
}

void GraphCanvas::mousePressEvent(QMouseEvent* e) {
  press_pos_ = e->position().toPoint();
  QGraphicsView::mousePressEvent(e);
}

void GraphCanvas::mouseReleaseEvent(QMouseEvent* e) {
  QGraphicsView::mouseReleaseEvent(e);
  if (e->button() != Qt::LeftButton || (e->position().toPoint() - press_pos_).manhattanLength() > 4) return;
  QGraphicsItem* hit = nullptr;
  for (QGraphicsItem* it : items(e->position().toPoint())) {
    const int kind = it->data(kRoleKind).toInt();
    if (kind == kKindNode || kind == kKindGroup || kind == kKindTerminal) {
      hit = it;
      break;
    }
  }
  Q_EMIT item_clicked(hit);
}

void GraphCanvas::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  Q_EMIT viewport_changed();
}

void GraphCanvas::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  Q_EMIT viewport_changed();
}

void GraphCanvas::drawBackground(QPainter* p, const QRectF& rect) { p->fillRect(rect, backgroundBrush()); }

namespace {
// The legends' box in the graph's theme (light or dark), a little see-through.
QString graph_legend_style(const GraphTheme& t) {
  QColor bg = t.background;
  return QStringLiteral("QLabel { background: rgba(%1,%2,%3,230); border: 1px solid %4; padding: 4px; color: %5; }")
      .arg(bg.red())
      .arg(bg.green())
      .arg(bg.blue())
      .arg(t.frame.name(), t.text.name());
}
}  // namespace

// ---------------------------------------------------------------------------------------------
GraphView::GraphView(JobTracker* jobs, QWidget* parent)
    : QWidget(parent), jobs_(jobs), theme_(GraphTheme::from_palette()) {
  scene_ = new QGraphicsScene(this);
  // Static scenes of a few thousand items: the BSP index makes hit tests and culling cheap.
  scene_->setItemIndexMethod(QGraphicsScene::BspTreeIndex);
  canvas_ = new GraphCanvas(this);
  canvas_->setScene(scene_);
  canvas_->setBackgroundBrush(theme_.background);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(0);
  search_ = new SearchBar(this);
  search_->hide();
  box->addWidget(search_);
  box->addWidget(canvas_, 1);
  minimap_ = new Minimap(canvas_, canvas_);
  minimap_->setBackgroundBrush(theme_.background);
  minimap_->resize(200, 150);
  minimap_->hide();
  canvas_->viewport()->installEventFilter(this);
  connect(canvas_, &GraphCanvas::viewport_changed, minimap_, [this] { update_minimap(); });
  connect(canvas_, &GraphCanvas::item_clicked, this, &GraphView::on_clicked);
  connect(canvas_, &GraphCanvas::item_double_clicked, this, &GraphView::on_double_clicked);
  connect(search_, &SearchBar::go_to, this, &GraphView::reveal_node);
  connect(search_, &SearchBar::matches_changed, this, &GraphView::set_highlight);
  connect(search_, &SearchBar::closed, this, [this] {
    set_highlight({});
    canvas_->setFocus();
  });
}

GraphView::~GraphView() {
  if (layout_job_) jobs_->cancel(layout_job_);
}

void GraphView::clear() {
  reset_scene();
  heat_.clear();
  heat_legend_.clear();
}

void GraphView::reset_scene() {
  if (layout_job_) jobs_->cancel(layout_job_);
  layout_job_ = 0;
  scene_->clear();
  delete ghosts_;
  ghosts_ = nullptr;
  delete heat_label_;
  heat_label_ = nullptr;
  place_legends();
  diff_.clear();
  removed_.clear();
  diff_pass_.clear();
  linked_.clear();
  boxes_.clear();
  model_.reset();
  view_.reset();
  cache_.clear();
  selected_ = -1;
  search_->set_model(nullptr);
  minimap_->hide();
}

void GraphView::show_prepared(std::shared_ptr<const GraphModel> model, PreparedView view) {
  reset_scene();
  model_ = std::move(model);
  search_->set_model(model_.get());
  awaiting_first_paint_ = true;
  apply(std::move(view), -1);
  show_start();
}

void GraphView::set_model(std::shared_ptr<const GraphModel> model) {
  reset_scene();
  model_ = std::move(model);
  search_->set_model(model_.get());
  awaiting_first_paint_ = true;
  set_collapsed(default_collapsed(*model_));
}

void GraphView::set_collapsed(std::set<int> collapsed, int then_select) {
  if (!model_) return;
  if (auto hit = cache_.find(collapsed); hit != cache_.end()) {
    apply(*hit->second, then_select);
    return;
  }
  if (layout_job_) jobs_->cancel(layout_job_);
  Q_EMIT layout_started();
  auto model = model_;
  layout_job_ = jobs_->start(
      QStringLiteral("layout"), tr("Laying out the graph"), this,
      [model, collapsed = std::move(collapsed)](JobContext& ctx) {
        ctx.progress(-1, QObject::tr("Laying out the graph"));
        return prepare_view(*model, collapsed);
      },
      [this, model, then_select](Expected<PreparedView> r) {
        layout_job_ = 0;
        if (model != model_) return;  // a different model arrived meanwhile
        if (!r) {
          Q_EMIT layout_failed(QString::fromStdString(r.status().message()));
          return;
        }
        const bool first = scene_->items().isEmpty();
        apply(std::move(*r), then_select);
        if (first) show_start();
      });
}

void GraphView::apply(PreparedView view, int then_select) {
  const QPointF centre = canvas_->mapToScene(canvas_->viewport()->rect().center());
  QString anchor_key;
  if (then_select < 0 && selected_ >= 0 && model_)
    anchor_key = QString::fromStdString(visible_key(*model_, view.collapsed, selected_));
  cache_[view.collapsed] = std::make_shared<const PreparedView>(view);
  view_ = std::make_unique<PreparedView>(std::move(view));
  boxes_ = build_scene(*scene_, *model_, *view_, theme_, color_mode_);
  apply_diff();
  apply_heat();
  apply_fallbacks();
  apply_linked();
  minimap_->refit();
  update_minimap();
  place_overlays();
  set_highlight(highlighted_);
  Q_EMIT layout_finished(static_cast<int>(view_->visible.items.size()), view_->layout.layout_ms);
  if (then_select >= 0) {
    select_node(then_select);
    const QString key = QString::fromStdString(visible_key(*model_, view_->collapsed, then_select));
    if (auto* b = boxes_.value(key)) canvas_->centerOn(b);
  } else if (!anchor_key.isEmpty() && boxes_.value(anchor_key)) {
    select_node(selected_);
    canvas_->centerOn(boxes_.value(anchor_key));
  } else {
    canvas_->centerOn(centre);
    if (selected_ >= 0) select_node(selected_);
  }
}

void GraphView::toggle_group(int group) {
  if (!view_ || group <= 0) return;
  std::set<int> c = view_->collapsed;
  if (c.count(group)) {
    c.erase(group);
  } else {
    c.insert(group);
  }
  set_collapsed(std::move(c));
}

void GraphView::reveal_node(int node) {
  if (!model_ || node < 0 || node >= static_cast<int>(model_->nodes.size()) || !view_) return;
  std::set<int> c = view_->collapsed;
  bool changed = false;
  for (int g : model_->ancestors(model_->nodes[static_cast<size_t>(node)].group)) changed |= c.erase(g) > 0;
  if (changed) {
    selected_ = node;
    set_collapsed(std::move(c), node);
    return;
  }
  select_node(node);
  if (auto* b = boxes_.value(QStringLiteral("n%1").arg(node))) canvas_->centerOn(b);
}

void GraphView::select_node(int node) {
  selected_ = node;
  scene_->clearSelection();
  if (model_ && node >= 0 && view_) {
    const QString key = QString::fromStdString(visible_key(*model_, view_->collapsed, node));
    if (auto* b = boxes_.value(key)) b->setSelected(true);
  }
  Q_EMIT node_selected(node);
}

void GraphView::on_clicked(QGraphicsItem* item) {
  if (!item) {
    select_node(-1);
    return;
  }
  const int kind = item->data(kRoleKind).toInt();
  if (kind == kKindNode)
    select_node(item->data(kRoleIndex).toInt());
  else {
    scene_->clearSelection();
    item->setSelected(true);
    selected_ = -1;
    Q_EMIT node_selected(-1);
  }
}

void GraphView::on_double_clicked(QGraphicsItem* item, QPointF) {
  if (!item) return;
  const int kind = item->data(kRoleKind).toInt();
  if (kind == kKindGroup) {
    toggle_group(item->data(kRoleIndex).toInt());
  } else if (kind == kKindCluster) {
    toggle_group(item->data(kRoleIndex).toInt());  // anywhere on the frame's empty area
  } else if (kind == kKindNode && model_) {
    // Double-click on a node inside a group collapses that group.
    toggle_group(model_->nodes[static_cast<size_t>(item->data(kRoleIndex).toInt())].group);
  }
}

void GraphView::set_highlight(const std::vector<int>& nodes) {
  for (auto* b : boxes_) b->set_highlight(false);
  highlighted_ = nodes;
  if (!model_ || !view_) return;
  for (int n : nodes)
    if (auto* b = boxes_.value(QString::fromStdString(visible_key(*model_, view_->collapsed, n))))
      b->set_highlight(true);
}

void GraphView::fit() {
  if (scene_->items().isEmpty()) return;
  const QRectF r = scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  canvas_->fitInView(r, Qt::KeepAspectRatio);
  if (canvas_->transform().m11() > 1.0) {  // a small graph stays at 1:1, centred
    canvas_->resetTransform();
    canvas_->centerOn(r.center());
  }
  Q_EMIT canvas_->viewport_changed();
}

void GraphView::show_start() {
  if (scene_->items().isEmpty()) return;
  const QRectF r = scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  const QRect vp = canvas_->viewport()->rect();
  const double whole = std::min(vp.width() / r.width(), vp.height() / r.height());
  // Whole graph when its labels stay readable; otherwise a readable scale at the graph's entry
  // (the top), where a reader starts. Ctrl+0 still fits everything.
  constexpr double kReadable = 0.55;
  if (whole >= kReadable) {
    fit();
    return;
  }
  const double s = std::max(kReadable, std::min(1.0, vp.width() / r.width()));
  canvas_->resetTransform();
  canvas_->scale(s, s);
  QPointF entry(r.center().x(), r.top());
  double top = 1e300;
  for (BoxItem* b : boxes_)
    if (b->pos().y() < top) {
      top = b->pos().y();
      entry = b->pos();
    }
  canvas_->centerOn(QPointF(entry.x(), r.top() + vp.height() / 2.0 / s));
  Q_EMIT canvas_->viewport_changed();
}

void GraphView::zoom_in() { canvas_->zoom_by(1.25); }
void GraphView::zoom_out() { canvas_->zoom_by(1 / 1.25); }

void GraphView::show_search() { search_->activate(); }

void GraphView::set_color_mode(ColorMode mode) {
  color_mode_ = mode;
  if (!model_ || !view_) return;
  for (const auto& it : view_->visible.items)
    if (auto* b = boxes_.value(QString::fromStdString(it.key))) b->set_fill(item_color(*model_, it, mode));
  apply_diff();
  apply_heat();
}

QColor GraphView::diff_color(DiffMark m) {
  switch (m) {
    case DiffMark::Added: return QColor(0x3c, 0xb0, 0x4c);
    case DiffMark::Fused: return QColor(0x1e, 0x8c, 0x3a);
    case DiffMark::Rewritten: return QColor(0xf0, 0x8c, 0x1e);
    case DiffMark::Removed:
    case DiffMark::Ghost: return QColor(0xd2, 0x3c, 0x3c);
  }
  return {};
}

void GraphView::set_diff(std::unordered_map<uint64_t, DiffMark> marks, QStringList removed, QString pass) {
  const bool had = !diff_.empty();
  diff_ = std::move(marks);
  removed_ = std::move(removed);
  diff_pass_ = std::move(pass);
  if (had && model_ && view_) {  // restore the plain colours first
    for (const auto& it : view_->visible.items)
      if (auto* b = boxes_.value(QString::fromStdString(it.key))) {
        b->set_fill(item_color(*model_, it, color_mode_));
        if (b->ghost()) {
          b->set_ghost(false);
          b->setData(kRoleKind, kKindNode);
        }
      }
  }
  apply_diff();
  apply_heat();
}

void GraphView::set_heat(std::unordered_map<uint64_t, QColor> fills, QString legend) {
  const bool had = !heat_.empty();
  heat_ = std::move(fills);
  heat_legend_ = std::move(legend);
  if (had && heat_.empty() && model_ && view_) {  // the plain colours, then the diff's over them
    for (const auto& it : view_->visible.items)
      if (auto* b = boxes_.value(QString::fromStdString(it.key)); b && !b->ghost())
        b->set_fill(item_color(*model_, it, color_mode_));
    apply_diff();
  }
  apply_heat();
}

void GraphView::apply_heat() {
  delete heat_label_;
  heat_label_ = nullptr;
  place_legends();
  if (!model_ || !view_ || heat_.empty()) return;
  for (const auto& it : view_->visible.items) {
    if (it.kind != VisibleItem::Kind::Node || it.index < 0 || static_cast<size_t>(it.index) >= model_->nodes.size() ||
        !model_->nodes[static_cast<size_t>(it.index)].node)
      continue;
    auto* b = boxes_.value(QString::fromStdString(it.key));
    if (!b || b->ghost()) continue;
    auto h = heat_.find(model_->nodes[static_cast<size_t>(it.index)].node->id.value);
    b->set_fill(h == heat_.end() ? not_compared_color() : h->second);
  }
  if (heat_legend_.isEmpty()) return;
  auto* label = new QLabel(canvas_);
  label->setObjectName(QStringLiteral("HeatLegend"));
  label->setTextFormat(Qt::RichText);
  label->setText(heat_legend_);
  label->setStyleSheet(graph_legend_style(theme_));
  label->setProperty("natural_width", label->sizeHint().width());
  label->setWordWrap(true);
  heat_label_ = label;
  place_legends();
  label->show();
}

void GraphView::place_legends() {
  // The legends sit in bands the viewport leaves free (the diff legend above, the heat legend
  // below), so they never cover a node: the scene shows only between them.
  const QRect area = canvas_->contentsRect();
  // Each as wide as its text up to the view's width, wrapped below that, as tall as that needs.
  const int room = std::max(120, area.width() - 16);
  for (QWidget* w : {ghosts_, heat_label_})
    if (auto* label = qobject_cast<QLabel*>(w)) {
      // The text's height at that width (the box adds 4 px of padding and a 1 px border a side).
      const int width = std::min(room, label->property("natural_width").toInt());
      QTextDocument doc;
      doc.setDefaultFont(label->font());
      doc.setDocumentMargin(0);
      doc.setHtml(label->text());
      doc.setTextWidth(width - 10);
      label->setFixedSize(width, static_cast<int>(std::ceil(doc.size().height())) + 10);
    }
  const int top = ghosts_ ? ghosts_->height() + 8 : 0;
  const int bottom = heat_label_ ? heat_label_->height() + 8 : 0;
  canvas_->reserve_bands(top, bottom);
  if (ghosts_) ghosts_->move(area.left() + 8, area.top() + 4);
  if (heat_label_) heat_label_->move(area.left() + 8, area.bottom() + 1 - bottom + 4);
}

void GraphView::focus_linked() {
  if (!model_ || !view_) return;
  QRectF r;
  for (uint64_t id : linked_) {
    const int i = model_->index_of(ir::NodeId{id});
    if (i < 0) continue;
    if (auto* b = boxes_.value(QString::fromStdString(visible_key(*model_, view_->collapsed, i))))
      r = r.united(b->sceneBoundingRect());
  }
  if (r.isNull()) return;
  canvas_->centerOn(r.center());
  Q_EMIT canvas_->viewport_changed();
}

int GraphView::ghost_count() const {
  int n = 0;
  for (const BoxItem* b : boxes_) n += b->ghost();
  return n;
}

void GraphView::apply_diff() {
  delete ghosts_;
  ghosts_ = nullptr;
  place_legends();
  if (!model_ || !view_ || (diff_.empty() && removed_.isEmpty())) return;
  std::set<std::string> ghost_keys;
  int ghosts = 0;
  for (const auto& it : view_->visible.items) {
    if (it.kind != VisibleItem::Kind::Node || it.index < 0 || static_cast<size_t>(it.index) >= model_->nodes.size() ||
        !model_->nodes[static_cast<size_t>(it.index)].node)
      continue;
    const ir::Node& node = *model_->nodes[static_cast<size_t>(it.index)].node;
    auto d = diff_.find(node.id.value);
    auto* b = boxes_.value(QString::fromStdString(it.key));
    if (!b) continue;
    // Unchanged nodes turn neutral grey so the changes stand out.
    b->set_fill(d == diff_.end() ? QColor(0xb4, 0xb8, 0xc0) : diff_color(d->second));
    if (d != diff_.end() && d->second == DiffMark::Ghost) {
      b->set_ghost(true);
      b->setData(kRoleKind, kKindGhost);
      b->setToolTip(tr("%1 '%2'\nremoved by %3")
                        .arg(QString::fromStdString(node.op_type), QString::fromStdString(node.name),
                             diff_pass_.isEmpty() ? tr("this pass") : diff_pass_));
      ghost_keys.insert(it.key);
      ++ghosts;
    }
  }
  // Edges into or out of a ghost are gone too: dashed and faded like the ghost.
  if (!ghost_keys.empty())
    for (QGraphicsItem* item : scene_->items()) {
      if (item->data(kRoleKind).toInt() != kKindEdge) continue;
      const int e = item->data(kRoleIndex).toInt();
      if (e < 0 || e >= static_cast<int>(view_->visible.edges.size())) continue;
      const auto& ve = view_->visible.edges[static_cast<size_t>(e)];
      if (!ghost_keys.count(ve.from) && !ghost_keys.count(ve.to)) continue;
      if (auto* path = dynamic_cast<QGraphicsPathItem*>(item)) {
        QPen pen(diff_color(DiffMark::Ghost), 1.2, Qt::DashLine);
        path->setPen(pen);
        path->setOpacity(0.6);
      }
    }
  QString html = QStringLiteral(
      "<span style='color:#3cb04c'>■ added</span> &nbsp;<span style='color:#1e8c3a'>■ fused</span> &nbsp;"
      "<span style='color:#f08c1e'>■ rewritten</span> &nbsp;<span style='color:#d23c3c'>▭ removed</span> &nbsp;<span "
      "style='color:#888'>■ unchanged</span>");
  if (ghosts > 0)
    html += tr("<br><span style='color:#d23c3c'>%1 removed %2 drawn in place, dashed</span>")
                .arg(ghosts)
                .arg(ghosts == 1 ? tr("node") : tr("nodes"));
  // Removed nodes without a place in this layout (hidden in a collapsed group, or not laid out
  // with the union graph): listed.
  if (!removed_.isEmpty()) {
    QStringList shown = removed_.mid(0, 24);
    for (auto& r : shown) r = r.toHtmlEscaped();
    html += QStringLiteral("<br><span style='color:#d23c3c'><s>%1</s>%2</span>")
                .arg(shown.join(QStringLiteral("</s>, <s>")),
                     removed_.size() > 24 ? tr(" and %1 more").arg(removed_.size() - 24) : QString());
  }
  if (std::any_of(diff_.begin(), diff_.end(), [](const auto& kv) { return kv.second == DiffMark::Fused; }))
    html += tr("<br><span style='color:#8e44d0'>▢ select a fused node to outline its origins</span>");
  // In a band above the viewport (not a scene item): it stays in sight while panning.
  auto* label = new QLabel(canvas_);
  label->setObjectName(QStringLiteral("DiffLegend"));
  label->setTextFormat(Qt::RichText);
  label->setText(html);
  label->setStyleSheet(graph_legend_style(theme_));
  // Its width on one line per <br>; place_legends wraps it to a narrower pane (side by side).
  label->setProperty("natural_width", label->sizeHint().width());
  label->setWordWrap(true);
  label->show();
  ghosts_ = label;
  place_legends();
}

void GraphView::set_linked(std::vector<uint64_t> nodes) {
  linked_ = std::move(nodes);
  apply_linked();
}

void GraphView::apply_linked() {
  for (auto* b : boxes_) b->set_link({});
  if (!model_ || !view_) return;
  for (uint64_t id : linked_) {
    const int i = model_->index_of(ir::NodeId{id});
    if (i < 0) continue;
    if (auto* b = boxes_.value(QString::fromStdString(visible_key(*model_, view_->collapsed, i))))
      b->set_link(link_color());
  }
}

void GraphView::place_overlays() {
  const QRect vp = canvas_->viewport()->geometry();
  // The overview takes the scene's shape: a tall graph gets a narrow strip, not a mostly empty box.
  const QRectF sr = scene_->sceneRect();
  const double aspect = sr.height() > 0 ? sr.width() / sr.height() : 1.0;
  int h = std::min(200, vp.height() / 3);
  int w = static_cast<int>(h * aspect);
  w = std::clamp(w, 48, std::min(240, vp.width() / 4));
  if (aspect > 0 && w / aspect < h) h = std::max(40, static_cast<int>(w / aspect));
  minimap_->setGeometry(vp.right() - w - 12, vp.bottom() - h - 12, w, h);
  minimap_->refit();
  place_legends();
}

void GraphView::update_minimap() {
  // The overview only helps when part of the graph is out of sight.
  const QRectF seen = canvas_->mapToScene(canvas_->viewport()->rect()).boundingRect();
  const bool whole = seen.contains(scene_->itemsBoundingRect());
  minimap_->setVisible(!boxes_.isEmpty() && !whole);
  minimap_->viewport()->update();
}

void GraphView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  place_overlays();
}

bool GraphView::eventFilter(QObject* obj, QEvent* e) {
  if (obj == canvas_->viewport() && e->type() == QEvent::Paint && awaiting_first_paint_ && !boxes_.isEmpty()) {
    awaiting_first_paint_ = false;
    // Emitted after this paint completes.
    QTimer::singleShot(0, this, [this] { Q_EMIT first_paint(); });
  }
  if (obj == canvas_->viewport() && e->type() == QEvent::Resize)
    QTimer::singleShot(0, this, [this] { place_overlays(); });
  return QWidget::eventFilter(obj, e);
}

QList<QRect> GraphView::visible_node_rects() const {
  QList<QRect> out;
  const QRect vp = canvas_->viewport()->rect();
  for (const BoxItem* b : boxes_) {
    const QRect r = canvas_->mapFromScene(b->sceneBoundingRect()).boundingRect().intersected(vp);
    if (!r.isEmpty()) out << QRect(canvas_->viewport()->mapTo(this, r.topLeft()), r.size());
  }
  return out;
}

QRect GraphView::node_rect(int node) const {
  if (!model_ || !view_ || node < 0 || node >= static_cast<int>(model_->nodes.size())) return {};
  const BoxItem* b = boxes_.value(QString::fromStdString(visible_key(*model_, view_->collapsed, node)));
  if (!b) return {};
  const QRect r = canvas_->mapFromScene(b->sceneBoundingRect()).boundingRect();
  return QRect(canvas_->viewport()->mapTo(this, r.topLeft()), r.size());
}

void GraphView::refresh_theme() {
  theme_ = GraphTheme::from_palette();
  canvas_->setBackgroundBrush(theme_.background);
  minimap_->setBackgroundBrush(theme_.background);
  if (model_ && view_ && !layout_job_) {
    PreparedView v = *view_;
    apply(std::move(v), selected_);
  }
  canvas_->viewport()->update();
}

QList<QRect> GraphView::legend_rects() const {
  QList<QRect> out;
  for (const QWidget* w : {ghosts_, heat_label_})
    if (w && w->isVisible()) out << QRect(w->parentWidget()->mapTo(this, w->pos()), w->size());
  return out;
}

QString GraphView::dot_text() const { return view_ ? QString::fromStdString(view_->dot) : QString(); }

}  // namespace ms::views
