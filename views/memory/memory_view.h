// The memory-reuse heatmap: one panel per run (PyNative pool, Graph arena as recorded, Graph arena
// as planned), side by side on one byte scale. In each panel x is op order or time (µs) and y the
// offset; every value is a block coloured by its producing node, its producer's op type or its
// region's reuse count (two pickers in the legend row, and the context menu). Under each heatmap
// the live-bytes curve with the peak, the lower bound and the arena/pool size as lines.
#pragma once

#include <QStringList>
#include <QWidget>

class QComboBox;

#include <vector>

#include "views/memory/memory_data.h"

namespace ms::views {

class MemoryView : public QWidget {
  Q_OBJECT
 public:
  enum class ColorBy { OpType, Node, Reuse };
  enum class XAxis { OpOrder, Time };
  explicit MemoryView(QWidget* parent = nullptr);

  void set_panels(std::vector<MemPanel> panels);
  const std::vector<MemPanel>& panels() const { return panels_; }
  void set_color_by(ColorBy c);
  ColorBy color_by() const { return color_by_; }
  // Time needs recorded timestamps: a panel without them stays in op order (its axis says so).
  void set_x_axis(XAxis x);
  XAxis x_axis() const { return x_axis_; }
  // The legend's entries as drawn (tests): "Conv", "layer1.0.conv1", "reused 4×"…
  QStringList legend_entries() const;
  // The x axis title of panel i as drawn, with its unit.
  QString x_axis_title(int panel) const;
  // Outlines the blocks the node produced (0: none).
  void set_selected_node(uint64_t node);
  uint64_t selected_node() const { return selected_; }
  bool export_png(const QString& path);
  QSize sizeHint() const override { return {1200, 700}; }
  // The block under a widget position, or null.
  const MemBlock* block_at(QPoint pos, int* panel = nullptr) const;

 Q_SIGNALS:
  void node_selected(uint64_t node);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void contextMenuEvent(QContextMenuEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

 private:
  struct Geometry {
    QRectF heat, curve;
  };
  Geometry geometry(int panel) const;
  QColor block_color(const MemBlock& b) const;
  int legend_height() const { return 48; }
  bool timed(const MemPanel& p) const { return x_axis_ == XAxis::Time && p.timed; }
  double bx0(const MemPanel& p, const MemBlock& b) const { return timed(p) ? b.t0 : b.x0; }
  double bx1(const MemPanel& p, const MemBlock& b) const { return timed(p) ? b.t1 : b.x1; }
  double xmax(const MemPanel& p) const { return timed(p) ? p.t_max : p.x_max; }
  void sync_pickers();
  void place_pickers();

  std::vector<MemPanel> panels_;
  ColorBy color_by_ = ColorBy::OpType;
  XAxis x_axis_ = XAxis::OpOrder;
  QComboBox* x_pick_ = nullptr;
  QComboBox* color_pick_ = nullptr;
  mutable QStringList legend_;
  uint64_t selected_ = 0;
  uint64_t y_max_ = 1;
};

}  // namespace ms::views
