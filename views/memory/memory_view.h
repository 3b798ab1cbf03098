// The memory-reuse heatmap: one panel per run (PyNative pool, Graph arena as recorded, Graph arena
// as planned), side by side on one byte scale. In each panel x is op order and y the offset; every
// value is a block coloured by its producer's op type (or its region's reuse count). Under each
// heatmap the live-bytes curve with the peak, the lower bound and the arena/pool size as lines.
#pragma once

#include <QWidget>

#include <vector>

#include "views/memory/memory_data.h"

namespace ms::views {

class MemoryView : public QWidget {
  Q_OBJECT
 public:
  enum class ColorBy { OpType, Reuse };
  explicit MemoryView(QWidget* parent = nullptr);

  void set_panels(std::vector<MemPanel> panels);
  const std::vector<MemPanel>& panels() const { return panels_; }
  void set_color_by(ColorBy c);
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

 private:
  struct Geometry {
    QRectF heat, curve;
  };
  Geometry geometry(int panel) const;
  QColor block_color(const MemBlock& b) const;
  int legend_height() const { return 44; }

  std::vector<MemPanel> panels_;
  ColorBy color_by_ = ColorBy::OpType;
  uint64_t selected_ = 0;
  uint64_t y_max_ = 1;
};

}  // namespace ms::views
