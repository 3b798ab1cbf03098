#include "views/train/loss_curve.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <array>
#include <cmath>

#include "views/common/axis.h"

namespace ms::views {

namespace {

// A mode's colour ("PyNative", "Graph"); the ranks of a data-parallel run ("Graph rank 2") in
// lighter shades of it, rank 0 in the mode's own.
QColor color_for(const QString& name, size_t index) {
  QColor c;
  if (name.startsWith(QLatin1String("PyNative"), Qt::CaseInsensitive))
    c = QColor(0x1f, 0x77, 0xb4);
  else if (name.startsWith(QLatin1String("Graph"), Qt::CaseInsensitive))
    c = QColor(0xe6, 0x7e, 0x22);
  else
    return std::array{QColor(0x2c, 0xa0, 0x2c), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b)}[index % 3];
  const qsizetype at = name.lastIndexOf(QLatin1String(" rank "));
  bool number = false;
  const int rank = at < 0 ? 0 : name.mid(at + 6).toInt(&number);
  return number && rank > 0 ? c.lighter(100 + 45 * (1 + (rank - 1) % 3)) : c;
}

}  // namespace

LossCurveView::LossCurveView(QWidget* parent) : QWidget(parent) {
  setMinimumSize(320, 200);
  setAutoFillBackground(true);
}

QColor LossCurveView::color(const QString& name) const {
  for (const auto& s : series_)
    if (s.name == name) return s.color;
  return {};
}

LossCurveView::Series* LossCurveView::find(const QString& name) {
  for (auto& s : series_)
    if (s.name == name) return &s;
  return nullptr;
}

void LossCurveView::begin_series(const QString& name) {
  if (Series* s = find(name)) {
    s->points.clear();
    s->summary.clear();
  } else {
    series_.push_back({name, color_for(name, series_.size()), {}, {}});
  }
  update();
}

void LossCurveView::add_point(const QString& name, int step, double loss) {
  Series* s = find(name);
  if (!s) {
    begin_series(name);
    s = find(name);
  }
  s->points.emplace_back(step, loss);
  update();
}

void LossCurveView::set_summary(const QString& name, const QString& text) {
  if (Series* s = find(name)) s->summary = text;
  update();
}

void LossCurveView::clear() {
  series_.clear();
  update();
}

void LossCurveView::set_log_scale(bool on) {
  log_ = on;
  update();
}

int LossCurveView::point_count(const QString& name) const {
  for (const auto& s : series_)
    if (s.name == name) return static_cast<int>(s.points.size());
  return 0;
}

QStringList LossCurveView::names() const {
  QStringList out;
  for (const auto& s : series_) out << s.name;
  return out;
}

std::vector<std::pair<int, double>> LossCurveView::points(const QString& name) const {
  for (const auto& s : series_)
    if (s.name == name) return s.points;
  return {};
}

QString LossCurveView::summary(const QString& name) const {
  for (const auto& s : series_)
    if (s.name == name) return s.summary;
  return {};
}

void LossCurveView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  const QFontMetrics fm(font());
  const int left = fm.horizontalAdvance(QStringLiteral("0.0000")) + 24, right = 16, top = 28;
  const int bottom = fm.height() * 2 + 18;
  const QRect plot(left, top, std::max(10, width() - left - right), std::max(10, height() - top - bottom));
  p.setPen(palette().text().color());
  p.drawText(QRect(left, 4, plot.width(), top - 6), Qt::AlignLeft | Qt::AlignVCenter,
             tr("Training loss per step%1").arg(log_ ? tr(" (log scale)") : QString()));

  int max_step = 1;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series_)
    for (const auto& [step, loss] : s.points) {
      if (!std::isfinite(loss) || (log_ && loss <= 0)) continue;
      max_step = std::max(max_step, step);
      lo = std::min(lo, loss);
      hi = std::max(hi, loss);
    }
  if (!std::isfinite(lo)) {
    p.setPen(palette().placeholderText().color());
    p.drawText(plot, Qt::AlignCenter,
               tr("Train a zoo template: the loss of each step appears here, PyNative and Graph "
                  "mode side by side."));
    p.drawRect(plot);
    return;
  }
  auto ty = [&](double v) { return log_ ? std::log10(v) : v; };
  double y0 = ty(lo), y1 = ty(hi);
  if (y1 - y0 < 1e-9) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  if (!log_) y0 = std::min(0.0, y0);
  const double pad = (y1 - y0) * 0.05;
  y1 += pad;
  auto px = [&](double step) { return plot.left() + (step - 1) / std::max(1, max_step - 1) * plot.width(); };
  auto py = [&](double v) { return plot.bottom() - (ty(v) - y0) / (y1 - y0) * plot.height(); };

  // Grid and axes.
  QPen grid(palette().mid().color(), 1, Qt::DotLine);
  const double ystep = nice_step(y1 - y0, 6);
  for (double v = std::ceil(y0 / ystep) * ystep; v <= y1 + 1e-12; v += ystep) {
    const double yy = plot.bottom() - (v - y0) / (y1 - y0) * plot.height();
    p.setPen(grid);
    p.drawLine(QPointF(plot.left(), yy), QPointF(plot.right(), yy));
    p.setPen(palette().text().color());
    const QString label = log_ ? QString::number(std::pow(10.0, v), 'g', 3) : QString::number(v, 'g', 4);
    p.drawText(QRectF(0, yy - fm.height() / 2.0, left - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter, label);
  }
  const double xstep = std::max(1.0, nice_step(max_step - 1, 8));
  for (double s = 1; s <= max_step + 1e-9; s += xstep) {
    const double xx = px(s);
    p.setPen(grid);
    p.drawLine(QPointF(xx, plot.top()), QPointF(xx, plot.bottom()));
    p.setPen(palette().text().color());
    p.drawText(QRectF(xx - 40, plot.bottom() + 4, 80, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
               QString::number(static_cast<int>(s)));
  }
  p.setPen(palette().text().color());
  p.drawRect(plot);
  p.drawText(QRect(plot.left(), plot.bottom() + fm.height() + 6, plot.width(), fm.height()), Qt::AlignHCenter,
             tr("step"));
  p.save();
  p.translate(12, plot.center().y());
  p.rotate(-90);
  p.drawText(QRect(-plot.height() / 2, -fm.height(), plot.height(), fm.height() + 2), Qt::AlignHCenter, tr("loss"));
  p.restore();

  // Curves.
  p.setClipRect(plot.adjusted(-1, -1, 1, 1));
  for (const auto& s : series_) {
    QPainterPath path;
    bool first = true;
    for (const auto& [step, loss] : s.points) {
      if (!std::isfinite(loss) || (log_ && loss <= 0)) continue;
      const QPointF pt(px(step), py(loss));
      if (first)
        path.moveTo(pt);
      else
        path.lineTo(pt);
      first = false;
    }
    // Graph mode dashed over a wider PyNative line: equal curves (same seed, same batches) stay visible.
    const bool graph = s.name.startsWith(QLatin1String("Graph"), Qt::CaseInsensitive);
    p.setPen(QPen(s.color, graph ? 1.5 : 3.0, graph ? Qt::DashLine : Qt::SolidLine));
    p.drawPath(path);
  }
  p.setClipping(false);

  // Legend, top right inside the plot.
  int ly = plot.top() + 8;
  for (const auto& s : series_) {
    const QString last = s.points.empty() ? QStringLiteral("–") : QString::number(s.points.back().second, 'f', 4);
    QString text = tr("%1: %2 steps, last loss %3").arg(s.name).arg(s.points.size()).arg(last);
    if (!s.summary.isEmpty()) text += QStringLiteral(" · ") + s.summary;
    const int w = fm.horizontalAdvance(text) + 30;
    const QRect box(plot.right() - w - 8, ly, w, fm.height() + 6);
    QColor behind = palette().base().color();  // the legend's box in the theme's background
    behind.setAlpha(220);
    p.fillRect(box, behind);
    p.setPen(QPen(s.color, 3));
    p.drawLine(box.left() + 6, box.center().y(), box.left() + 20, box.center().y());
    p.setPen(palette().text().color());
    p.drawText(box.adjusted(26, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
    ly += fm.height() + 8;
  }
}

}  // namespace ms::views
