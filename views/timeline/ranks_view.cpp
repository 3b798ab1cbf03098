#include "views/timeline/ranks_view.h"

#include <QPainter>

#include <cmath>

#include "views/common/axis.h"
#include "views/common/palette.h"
#include "views/common/save_file.h"

namespace ms::views {

namespace {

QString ms_label(double ms) { return QStringLiteral("%1 ms").arg(ms, 0, 'f', ms >= 100 ? 0 : ms >= 10 ? 1 : 2); }

const QColor kCollective(0xd3, 0x54, 0x00);
const QColor kCompile(0x9a, 0x9a, 0x9a);

// The steps a lane's figures cover: "steps 2-10", "step 1".
QString steps_covered(const RankLane& l) {
  if (l.last_step < l.first_step) return RanksView::tr("no steps");
  return l.first_step == l.last_step ? RanksView::tr("step %1").arg(l.first_step)
                                     : RanksView::tr("steps %1–%2").arg(l.first_step).arg(l.last_step);
}

QString group_prefix(const std::string& group) {
  return group.empty() ? QString() : QString::fromStdString(group) + QStringLiteral(" · ");
}

}  // namespace

RanksView::RanksView(QWidget* parent) : QWidget(parent) { setMinimumSize(400, 160); }

void RanksView::set_data(RanksData data) {
  data_ = std::move(data);
  update();
}

QString RanksView::summary_text() const {
  QStringList lines;
  std::map<std::string, QString> covered;  // group -> the steps its figures cover
  for (const RankLane& l : data_.lanes) {
    lines << group_prefix(l.group) +
                 tr("rank %1: step %2 (median), all-reduce wait %3/step over %4, %5 collectives")
                     .arg(l.rank)
                     .arg(ms_label(l.median_step_ms), ms_label(l.allreduce_ms_per_step), steps_covered(l))
                     .arg(l.collectives.size());
    if (l.first_step > 1)
      lines.back() += l.compile.t1 > l.compile.t0
                          ? tr(" (warm-up step 1: %1, after the compile)").arg(ms_label(warmup_step_ms(l)))
                          : tr(" (warm-up step 1: %1)").arg(ms_label(warmup_step_ms(l)));
    covered.emplace(l.group, steps_covered(l));
  }
  for (const auto& [group, rank] : data_.stragglers)
    lines << group_prefix(group) +
                 tr("straggler: rank %1 (starts its collectives last most often, %2)").arg(rank).arg(covered[group]);
  return lines.join(QLatin1Char('\n'));
}

bool RanksView::export_png(const QString& path) { return save_image(path, grab().toImage()); }

void RanksView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const ChartColors cc = ChartColors::of(palette());
  p.fillRect(rect(), cc.base);
  if (data_.lanes.empty()) {
    p.setPen(cc.muted);
    p.drawText(rect(), Qt::AlignCenter,
               tr("File › Open Ranks… opens the per-rank traces of a data-parallel training run\n"
                  "(train --profile 'DIR{rank}' under mpirun, or the Training tab with ranks > 1)."));
    return;
  }
  const double w = std::max(1, width() - kLabel - 8);
  const double start = static_cast<double>(data_.start_ns);
  const double span = (static_cast<double>(data_.span_ns) - start) * 1.01;
  auto x_of = [&](int64_t t) { return kLabel + (static_cast<double>(t) - start) / span * w; };
  // Time axis: 0 at each rank's aligned step, the compile and step 1 before it.
  const double step = nice_step(span / 1e6, std::max(2, static_cast<int>(w / 110)));
  for (double t = std::ceil(start / 1e6 / step) * step; t <= (start + span) / 1e6; t += step) {
    const double x = x_of(static_cast<int64_t>(t * 1e6));
    p.setPen(cc.grid);
    p.drawLine(QPointF(x, kAxis), QPointF(x, height()));
    p.setPen(cc.text);
    p.drawText(QRectF(x - 50, 4, 100, kAxis - 8), Qt::AlignCenter, ms_label(t));
  }
  bool same = true;
  for (const RankLane& l : data_.lanes) same = same && l.aligned_step == data_.lanes.front().aligned_step;
  p.drawText(QRectF(4, 4, kLabel - 8, kAxis - 8), Qt::AlignLeft | Qt::AlignVCenter,
             same ? tr("time from each rank's step %1").arg(data_.lanes.front().aligned_step)
                  : tr("time from each rank's step 2 (1 if one)"));
  QFont small = font();
  small.setPointSizeF(std::max(7.0, font().pointSizeF() - 1));
  std::map<std::pair<std::string, int64_t>, std::vector<QPointF>> ends;  // each lane's collective end
  for (size_t i = 0; i < data_.lanes.size(); ++i) {
    const RankLane& l = data_.lanes[i];
    const double top = kAxis + 6 + static_cast<double>(i) * kLane;
    p.fillRect(QRectF(0, top, width(), kLane - 4), i % 2 ? cc.panel : cc.band);
    p.setPen(cc.text);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    const QString who = l.world_size ? tr("rank %1 of %2").arg(l.rank).arg(l.world_size) : tr("rank %1").arg(l.rank);
    p.drawText(QRectF(6, top + 2, kLabel - 10, 18), Qt::AlignLeft | Qt::AlignVCenter,
               l.group.empty() ? who : QString::fromStdString(l.group) + QStringLiteral(" · ") + who);
    p.setFont(small);
    p.drawText(QRectF(6, top + 20, kLabel - 10, 16), Qt::AlignLeft | Qt::AlignVCenter,
               tr("step %1 · all-reduce %2/step").arg(ms_label(l.median_step_ms), ms_label(l.allreduce_ms_per_step)));
    p.setPen(cc.muted);
    p.drawText(QRectF(6, top + 36, kLabel - 10, 16), Qt::AlignLeft | Qt::AlignVCenter,
               tr("over %1").arg(steps_covered(l)));
    if (l.rank == data_.straggler(l.group)) {
      p.setPen(kCollective);
      p.drawText(QRectF(6, top + 36, kLabel - 10, 16), Qt::AlignRight | Qt::AlignVCenter, tr("straggler"));
    }
    if (l.compile.t1 > l.compile.t0) {
      const QRectF r(x_of(l.compile.t0), top + 4, std::max(1.0, x_of(l.compile.t1) - x_of(l.compile.t0)), 22);
      p.fillRect(r, kCompile);
      if (r.width() > 50) {
        p.setPen(Qt::black);
        p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter, tr("compile"));
      }
    }
    for (const RankSpan& s : l.steps) {
      const QRectF r(x_of(s.t0), top + 4, std::max(1.0, x_of(s.t1) - x_of(s.t0)), 22);
      p.fillRect(r, s.step % 2 ? QColor(120, 150, 200) : QColor(150, 175, 215));
      // A step the figures leave out (warm-up step 1): hatched.
      if (s.step < l.first_step || s.step > l.last_step)
        p.fillRect(r, QBrush(QColor(255, 255, 255, 140), Qt::BDiagPattern));
      if (r.width() > 40) {
        p.setPen(Qt::black);
        p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter, tr("step %1").arg(s.step));
      }
    }
    for (const RankCollective& c : l.collectives) {
      const QRectF r(x_of(c.t0), top + 29, std::max(2.0, x_of(c.t1) - x_of(c.t0)), 20);
      p.fillRect(r, kCollective);
      p.setPen(kCollective.darker(140));
      p.drawRect(r);
      if (r.width() > 28) {
        p.setPen(Qt::white);
        p.drawText(r.adjusted(2, 0, -1, 0), Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("#%1").arg(c.sequence));
      }
      ends[{l.group, c.sequence}].push_back(QPointF(r.right(), r.center().y()));
    }
  }
  // One all-reduce across ranks: its ends joined (they finish together when the ranks are aligned).
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setPen(QPen(kCollective, 1.2, Qt::DashLine));
  for (const auto& [key, pts] : ends)
    for (size_t k = 1; k < pts.size(); ++k) p.drawLine(pts[k - 1], pts[k]);
}

}  // namespace ms::views
