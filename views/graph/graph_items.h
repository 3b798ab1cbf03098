// QGraphicsItems of the graph view: op nodes (coloured by category), collapsed groups, graph
// inputs/outputs, expanded-group frames and spline edges with shape labels. Built from a Layout.
#pragma once

#include <QColor>
#include <QGraphicsItem>
#include <QHash>
#include <QString>

#include "views/common/palette.h"
#include "views/layout/pipeline.h"

class QGraphicsScene;

namespace ms::views {

enum class ColorMode { Category, OpType };

// Colours of the canvas; dark follows the application palette.
struct GraphTheme {
  bool dark = false;
  QColor background, text, muted, edge, frame, selection, match;
  static GraphTheme from_palette();
};

// Item data roles: the DOT key and the kind of item.
enum ItemRole { kRoleKey = 0, kRoleKind = 1, kRoleIndex = 2 };
// kKindGhost: a node the shown pass removed, drawn in place but not selectable as a live node.
enum ItemKind { kKindNode = 1, kKindGroup = 2, kKindTerminal = 3, kKindCluster = 4, kKindEdge = 5, kKindGhost = 6 };

class BoxItem : public QGraphicsItem {
 public:
  BoxItem(const VisibleItem& item, QColor fill, const GraphTheme* theme);
  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  void set_highlight(bool on);
  void set_fill(QColor c) {
    fill_ = c;
    update();
  }
  QColor fill() const { return fill_; }
  // A removed node shown in place: dashed red outline, faded, not selectable.
  void set_ghost(bool on);
  bool ghost() const { return ghost_; }
  // An outline in `c` tying the box to others (a fused node and its origins); invalid: none.
  void set_link(QColor c) {
    link_ = c;
    update();
  }
  // The node ran on a fallback (runtime/fallback.h): a "fallback" badge in the top-right corner and
  // the reason in the tooltip; empty removes it.
  void set_badge(const QString& reason);
  QString badge() const { return badge_; }
  static QColor badge_color() { return QColor(0xe6, 0x7e, 0x22); }

 private:
  VisibleItem::Kind kind_;
  QRectF rect_;
  QStringList lines_;
  QColor fill_;
  const GraphTheme* theme_;
  bool highlight_ = false;
  bool ghost_ = false;
  QColor link_;
  QString badge_;
};

class ClusterItem : public QGraphicsItem {
 public:
  ClusterItem(const QRectF& r, const QString& title, int depth, bool subgraph, const GraphTheme* theme);
  QRectF boundingRect() const override { return rect_.adjusted(-1, -1, 1, 1); }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  QRectF title_rect() const;

 private:
  QRectF rect_;
  QString title_;
  int depth_;
  bool subgraph_;
  const GraphTheme* theme_;
};

// Builds every item into `scene` (cleared first). Returns box items by DOT key.
QHash<QString, BoxItem*> build_scene(QGraphicsScene& scene, const GraphModel& m, const PreparedView& v,
                                     const GraphTheme& theme, ColorMode mode);

QColor item_color(const GraphModel& m, const VisibleItem& item, ColorMode mode);

}  // namespace ms::views
