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

}  // namespace

RanksView::RanksView(QWidget* parent) : QWidget(parent) { setMinimumSize(400, 160); }

void RanksView::set_data(RanksData data) {
  data_ = std::move(data);
  update();
}

QString RanksView::summary_text() const {
  QStringList lines;
  for (const RankLane& l : data_.lanes)
    lines << (l.group.empty() ? QString() : QString::fromStdString(l.group) + QStringLiteral(" · ")) +
                 tr("rank %1: step %2 (median), all-reduce wait %3/step, %4 collectives")
                     .arg(l.rank)
                     .arg(ms_label(l.median_step_ms), ms_label(l.allreduce_ms_per_step))
                     .arg(l.collectives.size());
  if (data_.straggler >= 0)
    lines << tr("straggler: rank %1 (starts its collectives last most often)").arg(data_.straggler);
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
  const double span = static_cast<double>(data_.span_ns) * 1.01;
  auto x_of = [&](int64_t t) { return kLabel + static_cast<double>(t) / span * w; };
  // Time axis.
  const double step = nice_step(span / 1e6, std::max(2, static_cast<int>(w / 110)));
  for (double t = 0; t <= span / 1e6; t += step) {
    const double x = x_of(static_cast<int64_t>(t * 1e6));
    p.setPen(cc.grid);
    p.drawLine(QPointF(x, kAxis), QPointF(x, height()));
    p.setPen(cc.text);
    p.drawText(QRectF(x - 50, 4, 100, kAxis - 8), Qt::AlignCenter, ms_label(t));
  }
  p.drawText(QRectF(4, 4, kLabel - 8, kAxis - 8), Qt::AlignLeft | Qt::AlignVCenter, tr("time from each rank's step 1"));
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
    if (l.rank == data_.straggler) {
      p.setPen(kCollective);
      p.drawText(QRectF(6, top + 36, kLabel - 10, 16), Qt::AlignLeft | Qt::AlignVCenter, tr("straggler"));
    }
    for (const RankSpan& s : l.steps) {
      const QRectF r(x_of(s.t0), top + 4, std::max(1.0, x_of(s.t1) - x_of(s.t0)), 22);
      p.fillRect(r, s.step % 2 ? QColor(120, 150, 200) : QColor(150, 175, 215));
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
