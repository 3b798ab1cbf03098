#include "views/memory/memory_view.h"

#include <QComboBox>
#include <QContextMenuEvent>
#include <QFileDialog>
#include <QFontMetricsF>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <map>

#include "views/common/axis.h"
#include "views/common/palette.h"
#include "views/common/save_file.h"

namespace ms::views {

namespace {

constexpr double kLeft = 78, kRight = 12, kTop = 44, kGap = 26;

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString bytes_label(double b) { return qs(format_bytes(b)); }

// The unit a time range (µs) reads best in: its divisor and name.
std::pair<double, QString> time_unit(double range_us) {
  if (range_us >= 2e6) return {1e6, QStringLiteral("s")};
  if (range_us >= 2e4) return {1e3, QStringLiteral("ms")};
  return {1.0, QStringLiteral("µs")};
}

QString time_text(double us) {
  const auto [div, unit] = time_unit(us);
  return QStringLiteral("%1 %2").arg(us / div, 0, 'f', us / div < 10 ? 2 : us / div < 100 ? 1 : 0).arg(unit);
}

}  // namespace

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(480, 320);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);  // follows the theme
  // The two pickers sit at the right end of the legend row.
  x_pick_ = new QComboBox(this);
  x_pick_->setObjectName(QStringLiteral("MemoryXAxis"));
  x_pick_->addItem(tr("x: op order"));
  x_pick_->addItem(tr("x: time"));
  x_pick_->setToolTip(tr("Time uses the recorded timestamps (the plan: the Graph run's op starts)"));
  color_pick_ = new QComboBox(this);
  color_pick_->setObjectName(QStringLiteral("MemoryColorBy"));
  color_pick_->addItem(tr("colour: op type"));
  color_pick_->addItem(tr("colour: producing node"));
  color_pick_->addItem(tr("colour: reuse of region"));
  connect(x_pick_, &QComboBox::activated, this, [this](int i) { set_x_axis(i == 1 ? XAxis::Time : XAxis::OpOrder); });
  connect(color_pick_, &QComboBox::activated, this, [this](int i) {
    set_color_by(i == 1 ? ColorBy::Node : i == 2 ? ColorBy::Reuse : ColorBy::OpType);
  });
  sync_pickers();
}

void MemoryView::sync_pickers() {
  x_pick_->setCurrentIndex(x_axis_ == XAxis::Time ? 1 : 0);
  color_pick_->setCurrentIndex(color_by_ == ColorBy::Node ? 1 : color_by_ == ColorBy::Reuse ? 2 : 0);
}

void MemoryView::place_pickers() {
  const QSize xs = x_pick_->sizeHint(), cs = color_pick_->sizeHint();
  const int y = height() - legend_height() + (legend_height() - xs.height()) / 2;
  color_pick_->setGeometry(width() - cs.width() - 8, y, cs.width(), cs.height());
  x_pick_->setGeometry(color_pick_->x() - xs.width() - 6, y, xs.width(), xs.height());
}

void MemoryView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  place_pickers();
}

void MemoryView::set_x_axis(XAxis x) {
  x_axis_ = x;
  sync_pickers();
  update();
}

QString MemoryView::x_axis_title(int panel) const {
  if (panel < 0 || panel >= static_cast<int>(panels_.size())) return {};
  const MemPanel& mp = panels_[static_cast<size_t>(panel)];
  if (timed(mp)) return tr("time (%1 from the iteration's start)").arg(time_unit(mp.t_max).second);
  return x_axis_ == XAxis::Time ? tr("op order (ops; no timestamps recorded)") : tr("op order (ops in one iteration)");
}

QStringList MemoryView::legend_entries() const { return legend_; }

void MemoryView::set_panels(std::vector<MemPanel> panels) {
  panels_ = std::move(panels);
  y_max_ = 1;
  for (const auto& p : panels_) y_max_ = std::max({y_max_, p.size_bytes, p.peak_bytes});
  update();
}

void MemoryView::set_color_by(ColorBy c) {
  color_by_ = c;
  sync_pickers();
  update();
}

void MemoryView::set_selected_node(uint64_t node) {
  if (node == selected_) return;
  selected_ = node;
  update();
}

bool MemoryView::export_png(const QString& path) { return save_image(path, grab().toImage()); }

MemoryView::Geometry MemoryView::geometry(int panel) const {
  const int n = std::max<int>(1, static_cast<int>(panels_.size()));
  const double w = (width() - kLeft * n - kRight * n) / n;
  const double x = panel * (w + kLeft + kRight) + kLeft;
  const double h = height() - kTop - legend_height() - 2 * kGap;
  Geometry g;
  g.heat = QRectF(x, kTop, w, h * 0.68);
  g.curve = QRectF(x, kTop + h * 0.68 + kGap + 6, w, h * 0.32 - 6);
  return g;
}

QColor MemoryView::block_color(const MemBlock& b) const {
  if (color_by_ == ColorBy::Reuse) {
    // Pale (used once) to deep blue (much reused).
    const double t = std::min(1.0, std::log2(static_cast<double>(std::max(1, b.reuse))) / 4.0);
    return QColor::fromHsvF(0.6, 0.15 + 0.8 * t, 0.95 - 0.35 * t);
  }
  if (color_by_ == ColorBy::Node) {
    if (!b.node) return QColor(190, 190, 190);
    // A stable, well spread hue per node (golden-ratio steps over its id).
    const double h = std::fmod(static_cast<double>(b.node) * 0.618033988749895, 1.0);
    return QColor::fromHsvF(static_cast<float>(h), 0.55f, 0.88f);
  }
  if (b.op.empty()) return QColor(190, 190, 190);
  return op_type_color(qs(b.op));
}

void MemoryView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const ChartColors cc = ChartColors::of(palette());
  p.fillRect(rect(), cc.base);
  p.setRenderHint(QPainter::Antialiasing, false);
  QFont small = font();
  small.setPointSizeF(std::max(7.0, font().pointSizeF() - 1));
  legend_.clear();
  if (panels_.empty()) {
    p.setPen(cc.muted);
    p.drawText(rect(), Qt::AlignCenter, tr("Run the model (PyNative, Graph or both) to see its memory."));
    return;
  }
  std::map<std::string, uint64_t> key_bytes;  // legend: op types (or nodes) by bytes
  std::map<std::string, const MemBlock*> key_block;
  const double ystep = byte_step(static_cast<double>(y_max_), 5);
  for (int i = 0; i < static_cast<int>(panels_.size()); ++i) {
    const MemPanel& mp = panels_[static_cast<size_t>(i)];
    const Geometry g = geometry(i);
    const double x_max = std::max(timed(mp) ? 1e-3 : 1.0, xmax(mp));
    const double sx = g.heat.width() / x_max;
    const double sy = g.heat.height() / static_cast<double>(y_max_);
    // Title and figures.
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(cc.text);
    // Up to the next panel's axis labels; elided (whole in the tooltip's figures) when narrower.
    const double title_w = g.heat.width() + kRight + kLeft / 2;
    p.drawText(QRectF(g.heat.left(), 2, title_w, 20), Qt::AlignLeft | Qt::AlignVCenter,
               p.fontMetrics().elidedText(qs(mp.title), Qt::ElideRight, static_cast<int>(title_w)));
    p.setFont(small);
    p.setPen(cc.muted);
    QString figures = tr("%1 blocks · reuse %2× · frag %3%")
                          .arg(mp.blocks.size())
                          .arg(mp.mean_reuse, 0, 'f', 1)
                          .arg(mp.fragmentation * 100, 0, 'f', 0);
    if (mp.timed) figures += tr(" · %1/iter").arg(time_text(mp.t_max));
    // Narrow panels (three side by side) elide the figures rather than cut them.
    figures = QFontMetricsF(small).elidedText(figures, Qt::ElideRight, g.heat.width() + kRight);
    p.drawText(QRectF(g.heat.left(), 20, g.heat.width() + kRight, 20), Qt::AlignLeft | Qt::AlignVCenter, figures);
    // Heatmap frame and byte axis (the shared scale).
    p.fillRect(g.heat, cc.panel);
    for (double v = 0; v <= static_cast<double>(y_max_) + 1; v += ystep) {
      const double y = g.heat.bottom() - v * sy;
      p.setPen(cc.grid);
      p.drawLine(QPointF(g.heat.left(), y), QPointF(g.heat.right(), y));
      p.setPen(cc.text);
      p.drawText(QRectF(g.heat.left() - kLeft, y - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                 bytes_label(v));
    }
    auto block_rect = [&](const MemBlock& b, double min_px) {
      return QRectF(g.heat.left() + bx0(mp, b) * sx, g.heat.bottom() - static_cast<double>(b.y + b.bytes) * sy,
                    std::max(min_px, (bx1(mp, b) - bx0(mp, b)) * sx),
                    std::max(min_px, static_cast<double>(b.bytes) * sy));
    };
    for (const MemBlock& b : mp.blocks) {
      const QRectF r = block_rect(b, 1.0);
      const QColor c = block_color(b);
      p.fillRect(r, c);
      if (r.width() > 4 && r.height() > 3) {
        p.setPen(c.darker(140));
        p.drawRect(r);
      }
      std::string key = color_by_ == ColorBy::Node
                            ? (b.node_name.empty() ? (b.node ? "#" + std::to_string(b.node) : "(none)") : b.node_name)
                            : (b.op.empty() ? "(none)" : b.op);
      key_bytes[key] += b.bytes;
      key_block.emplace(key, &b);
    }
    if (selected_)
      for (const MemBlock& b : mp.blocks)
        if (b.node == selected_ || std::find(b.origins.begin(), b.origins.end(), selected_) != b.origins.end()) {
          p.setPen(QPen(cc.text, 2));
          p.setBrush(Qt::NoBrush);
          p.drawRect(block_rect(b, 2.0).adjusted(-1, -1, 1, 1));
        }
    // Size line on the heatmap.
    p.setPen(QPen(cc.muted, 1, Qt::DashLine));
    const double ys = g.heat.bottom() - static_cast<double>(mp.size_bytes) * sy;
    p.drawLine(QPointF(g.heat.left(), ys), QPointF(g.heat.right(), ys));
    p.setPen(cc.text);
    p.setBrush(Qt::NoBrush);
    p.drawRect(g.heat);
    // x axis: op order or µs, ticks under the heatmap and the curve.
    // Time ticks step in the unit the range reads best in (µs, ms or s): labels stay short.
    const double unit = timed(mp) ? time_unit(x_max).first : 1.0;
    const double xstep = timed(mp) ? nice_step(x_max / unit, 5) * unit : std::max(1.0, nice_step(x_max, 6));
    auto ticks = [&](const QRectF& frame) {
      for (double x = 0; x <= x_max * (1 + 1e-9); x += xstep) {
        const double px = frame.left() + x * sx;
        p.drawLine(QPointF(px, frame.bottom()), QPointF(px, frame.bottom() + 3));
        const QString label =
            timed(mp) ? QString::number(x / unit, 'f', xstep / unit < 1 ? 1 : 0) : QString::number(x, 'f', 0);
        p.drawText(QRectF(px - 30, frame.bottom() + 3, 60, 14), Qt::AlignHCenter | Qt::AlignTop, label);
      }
    };
    ticks(g.heat);
    p.drawText(QRectF(g.heat.left(), g.heat.bottom() + 15, g.heat.width(), 14), Qt::AlignHCenter,
               p.fontMetrics().elidedText(x_axis_title(i), Qt::ElideRight, static_cast<int>(g.heat.width())));
    if (i == 0) {
      p.save();
      p.translate(12, g.heat.center().y());
      p.rotate(-90);
      p.drawText(QRectF(-110, -8, 220, 16), Qt::AlignCenter,
                 mp.arena ? tr("offset in the arena (bytes)") : tr("offset in the pool (bytes)"));
      p.restore();
    }
    // Live-bytes curve with peak, lower bound and size lines.
    const QRectF& c = g.curve;
    p.fillRect(c, cc.panel);
    const double cmax = static_cast<double>(y_max_) * 1.05;
    auto cy = [&](double v) { return c.bottom() - v / cmax * c.height(); };
    QPolygonF poly;
    poly << QPointF(c.left(), c.bottom());
    uint64_t prev = 0;
    for (const auto& [x, v] : timed(mp) ? mp.live_t : mp.live) {
      const double px = c.left() + x * sx;
      poly << QPointF(px, cy(static_cast<double>(prev))) << QPointF(px, cy(static_cast<double>(v)));
      prev = v;
    }
    poly << QPointF(c.right(), cy(static_cast<double>(prev))) << QPointF(c.right(), c.bottom());
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(QColor(40, 90, 170), 1.2));
    p.setBrush(QColor(90, 140, 220, 90));
    p.drawPolygon(poly);
    p.setBrush(Qt::NoBrush);
    auto hline = [&](double v, QColor col, Qt::PenStyle st, const QString& label, bool above) {
      const double y = cy(v);
      p.setPen(QPen(col, 1.3, st));
      p.drawLine(QPointF(c.left(), y), QPointF(c.right(), y));
      p.setPen(cc.base.lightness() < 128 ? col.lighter(140) : col.darker(120));  // readable in either theme
      p.drawText(QRectF(c.left() + 4, above ? y - 14 : y + 1, c.width() - 8, 13), Qt::AlignRight, label);
    };
    hline(static_cast<double>(mp.size_bytes), cc.muted, Qt::DashLine,
          (mp.arena ? tr("arena %1") : tr("pool %1")).arg(bytes_label(static_cast<double>(mp.size_bytes))), true);
    hline(static_cast<double>(mp.peak_bytes), QColor(200, 40, 40), Qt::SolidLine,
          (mp.lower_bound == mp.peak_bytes ? tr("peak live = lower bound %1") : tr("peak live %1"))
              .arg(bytes_label(static_cast<double>(mp.peak_bytes))),
          mp.size_bytes - mp.peak_bytes > y_max_ / 8);
    if (mp.lower_bound && mp.lower_bound != mp.peak_bytes)
      hline(static_cast<double>(mp.lower_bound), QColor(20, 140, 60), Qt::DotLine,
            tr("lower bound %1").arg(bytes_label(static_cast<double>(mp.lower_bound))), false);
    p.setRenderHint(QPainter::Antialiasing, false);
    p.setPen(cc.text);
    p.drawRect(c);
    p.drawText(QRectF(c.left() - kLeft, c.top(), kLeft - 6, 14), Qt::AlignRight, bytes_label(cmax));
    p.drawText(QRectF(c.left() - kLeft, c.bottom() - 14, kLeft - 6, 14), Qt::AlignRight, QStringLiteral("0 B"));
    p.drawText(
        QRectF(c.left(), c.bottom() + 2, c.width(), 14), Qt::AlignHCenter,
        timed(mp) ? tr("live bytes over time (%1)").arg(time_unit(mp.t_max).second) : tr("live bytes over op order"));
  }
  // Legend: what the colours mean, up to the pickers at the right.
  const double right = x_pick_->x() - 10;
  double x = kLeft;
  const double y = height() - legend_height() + (legend_height() - 12) / 2.0;
  p.setFont(small);
  p.setPen(cc.text);
  const QString title = color_by_ == ColorBy::Reuse  ? tr("reuse count of the region:")
                        : color_by_ == ColorBy::Node ? tr("producing node (most bytes):")
                                                     : tr("producer's op type:");
  const double title_w = p.fontMetrics().horizontalAdvance(title);
  p.drawText(QPointF(std::max(8.0, kLeft - title_w - 8), y + 11), title);
  if (title_w + 16 > kLeft) x = 8 + title_w + 10;
  if (color_by_ == ColorBy::Reuse) {
    for (int r : {1, 2, 4, 8, 16}) {
      MemBlock b;
      b.reuse = r;
      const QString name = r == 1 ? tr("used once") : r == 16 ? tr("%1×+").arg(r) : tr("%1×").arg(r);
      const double w = p.fontMetrics().horizontalAdvance(name) + 30;
      if (x + w > right) break;
      p.fillRect(QRectF(x, y, 14, 12), block_color(b));
      p.setPen(cc.text);
      p.drawText(QPointF(x + 18, y + 11), name);
      legend_ << name;
      x += w;
    }
    return;
  }
  std::vector<std::pair<uint64_t, std::string>> keys;
  for (const auto& [k, b] : key_bytes) keys.emplace_back(b, k);
  std::sort(keys.rbegin(), keys.rend());
  for (size_t i = 0; i < keys.size() && i < 12; ++i) {
    const QString name = QFontMetricsF(small).elidedText(qs(keys[i].second), Qt::ElideMiddle, 150);
    const double w = p.fontMetrics().horizontalAdvance(name) + 30;
    if (x + w > right) break;
    p.fillRect(QRectF(x, y, 14, 12), block_color(*key_block[keys[i].second]));
    p.setPen(cc.text);
    p.drawText(QPointF(x + 18, y + 11), name);
    legend_ << qs(keys[i].second);
    x += w;
  }
}

const MemBlock* MemoryView::block_at(QPoint pos, int* panel) const {
  for (int i = 0; i < static_cast<int>(panels_.size()); ++i) {
    const Geometry g = geometry(i);
    if (!g.heat.contains(pos)) continue;
    const MemPanel& mp = panels_[static_cast<size_t>(i)];
    const double x = (pos.x() - g.heat.left()) / g.heat.width() * xmax(mp);
    const double sy = g.heat.height() / static_cast<double>(y_max_);
    const double y = (g.heat.bottom() - pos.y()) / sy;
    const double tol = 1.5 / sy;  // thin blocks stay hoverable
    for (const MemBlock& b : mp.blocks)
      if (x >= bx0(mp, b) && x < bx1(mp, b) && y >= static_cast<double>(b.y) - tol &&
          y < static_cast<double>(b.y + b.bytes) + tol) {
        if (panel) *panel = i;
        return &b;
      }
  }
  return nullptr;
}

void MemoryView::mouseMoveEvent(QMouseEvent* e) {
  int panel = 0;
  const MemBlock* b = block_at(e->position().toPoint(), &panel);
  if (!b) {
    QToolTip::hideText();
    return;
  }
  QString life = tr("live over ops %1–%2").arg(b->x0, 0, 'f', 0).arg(b->x1, 0, 'f', 0);
  if (panels_[static_cast<size_t>(panel)].timed)
    life += tr(", %1 – %2 into the iteration").arg(time_text(b->t0), time_text(b->t1));
  QToolTip::showText(e->globalPosition().toPoint(),
                     tr("<b>%1</b><br>node %2 (%3)<br>%4 at offset %5<br>%6<br>region reused %7×")
                         .arg(qs(b->value).toHtmlEscaped(), qs(b->node_name).toHtmlEscaped(), qs(b->op))
                         .arg(bytes_label(static_cast<double>(b->bytes)), bytes_label(static_cast<double>(b->y)), life)
                         .arg(b->reuse),
                     this);
}

void MemoryView::contextMenuEvent(QContextMenuEvent* e) {
  QMenu menu(this);
  QAction* op = menu.addAction(tr("Colour by producer's op type"));
  QAction* node = menu.addAction(tr("Colour by producing node"));
  QAction* reuse = menu.addAction(tr("Colour by reuse of the region"));
  menu.addSeparator();
  QAction* order = menu.addAction(tr("x: op order"));
  QAction* time = menu.addAction(tr("x: time (recorded)"));
  for (QAction* a : {op, node, reuse, order, time}) a->setCheckable(true);
  op->setChecked(color_by_ == ColorBy::OpType);
  node->setChecked(color_by_ == ColorBy::Node);
  reuse->setChecked(color_by_ == ColorBy::Reuse);
  order->setChecked(x_axis_ == XAxis::OpOrder);
  time->setChecked(x_axis_ == XAxis::Time);
  menu.addSeparator();
  QAction* save = menu.addAction(tr("Export as PNG…"));
  QAction* chosen = menu.exec(e->globalPos());
  if (chosen == op)
    set_color_by(ColorBy::OpType);
  else if (chosen == node)
    set_color_by(ColorBy::Node);
  else if (chosen == reuse)
    set_color_by(ColorBy::Reuse);
  else if (chosen == order)
    set_x_axis(XAxis::OpOrder);
  else if (chosen == time)
    set_x_axis(XAxis::Time);
  else if (chosen == save) {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Memory View"), QStringLiteral("memory.png"),
                                                      tr("PNG images (*.png)"));
    if (!path.isEmpty()) export_png(path);
  }
}

void MemoryView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  const MemBlock* b = block_at(e->position().toPoint());
  // A fused producer is selected through its first original node, which every view knows.
  const uint64_t node = !b ? 0 : b->origins.empty() ? b->node : b->origins.front();
  set_selected_node(node);
  Q_EMIT node_selected(node);
}

}  // namespace ms::views
