#include "views/timeline/timeline_view.h"

#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QResizeEvent>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>

#include "views/common/axis.h"
#include "views/common/palette.h"
#include "views/common/save_file.h"

namespace ms::views {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

// "12.5 µs", "3.20 ms".
QString time_label(double ns) {
  const double a = std::abs(ns);
  if (a >= 1e9) return QStringLiteral("%1 s").arg(ns / 1e9, 0, 'f', a >= 1e10 ? 1 : 2);
  if (a >= 1e6) return QStringLiteral("%1 ms").arg(ns / 1e6, 0, 'f', a >= 1e7 ? 1 : 2);
  if (a >= 1e3) return QStringLiteral("%1 µs").arg(ns / 1e3, 0, 'f', a >= 1e4 ? 1 : 2);
  return QStringLiteral("%1 ns").arg(ns, 0, 'f', 0);
}

QColor event_color(const prof::Trace& t, const prof::Event& e) {
  if (e.kind == prof::EventKind::Run) return QColor(200, 200, 205);
  QColor c = op_type_color(qs(t.str(e.name)));
  if (e.kind == prof::EventKind::Kernel) c = c.lighter(115);
  return c;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  canvas_ = new TimelineCanvas(this, model_);
  stats_ = new QLabel(this);
  stats_->setWordWrap(true);
  stats_->setTextFormat(Qt::RichText);
  stats_->setMargin(6);
  stats_->setAutoFillBackground(true);
  stats_->setText(
      tr("Wheel: zoom around the cursor · drag: pan · Shift+drag or right-drag: select a range · "
         "double-click: fit"));
  layout->addWidget(canvas_, 1);
  layout->addWidget(stats_);
  legend_timer_ = new QTimer(this);
  legend_timer_->setInterval(200);
  connect(legend_timer_, &QTimer::timeout, this, [this] {
    if (model_.recount_legend()) canvas_->update();
    if (!model_.legend_pending()) legend_timer_->stop();
  });
}

TimelineView::~TimelineView() { cancel_stats(); }

void TimelineView::set_runs(std::vector<std::pair<std::string, prof::TracePtr>> runs) {
  cancel_stats();
  model_.set_runs(std::move(runs));
  canvas_->sel0 = canvas_->sel1 = 0;
  canvas_->reset_view();
  if (model_.runs().empty()) stats_->clear();
}

void TimelineView::add_windowed_run(std::string label, std::shared_ptr<TimelineWindowSource> source) {
  cancel_stats();
  model_.add_windowed_run(std::move(label), std::move(source));
  canvas_->reset_view();
  if (model_.legend_pending()) legend_timer_->start();
}

void TimelineView::load_window() {
  if (!model_.windowed()) return;
  last_load_ = model_.load_window(canvas_->t0(), canvas_->t1(), canvas_->time_width());
  ++window_loads_;
}

void TimelineView::set_fallbacks(std::map<std::string, std::string> by_op,
                                 std::unordered_map<uint64_t, std::string> by_node) {
  canvas_->fallbacks = std::move(by_op);
  canvas_->fallback_nodes = std::move(by_node);
  canvas_->update();
}

const std::string* TimelineCanvas::fallback_of(const prof::Trace& t, const prof::Event& e) const {
  if ((fallbacks.empty() && fallback_nodes.empty()) ||
      (e.kind != prof::EventKind::Op && e.kind != prof::EventKind::Kernel))
    return nullptr;
  const prof::NodeInfo* n = t.node_of(e);
  if (n)
    if (auto node = fallback_nodes.find(n->id); node != fallback_nodes.end()) return &node->second;
  auto it = fallbacks.find(n ? n->op : std::string(t.str(e.name)));
  return it == fallbacks.end() ? nullptr : &it->second;
}

int TimelineCanvas::fallback_items() const {
  int n = 0;
  for (const DrawItem& it : draw_list().items) {
    const TimelineRow& row = model_.rows()[static_cast<size_t>(it.row)];
    const prof::Trace& t = *model_.runs()[static_cast<size_t>(row.run)].trace;
    n += fallback_of(t, t.events[it.event]) != nullptr;
  }
  return n;
}

void TimelineView::set_selected_node(uint64_t node) {
  canvas_->selected_node = node;
  canvas_->update();
}

bool TimelineCanvas::highlights(const prof::Trace& t, const prof::Event& e) const {
  if (!selected_node) return false;
  const prof::NodeInfo* n = t.node_of(e);
  return n &&
         (n->id == selected_node || std::find(n->origins.begin(), n->origins.end(), selected_node) != n->origins.end());
}

int TimelineCanvas::highlighted_items() const {
  int n = 0;
  if (!selected_node) return 0;
  for (const DrawItem& it : draw_list().items) {
    const TimelineRow& row = model_.rows()[static_cast<size_t>(it.row)];
    const prof::Trace& t = *model_.runs()[static_cast<size_t>(row.run)].trace;
    n += highlights(t, t.events[it.event]);
  }
  return n;
}

void TimelineView::select_range(int64_t t0, int64_t t1) {
  canvas_->sel0 = std::min(t0, t1);
  canvas_->sel1 = std::max(t0, t1);
  show_stats();
  canvas_->update();
}

QString TimelineView::stats_text() const { return stats_->text(); }

void TimelineView::cancel_stats() {
  ++stats_generation_;
  if (stats_cancel_) stats_cancel_->store(true);
  stats_cancel_.reset();
  stats_pending_ = false;
}

void TimelineView::show_stats() {
  cancel_stats();
  if (!model_.windowed()) {
    render_stats(model_.stats(canvas_->sel0, canvas_->sel1));
    return;
  }
  const uint64_t generation = stats_generation_;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  stats_cancel_ = cancel;
  stats_pending_ = true;
  RangeStats pending;
  pending.t0 = std::min(canvas_->sel0, canvas_->sel1);
  pending.t1 = std::max(canvas_->sel0, canvas_->sel1);
  render_stats(pending);
  QtConcurrent::run([job = model_.stats_job(canvas_->sel0, canvas_->sel1), cancel] {
    return job([cancel] { return cancel->load(std::memory_order_relaxed); });
  }).then(this, [this, generation](const RangeStats& st) {
    if (generation != stats_generation_) return;  // a newer range's count superseded it
    stats_pending_ = false;
    stats_cancel_.reset();
    render_stats(st);
  });
}

void TimelineView::render_stats(const RangeStats& st) {
  QString html = tr("<b>Range %1 – %2</b> (%3)")
                     .arg(time_label(static_cast<double>(st.t0)), time_label(static_cast<double>(st.t1)),
                          time_label(static_cast<double>(st.t1 - st.t0)));
  if (stats_pending_) html += QStringLiteral("<br>") + tr("counting the range's events…");
  for (size_t r = 0; r < st.per_run.size() && r < model_.runs().size(); ++r) {
    const QString label = qs(model_.runs()[r].label).toHtmlEscaped();
    if (r < st.errors.size() && !st.errors[r].empty()) {
      html += QStringLiteral("<br><b>%1</b>: ").arg(label) +
              tr("the range's statistics could not be counted: %1").arg(qs(st.errors[r]).toHtmlEscaped());
      continue;
    }
    int64_t n = 0;
    for (const auto& o : st.per_run[r]) n += o.count;
    html += QStringLiteral("<br><b>%1</b>: %2 events; ").arg(label).arg(n);
    for (size_t i = 0; i < st.per_run[r].size() && i < 6; ++i) {
      const OpShare& o = st.per_run[r][i];
      html += QStringLiteral("%1 ×%2 %3 (%4%)  ")
                  .arg(qs(o.name).toHtmlEscaped())
                  .arg(o.count)
                  .arg(time_label(static_cast<double>(o.ns)))
                  .arg(o.share * 100, 0, 'f', 1);
    }
  }
  stats_->setText(html);
}

bool TimelineView::export_png(const QString& path) { return save_image(path, grab().toImage()); }

TimelineCanvas::TimelineCanvas(TimelineView* owner, const TimelineModel& model)
    : QWidget(owner), owner_(owner), model_(model) {
  setMouseTracking(true);
  setMinimumSize(400, 200);
}

void TimelineCanvas::reset_view() { set_window(0, static_cast<double>(std::max<int64_t>(1, model_.span_ns())) * 1.01); }

void TimelineCanvas::set_window(double t0, double t1) {
  if (t1 - t0 < 10) t1 = t0 + 10;  // 10 ns is as far as zoom goes
  t0_ = t0;
  t1_ = t1;
  owner_->load_window();  // a windowed run fetches what this window needs
  update();
}

void TimelineCanvas::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  owner_->load_window();
}

void TimelineCanvas::zoom_at(double x_px, double factor) {
  const double t = t_of(x_px);
  set_window(t - (t - t0_) * factor, t + (t1_ - t) * factor);
}

double TimelineCanvas::row_height() const {
  const int n = std::max<int>(1, static_cast<int>(model_.rows().size()));
  const int runs = std::max<int>(1, static_cast<int>(model_.runs().size()));
  return std::clamp((height() - kAxis - kLegend - 18.0 * runs) / n, 6.0, 26.0);
}

double TimelineCanvas::row_top(int row) const {
  const int run = model_.rows()[static_cast<size_t>(row)].run;
  return kAxis + 18.0 * (run + 1) + row * row_height();
}

int TimelineCanvas::row_at(double y) const {
  for (int r = 0; r < static_cast<int>(model_.rows().size()); ++r)
    if (y >= row_top(r) && y < row_top(r) + row_height()) return r;
  return -1;
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const ChartColors cc = ChartColors::of(palette());
  p.fillRect(rect(), cc.base);
  if (model_.rows().empty()) {
    p.setPen(cc.muted);
    p.drawText(rect(), Qt::AlignCenter, tr("Run the model, or open a trace, to see its timeline."));
    return;
  }
  QFont small = font();
  small.setPointSizeF(std::max(7.0, font().pointSizeF() - 1));
  p.setFont(small);
  const double rh = row_height();
  // Step one: cull and fold. Step two (below): paint the list.
  const DrawList list = draw_list();
  // Time axis with a grid.
  const double step = nice_step(t1_ - t0_, std::max(2, static_cast<int>(time_width() / 110)));
  for (double t = std::ceil(t0_ / step) * step; t <= t1_; t += step) {
    const double x = x_of(t);
    p.setPen(cc.grid);
    p.drawLine(QPointF(x, kAxis), QPointF(x, height()));
    p.setPen(cc.text);
    p.drawLine(QPointF(x, kAxis - 5), QPointF(x, kAxis));
    p.drawText(QRectF(x - 50, 4, 100, kAxis - 9), Qt::AlignCenter, time_label(t));
  }
  p.drawLine(QPointF(kLabel, kAxis), QPointF(width(), kAxis));
  p.drawText(QRectF(4, 4, kLabel - 8, kAxis - 8), Qt::AlignLeft | Qt::AlignVCenter, tr("time from run start"));
  // Run bands and row labels.
  for (int run = 0; run < static_cast<int>(model_.runs().size()); ++run) {
    int first = -1;
    for (int r = 0; r < static_cast<int>(model_.rows().size()); ++r)
      if (model_.rows()[static_cast<size_t>(r)].run == run) {
        first = r;
        break;
      }
    if (first < 0) continue;
    const double y = row_top(first) - 18;
    p.fillRect(QRectF(0, y, width(), 18), cc.band);
    QFont bold = small;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(cc.text);
    const auto& r = model_.runs()[static_cast<size_t>(run)];
    p.drawText(QRectF(4, y, width() - 8, 18), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("%1 — %2 events over %3")
                   .arg(qs(r.label))
                   .arg(model_.run_event_count(run))
                   .arg(time_label(static_cast<double>(r.source ? r.source->span().second - r.origin_ns
                                                                : r.trace->end_ns() - r.origin_ns))));
    p.setFont(small);
  }
  for (int r = 0; r < static_cast<int>(model_.rows().size()); ++r) {
    const TimelineRow& row = model_.rows()[static_cast<size_t>(r)];
    if (!row.label.empty() && rh >= 9) {
      p.setPen(cc.text);
      p.drawText(QRectF(8, row_top(r), kLabel - 12, rh), Qt::AlignLeft | Qt::AlignVCenter,
                 p.fontMetrics().elidedText(qs(row.label), Qt::ElideMiddle, kLabel - 12));
    }
    if (row.counter && !row.samples.empty() && row.max_value > 0) {
      QPolygonF poly;
      const double top = row_top(r) + 1, bottom = row_top(r) + rh - 1;
      poly << QPointF(kLabel, bottom);
      double prev = 0;
      for (const auto& [t, v] : row.samples) {
        const double x =
            std::clamp(x_of(static_cast<double>(t)), static_cast<double>(kLabel), static_cast<double>(width()));
        poly << QPointF(x, bottom - prev / row.max_value * (bottom - top))
             << QPointF(x, bottom - v / row.max_value * (bottom - top));
        prev = v;
      }
      poly << QPointF(width(), bottom - prev / row.max_value * (bottom - top)) << QPointF(width(), bottom);
      p.setPen(QColor(40, 90, 170));
      p.setBrush(QColor(90, 140, 220, 110));
      p.drawPolygon(poly);
      p.setBrush(Qt::NoBrush);
    }
  }
  // Step two: paint the draw list.
  p.save();
  p.setClipRect(QRectF(kLabel, kAxis, width() - kLabel, height() - kAxis));
  for (const DrawItem& it : list.items) {
    const TimelineRow& row = model_.rows()[static_cast<size_t>(it.row)];
    const prof::Trace& t = *model_.runs()[static_cast<size_t>(row.run)].trace;
    const prof::Event& e = t.events[it.event];
    const QRectF r(kLabel + it.x0, row_top(it.row) + 1, std::max(1.0f, it.x1 - it.x0), rh - 2);
    QColor c = event_color(t, e);
    if (it.count > 1) c = c.darker(115);
    p.fillRect(r, c);
    if (r.width() > 30 && rh >= 10) {
      p.setPen(Qt::black);
      const QString text = it.count > 1 ? QStringLiteral("%1 events").arg(it.count) : qs(t.str(e.name));
      p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 p.fontMetrics().elidedText(text, Qt::ElideRight, static_cast<int>(r.width()) - 5));
    }
    if (fallback_of(t, e)) {
      // A fallback: an orange corner over the item's top left.
      const double k = std::min(7.0, std::min(r.width(), r.height()));
      p.setPen(Qt::NoPen);
      p.setBrush(QColor(0xe6, 0x7e, 0x22));
      p.drawPolygon(QPolygonF({r.topLeft(), r.topLeft() + QPointF(k, 0), r.topLeft() + QPointF(0, k)}));
      p.setBrush(Qt::NoBrush);
    }
    if (highlights(t, e)) {
      p.setPen(QPen(palette().color(QPalette::WindowText), 2));
      p.drawRect(r.adjusted(-1, -1, 1, 1));
    }
  }
  // Flow arrows (op -> its kernels) once zoomed in far enough for single events to show.
  if (list.items.size() < 4000) {
    p.setRenderHint(QPainter::Antialiasing, true);
    QColor flow = cc.text;
    flow.setAlpha(150);
    p.setPen(QPen(flow, 1));
    for (size_t run = 0; run < model_.runs().size(); ++run) {
      const auto& r = model_.runs()[run];
      if (r.trace->flows.size() > 200000) continue;
      for (const prof::Flow& f : r.trace->flows) {
        if (f.from >= r.row_of_event.size() || f.to >= r.row_of_event.size()) continue;
        const prof::Event& a = r.trace->events[f.from];
        const prof::Event& b = r.trace->events[f.to];
        const double xa = x_of(static_cast<double>(a.ts_ns - r.origin_ns)),
                     xb = x_of(static_cast<double>(b.ts_ns - r.origin_ns));
        if (std::max(xa, xb) < kLabel || std::min(xa, xb) > width()) continue;
        const int ra = r.row_of_event[f.from], rb = r.row_of_event[f.to];
        if (ra < 0 || rb < 0) continue;
        const QPointF pa(xa + 1, row_top(ra) + rh - 1), pb(xb + 1, row_top(rb) + 1);
        p.drawLine(pa, pb);
        const double ang = std::atan2(pb.y() - pa.y(), pb.x() - pa.x());
        p.drawLine(pb, pb - QPointF(5 * std::cos(ang - 0.45), 5 * std::sin(ang - 0.45)));
        p.drawLine(pb, pb - QPointF(5 * std::cos(ang + 0.45), 5 * std::sin(ang + 0.45)));
      }
    }
    p.setRenderHint(QPainter::Antialiasing, false);
  }
  if (sel1 > sel0) {
    const double a = x_of(static_cast<double>(sel0)), b = x_of(static_cast<double>(sel1));
    p.fillRect(QRectF(a, kAxis, b - a, height() - kAxis), QColor(255, 200, 0, 36));
    p.setPen(QColor(200, 140, 0));
    p.drawLine(QPointF(a, kAxis), QPointF(a, height()));
    p.drawLine(QPointF(b, kAxis), QPointF(b, height()));
  }
  p.restore();
  p.setPen(cc.grid);
  p.drawLine(QPointF(kLabel, kAxis), QPointF(kLabel, height() - kLegend));
  // Legend: colours of the op types taking most time (kernels are drawn a shade lighter).
  p.fillRect(QRectF(0, height() - kLegend, width(), kLegend), cc.panel);
  double x = 8;
  const double y = height() - kLegend + 5;
  p.setPen(cc.text);
  p.drawText(QPointF(x, y + 10), tr("op types:"));
  x = kLabel;
  // A windowed run whose source failed (its file moved or damaged while open) says so in one line
  // in place of the names: its windows come back empty.
  const std::string source_error = model_.source_error();
  if (!source_error.empty()) {
    p.setPen(QColor(0xc0, 0x39, 0x2b));
    p.drawText(QPointF(x, y + 10), p.fontMetrics().elidedText(tr("trace file: %1").arg(qs(source_error)),
                                                              Qt::ElideRight, static_cast<int>(width() - x - 4)));
  }
  for (const auto& name : model_.top_names()) {
    if (!source_error.empty()) break;
    const QString n = qs(name);
    const double w = p.fontMetrics().horizontalAdvance(n) + 28;
    if (x + w > width() - 4) break;
    p.fillRect(QRectF(x, y, 14, 12), op_type_color(n));
    p.setPen(cc.text);
    p.drawText(QPointF(x + 18, y + 10), n);
    x += w;
  }
  Q_EMIT owner_->frame_painted(static_cast<int>(list.items.size()));
}

void TimelineCanvas::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (steps == 0) return;
  zoom_at(e->position().x(), std::pow(0.8, steps));
  e->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  press_ = e->position();
  press_t0_ = t0_;
  press_t1_ = t1_;
  if (e->button() == Qt::RightButton || (e->modifiers() & Qt::ShiftModifier))
    drag_ = Drag::Select;
  else
    drag_ = Drag::Pan;
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  const QPointF pos = e->position();
  if (drag_ == Drag::Pan) {
    const double dt = (pos.x() - press_.x()) / time_width() * (press_t1_ - press_t0_);
    set_window(press_t0_ - dt, press_t1_ - dt);
    return;
  }
  if (drag_ == Drag::Select) {
    sel0 = static_cast<int64_t>(std::min(t_of(press_.x()), t_of(pos.x())));
    sel1 = static_cast<int64_t>(std::max(t_of(press_.x()), t_of(pos.x())));
    update();
    return;
  }
  const int r = row_at(pos.y());
  const double tol = 2.0 / time_width() * (t1_ - t0_);
  const int64_t ev = pos.x() > kLabel ? model_.event_at(r, t_of(pos.x()), tol) : -1;
  if (ev < 0) {
    QToolTip::hideText();
    return;
  }
  const prof::Trace& t = *model_.runs()[static_cast<size_t>(model_.rows()[static_cast<size_t>(r)].run)].trace;
  const prof::Event& ee = t.events[static_cast<size_t>(ev)];
  QString tip = QStringLiteral("<b>%1</b> (%2)<br>%3")
                    .arg(qs(t.str(ee.name)).toHtmlEscaped(), prof::event_kind_name(ee.kind),
                         time_label(static_cast<double>(ee.dur_ns)));
  if (const uint32_t n = model_.folded(r, static_cast<uint32_t>(ev)); n > 1)
    tip = tr("<b>%1 events</b> from %2 on (zoom in for each)").arg(n).arg(qs(t.str(ee.name)).toHtmlEscaped());
  if (const prof::NodeInfo* n = t.node_of(ee)) {
    tip += QStringLiteral("<br>node %1").arg(qs(n->name).toHtmlEscaped());
    if (!n->shapes.empty()) tip += QStringLiteral("<br>%1").arg(qs(n->shapes).toHtmlEscaped());
    if (n->flops > 0) {
      tip += QStringLiteral("<br>%1 MFLOP").arg(n->flops / 1e6, 0, 'f', 2);
      if (ee.dur_ns > 0)
        tip += QStringLiteral(", %1 GFLOP/s").arg(n->flops / static_cast<double>(ee.dur_ns), 0, 'f', 2);
    }
    if (n->origins.size() > 1) tip += QStringLiteral("<br>fuses %1 nodes").arg(n->origins.size());
  }
  if (ee.impl) tip += QStringLiteral("<br>kernel %1").arg(qs(t.str(ee.impl)).toHtmlEscaped());
  if (const std::string* why = fallback_of(t, ee))
    tip += tr("<br><span style='color:#e67e22'>ran on a fallback: %1</span>").arg(qs(*why).toHtmlEscaped());
  QToolTip::showText(e->globalPosition().toPoint(), tip, this);
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* e) {
  const Drag was = drag_;
  drag_ = Drag::None;
  const bool click = (e->position() - press_).manhattanLength() < 4;
  if (was == Drag::Select && !click) {
    owner_->select_range(sel0, sel1);
    return;
  }
  if (click) {
    const int r = row_at(e->position().y());
    const double tol = 2.0 / time_width() * (t1_ - t0_);
    const int64_t ev = e->position().x() > kLabel ? model_.event_at(r, t_of(e->position().x()), tol) : -1;
    uint64_t node = 0;
    if (ev >= 0) {
      const prof::Trace& t = *model_.runs()[static_cast<size_t>(model_.rows()[static_cast<size_t>(r)].run)].trace;
      // A fused node is selected through its first original node, which every view knows.
      if (const prof::NodeInfo* n = t.node_of(t.events[static_cast<size_t>(ev)]))
        node = n->origins.empty() ? n->id : n->origins.front();
    }
    selected_node = node;
    update();
    Q_EMIT owner_->node_selected(node);
  }
}

}  // namespace ms::views
