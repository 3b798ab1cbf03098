// A small overview of the whole scene with the main view's visible area outlined; click or drag
// to move the main view there.
#pragma once

#include <QGraphicsView>

namespace ms::views {

class Minimap : public QGraphicsView {
  Q_OBJECT
 public:
  Minimap(QGraphicsView* main, QWidget* parent = nullptr);
  void refit();

 protected:
  void drawForeground(QPainter* p, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  QGraphicsView* main_;
};

}  // namespace ms::views
