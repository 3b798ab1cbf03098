// Export of the whole graph (not just the visible part): SVG through QSvgGenerator, PNG at a scale
// that keeps labels readable (capped so the image stays allocatable), DOT text as laid out.
#include <QBuffer>
#include <QGraphicsScene>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>

#include "views/common/save_file.h"
#include "views/graph/graph_view.h"

namespace ms::views {

namespace {

QRectF export_rect(const QGraphicsScene& scene) { return scene.itemsBoundingRect().adjusted(-24, -24, 24, 24); }

}  // namespace

bool GraphView::export_svg(const QString& path) const {
  if (scene_->items().isEmpty()) return false;
  const QRectF r = export_rect(*scene_);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(r.size().toSize());
  svg.setViewBox(QRectF(QPointF(0, 0), r.size()));
  svg.setTitle(model_ ? QString::fromStdString(model_->graph->name) : QString());
  svg.setDescription(QStringLiteral("Modescope graph"));
  QPainter p;
  if (!p.begin(&svg)) return false;
  p.fillRect(QRectF(QPointF(0, 0), r.size()), theme_.background);
  scene_->render(&p, QRectF(QPointF(0, 0), r.size()), r);
  return p.end() && save_bytes(path, bytes);
}

bool GraphView::export_png(const QString& path, double max_pixels) const {
  if (scene_->items().isEmpty()) return false;
  const QRectF r = export_rect(*scene_);
  // 1.5x the scene scale reads well; shrink only when the long side would pass max_pixels, and
  // cap the area so a huge graph still fits in memory (~400 MB at 4 bytes a pixel).
  double scale = 1.5;
  scale = std::min(scale, max_pixels / std::max(r.width(), r.height()));
  const double max_area = 100e6;
  if (r.width() * r.height() * scale * scale > max_area) scale = std::sqrt(max_area / (r.width() * r.height()));
  const QSize size(std::max(1, static_cast<int>(r.width() * scale)), std::max(1, static_cast<int>(r.height() * scale)));
  QImage img(size, QImage::Format_ARGB32_Premultiplied);
  if (img.isNull()) return false;
  img.fill(theme_.background);
  QPainter p(&img);
  p.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  scene_->render(&p, QRectF(QPointF(0, 0), QSizeF(size)), r);
  p.end();
  return save_image(path, img, "PNG");
}

}  // namespace ms::views
