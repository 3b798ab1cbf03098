#include "views/graph/minimap.h"

#include <QMouseEvent>
#include <QPainter>

namespace ms::views {

Minimap::Minimap(QGraphicsView* main, QWidget* parent) : QGraphicsView(main->scene(), parent), main_(main) {
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setInteractive(false);
  setRenderHint(QPainter::Antialiasing, false);
  setFrameShape(QFrame::StyledPanel);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move the view"));
  // The minimap redraws the whole scene at a tiny scale; caching the background keeps it cheap.
  setCacheMode(QGraphicsView::CacheBackground);
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
}

void Minimap::refit() {
  if (scene()) fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  viewport()->update();
}

void Minimap::drawForeground(QPainter* p, const QRectF&) {
  const QRectF visible = main_->mapToScene(main_->viewport()->rect()).boundingRect();
  p->setPen(QPen(QColor(0xff, 0x8c, 0x00), 0));
  p->setBrush(QColor(0xff, 0x8c, 0x00, 40));
  p->drawRect(visible);
}

void Minimap::mousePressEvent(QMouseEvent* e) {
  main_->centerOn(mapToScene(e->position().toPoint()));
  viewport()->update();
}

void Minimap::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) mousePressEvent(e);
}

void Minimap::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  refit();
}

void Minimap::wheelEvent(QWheelEvent* e) { e->ignore(); }

}  // namespace ms::views
