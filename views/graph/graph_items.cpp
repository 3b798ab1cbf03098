#include "views/graph/graph_items.h"

#include <QApplication>
#include <QFontMetricsF>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QPainter>
#include <QPalette>
#include <QStyleOptionGraphicsItem>

#include "engine/ops/schema.h"

namespace ms::views {

GraphTheme GraphTheme::from_palette() {
  GraphTheme t;
  const QPalette pal = QApplication::palette();
  t.dark = pal.color(QPalette::Window).lightness() < 128;
  if (t.dark) {
    t.background = QColor(0x1f, 0x21, 0x25);
    t.text = QColor(0xec, 0xee, 0xf1);
    t.muted = QColor(0xa8, 0xae, 0xb8);
    t.edge = QColor(0x8a, 0x92, 0x9e);
    t.frame = QColor(0x5a, 0x62, 0x70);
  } else {
    t.background = QColor(0xfa, 0xfa, 0xf8);
    t.text = QColor(0x1d, 0x21, 0x27);
    t.muted = QColor(0x5b, 0x62, 0x6e);
    t.edge = QColor(0x6b, 0x72, 0x80);
    t.frame = QColor(0xb4, 0xba, 0xc4);
  }
  t.selection = QColor(0xff, 0x8c, 0x00);
  t.match = QColor(0xe0, 0x3a, 0x8c);
  return t;
}

QColor item_color(const GraphModel& m, const VisibleItem& item, ColorMode mode) {
  if (item.kind == VisibleItem::Kind::Terminal) return QColor(0x6b, 0x72, 0x80);
  if (item.kind == VisibleItem::Kind::Group) return QColor(0x5c, 0x6b, 0x84);
  const std::string& op = m.nodes[item.index].node->op_type;
  return mode == ColorMode::OpType ? op_type_color(QString::fromStdString(op)) : category_color(op_category(op));
}

namespace {

QFont node_font(bool bold, double pixels) {
  QFont f(QStringLiteral("Sans Serif"));
  f.setStyleHint(QFont::SansSerif);
  f.setPixelSize(static_cast<int>(pixels));
  f.setBold(bold);
  return f;
}

// Fill blended towards the background so dark text reads on light themes and light on dark.
QColor tint(QColor c, const GraphTheme& t, double amount) {
  const QColor b = t.background;
  return QColor::fromRgbF(static_cast<float>(c.redF() * amount + b.redF() * (1 - amount)),
                          static_cast<float>(c.greenF() * amount + b.greenF() * (1 - amount)),
                          static_cast<float>(c.blueF() * amount + b.blueF() * (1 - amount)));
}

}  // namespace

BoxItem::BoxItem(const VisibleItem& item, QColor fill, const GraphTheme* theme)
    : kind_(item.kind), fill_(fill), theme_(theme) {
  rect_ = QRectF(-item.width / 2, -item.height / 2, item.width, item.height);
  for (const auto& l : item.lines) lines_ << QString::fromStdString(l);
  setAcceptHoverEvents(false);
  setFlag(ItemIsSelectable);
  setToolTip(lines_.join('\n'));
}

QRectF BoxItem::boundingRect() const { return rect_.adjusted(-6, -6, 8, 8); }

void BoxItem::set_highlight(bool on) {
  highlight_ = on;
  update();
}

void BoxItem::set_ghost(bool on) {
  ghost_ = on;
  setFlag(ItemIsSelectable, !on);
  setOpacity(on ? 0.6 : 1.0);
  update();
}

void BoxItem::set_badge(const QString& reason) {
  if (reason == badge_) return;
  badge_ = reason;
  setToolTip(lines_.join('\n') + (reason.isEmpty() ? QString() : QObject::tr("\nRan on a fallback: %1").arg(reason)));
  update();
}

void BoxItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphTheme& t = *theme_;
  const double lod = option->levelOfDetailFromTransform(p->worldTransform());
  p->setRenderHint(QPainter::Antialiasing, lod > 0.3);
  const bool selected = isSelected();
  QPen border(selected ? t.selection : (highlight_ ? t.match : tint(fill_, t, 0.9)), selected || highlight_ ? 3 : 1);
  if (ghost_) border = QPen(fill_, 1.6, Qt::DashLine);
  if (link_.isValid() && !selected) {
    // The link colour as a halo around the box, so it reads over the diff colours.
    p->setPen(QPen(link_, 4));
    p->setBrush(Qt::NoBrush);
    p->drawRoundedRect(rect_.adjusted(-3, -3, 3, 3), 7, 7);
  }
  if (kind_ == VisibleItem::Kind::Terminal) {
    p->setPen(border);
    p->setBrush(tint(fill_, t, 0.18));
    p->drawRoundedRect(rect_, rect_.height() / 2, rect_.height() / 2);
  } else if (kind_ == VisibleItem::Kind::Group) {
    // A stack of two cards: reads as "more inside".
    p->setPen(QPen(tint(fill_, t, 0.7), 1));
    p->setBrush(tint(fill_, t, 0.25));
    p->drawRoundedRect(rect_.adjusted(6, 0, 0, -6).translated(0, 0), 5, 5);
    p->setPen(border);
    p->setBrush(tint(fill_, t, 0.32));
    p->drawRoundedRect(rect_.adjusted(0, 6, -6, 0), 5, 5);
  } else {
    p->setPen(border);
    p->setBrush(tint(fill_, t, ghost_ ? 0.1 : (t.dark ? 0.38 : 0.22)));
    p->drawRoundedRect(rect_, 5, 5);
    if (lod > 0.15 && !ghost_) {
      p->setPen(Qt::NoPen);
      p->setBrush(fill_);
      QPainterPath bar;
      bar.addRoundedRect(QRectF(rect_.left(), rect_.top(), 7, rect_.height()), 4, 4);
      p->drawPath(bar.intersected([&] {
        QPainterPath r;
        r.addRect(QRectF(rect_.left(), rect_.top(), 5, rect_.height()));
        return r;
      }()));
    }
  }
  if (!badge_.isEmpty() && !ghost_ && lod > 0.15) {
    // Inside the bounding rect's margin: over the top-right corner.
    const QRectF b(rect_.right() - 46, rect_.top() - 6, 50, 13);
    p->setPen(Qt::NoPen);
    p->setBrush(badge_color());
    p->drawRoundedRect(b, 6, 6);
    if (lod >= 0.25) {
      p->setFont(node_font(true, 8));
      p->setPen(Qt::white);
      p->drawText(b, Qt::AlignCenter, QObject::tr("fallback"));
    }
  }
  if (lod < 0.25) return;  // text is unreadable this far out; skip the cost
  QRectF text = kind_ == VisibleItem::Kind::Group ? rect_.adjusted(8, 8, -12, -4) : rect_.adjusted(10, 5, -6, -5);
  const double line_h = (text.height()) / std::max<qsizetype>(1, lines_.size());
  for (qsizetype i = 0; i < lines_.size(); ++i) {
    const bool title = i == 0;
    QFont f = node_font(title, title ? 11.5 : 10.5);
    p->setFont(f);
    p->setPen(title ? t.text : t.muted);
    QRectF r(text.left(), text.top() + static_cast<double>(i) * line_h, text.width(), line_h);
    const QString s = QFontMetricsF(f).elidedText(lines_[i], Qt::ElideMiddle, r.width());
    const Qt::Alignment align =
        kind_ == VisibleItem::Kind::Terminal ? Qt::AlignCenter : (Qt::AlignLeft | Qt::AlignVCenter);
    p->drawText(r, align, s);
  }
}

ClusterItem::ClusterItem(const QRectF& r, const QString& title, int depth, bool subgraph, const GraphTheme* theme)
    : rect_(r), title_(title), depth_(depth), subgraph_(subgraph), theme_(theme) {
  setZValue(-10 + depth);
  setToolTip(title + QObject::tr("\nDouble-click the title to collapse"));
}

QRectF ClusterItem::title_rect() const { return QRectF(rect_.left(), rect_.top(), rect_.width(), 20); }

void ClusterItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphTheme& t = *theme_;
  p->setRenderHint(QPainter::Antialiasing, true);
  QColor fill =
      t.dark ? QColor(255, 255, 255, 10 + 6 * std::min(depth_, 4)) : QColor(40, 60, 100, 8 + 6 * std::min(depth_, 4));
  QPen pen(subgraph_ ? category_color(static_cast<int>(ops::OpCategory::ControlFlow)) : t.frame, 1,
           subgraph_ ? Qt::DashLine : Qt::SolidLine);
  p->setPen(pen);
  p->setBrush(fill);
  p->drawRoundedRect(rect_, 8, 8);
  if (option->levelOfDetailFromTransform(p->worldTransform()) < 0.2) return;
  QFont f = node_font(true, 10.5);
  p->setFont(f);
  p->setPen(t.muted);
  const QRectF tr = title_rect().adjusted(8, 2, -8, 0);
  p->drawText(tr, Qt::AlignLeft | Qt::AlignVCenter,
              QFontMetricsF(f).elidedText(QStringLiteral("▾ ") + title_, Qt::ElideRight, tr.width() + 8));
}

QHash<QString, BoxItem*> build_scene(QGraphicsScene& scene, const GraphModel& m, const PreparedView& v,
                                     const GraphTheme& theme, ColorMode mode) {
  scene.clear();
  QHash<QString, BoxItem*> boxes;
  const Layout& L = v.layout;
  scene.setSceneRect(QRectF(-40, -40, L.width + 80, L.height + 80));
  std::unordered_map<std::string, const LayoutBox*> pos;
  for (const auto& b : L.nodes) pos[b.key] = &b;
  for (const auto& c : L.clusters) {
    if (c.group < 0 || c.group >= static_cast<int>(m.groups.size())) continue;
    const int depth = static_cast<int>(m.ancestors(c.group).size()) - 1;
    auto* item =
        new ClusterItem(QRectF(QPointF(c.x0, c.y0), QPointF(c.x1, c.y1)),
                        QString::fromStdString(m.groups[c.group].title), depth, m.groups[c.group].subgraph, &theme);
    item->setData(kRoleKind, kKindCluster);
    item->setData(kRoleIndex, c.group);
    item->setData(kRoleKey, QStringLiteral("g%1").arg(c.group));
    scene.addItem(item);
  }
  for (const auto& it : v.visible.items) {
    auto p = pos.find(it.key);
    if (p == pos.end()) continue;
    auto* box = new BoxItem(it, item_color(m, it, mode), &theme);
    box->setPos(p->second->x, p->second->y);
    box->setZValue(10);
    box->setData(kRoleKey, QString::fromStdString(it.key));
    box->setData(kRoleKind, it.kind == VisibleItem::Kind::Node    ? kKindNode
                            : it.kind == VisibleItem::Kind::Group ? kKindGroup
                                                                  : kKindTerminal);
    box->setData(kRoleIndex, it.index);
    scene.addItem(box);
    boxes.insert(QString::fromStdString(it.key), box);
  }
  const QFont label_font = node_font(false, 9.5);
  QPen edge_pen(theme.edge, 1.3);
  edge_pen.setCapStyle(Qt::RoundCap);
  for (const auto& e : L.edges) {
    if (e.points.size() < 4 || e.index < 0 || e.index >= static_cast<int>(v.visible.edges.size())) continue;
    QPainterPath path(QPointF(e.points[0].x, e.points[0].y));
    for (size_t i = 1; i + 2 < e.points.size(); i += 3)
      path.cubicTo(QPointF(e.points[i].x, e.points[i].y), QPointF(e.points[i + 1].x, e.points[i + 1].y),
                   QPointF(e.points[i + 2].x, e.points[i + 2].y));
    const auto& visible_edge = v.visible.edges[static_cast<size_t>(e.index)];
    QPen pen = edge_pen;
    if (visible_edge.nesting) {
      pen.setStyle(Qt::DashLine);
      pen.setColor(category_color(static_cast<int>(ops::OpCategory::ControlFlow)));
    }
    auto* edge = scene.addPath(path, pen);
    edge->setZValue(5);
    edge->setData(kRoleKind, kKindEdge);
    edge->setData(kRoleIndex, e.index);
    if (e.has_arrow && !visible_edge.nesting) {
      const QPointF tip(e.arrow_tip.x, e.arrow_tip.y);
      const QPointF base(e.points.back().x, e.points.back().y);
      QLineF dir(base, tip);
      if (dir.length() > 0.1) {
        const QPointF n = QPointF(-dir.dy(), dir.dx()) / dir.length() * 3.5;
        QPolygonF head;
        head << tip << base + n << base - n;
        auto* arrow = scene.addPolygon(head, QPen(theme.edge, 1), QBrush(theme.edge));
        arrow->setZValue(5);
      }
    }
    const auto& ve = v.visible.edges[static_cast<size_t>(e.index)];
    if (e.has_label && !ve.label.empty()) {
      auto* text = scene.addSimpleText(QString::fromStdString(ve.label), label_font);
      text->setBrush(theme.muted);
      const QRectF br = text->boundingRect();
      text->setPos(e.label_pos.x - br.width() / 2, e.label_pos.y - br.height() / 2);
      text->setZValue(6);
      text->setToolTip(QString::fromStdString(ve.value));
    }
  }
  return boxes;
}

}  // namespace ms::views
