#include "views/compare/compare_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "views/common/axis.h"
#include "views/common/palette.h"
#include "views/common/save_file.h"
#include "views/compare/compare_model.h"

namespace ms::views {

GainsChart::GainsChart(QWidget* parent) : QWidget(parent) { setMinimumSize(300, 200); }

void GainsChart::set_rows(const std::vector<prof::CompareRow>& rows, int per_side) {
  std::vector<const prof::CompareRow*> v;
  for (const auto& r : rows) v.push_back(&r);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->saving_ms() > b->saving_ms(); });
  bars_.clear();
  for (int i = 0; i < static_cast<int>(v.size()) && i < per_side && v[static_cast<size_t>(i)]->saving_ms() > 0; ++i)
    bars_.push_back({QString::fromStdString(v[static_cast<size_t>(i)]->label), v[static_cast<size_t>(i)]->saving_ms()});
  std::vector<Bar> losses;
  for (int i = static_cast<int>(v.size()) - 1, n = 0;
       i >= 0 && n < per_side && v[static_cast<size_t>(i)]->saving_ms() < 0; --i, ++n)
    losses.push_back(
        {QString::fromStdString(v[static_cast<size_t>(i)]->label), v[static_cast<size_t>(i)]->saving_ms()});
  std::reverse(losses.begin(), losses.end());
  bars_.insert(bars_.end(), losses.begin(), losses.end());
  update();
}

void GainsChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const ChartColors cc = ChartColors::of(palette());
  p.fillRect(rect(), cc.base);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRectF(8, 4, width() - 16, 18), Qt::AlignLeft,
             p.fontMetrics().elidedText(tr("Biggest gains and losses of Graph mode (per iteration)"), Qt::ElideRight,
                                        width() - 16));
  p.setFont(font());
  if (bars_.empty()) {
    p.setPen(cc.muted);
    p.drawText(rect(), Qt::AlignCenter, tr("Run both modes to compare them."));
    return;
  }
  double m = 1e-9;
  bool gains = false, losses = false;
  for (const auto& b : bars_) {
    m = std::max(m, std::abs(b.saving_ms));
    gains |= b.saving_ms > 0;
    losses |= b.saving_ms < 0;
  }
  // One-sided when all bars go one way; room for the value labels at the bar ends.
  const double label_w = std::min(220.0, width() * 0.4), top = 28, bottom = height() - 36, value_w = 80;
  const double bh = std::min(22.0, (bottom - top) / static_cast<double>(bars_.size()));
  const double plot = width() - label_w - 14 - value_w * ((gains ? 1 : 0) + (losses ? 1 : 0));
  const double half = gains && losses ? plot / 2 : plot;
  const double x_zero = label_w + 10 + (losses ? value_w + (gains ? half : plot) : 0);
  for (size_t i = 0; i < bars_.size(); ++i) {
    const Bar& b = bars_[i];
    const double y = top + static_cast<double>(i) * bh;
    p.setPen(cc.text);
    p.drawText(QRectF(4, y, label_w, bh), Qt::AlignRight | Qt::AlignVCenter,
               p.fontMetrics().elidedText(b.label, Qt::ElideMiddle, static_cast<int>(label_w)));
    const double w = b.saving_ms / m * half;
    QRectF r = w >= 0 ? QRectF(x_zero, y + 2, w, bh - 4) : QRectF(x_zero + w, y + 2, -w, bh - 4);
    p.fillRect(r, b.saving_ms >= 0 ? QColor(60, 160, 80) : QColor(210, 70, 60));
    const QString v = QStringLiteral("%1%2 ms").arg(b.saving_ms >= 0 ? "+" : "").arg(b.saving_ms, 0, 'f', 3);
    p.setPen(cc.text);
    if (w >= 0)
      p.drawText(QRectF(x_zero + w + 3, y, 90, bh), Qt::AlignLeft | Qt::AlignVCenter, v);
    else
      p.drawText(QRectF(x_zero + w - 93, y, 90, bh), Qt::AlignRight | Qt::AlignVCenter, v);
  }
  p.setPen(QColor(80, 80, 80));
  const double axis_y = top + static_cast<double>(bars_.size()) * bh + 4;
  p.drawLine(QPointF(x_zero, top - 2), QPointF(x_zero, axis_y));
  p.drawLine(QPointF(x_zero - (losses ? half : 0), axis_y), QPointF(x_zero + (gains ? half : 0), axis_y));
  // Ticks at round values (1, 2 or 5 x 10^k ms), as many as fit one label each 64 px.
  for (const double tick : axis_ticks(m, std::max(1, static_cast<int>(half / 64)))) {
    for (const int sign : {1, -1}) {
      if ((sign > 0 && tick > 0 && !gains) || (sign < 0 && (tick == 0 || !losses))) continue;
      const double x = x_zero + sign * tick / m * half;
      p.drawLine(QPointF(x, axis_y), QPointF(x, axis_y + 3));
      p.drawText(QRectF(x - 40, axis_y + 3, 80, 14), Qt::AlignHCenter, QString::number(sign * tick, 'g', 3));
    }
  }
  p.drawText(QRectF(0, axis_y + 18, width(), 14), Qt::AlignHCenter,
             tr("ms saved per iteration (green: Graph faster, red: slower)"));
}

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setTextFormat(Qt::RichText);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  filter_ = new QLineEdit(this);
  filter_->setObjectName(QStringLiteral("CompareFilter"));
  filter_->setPlaceholderText(tr("Filter rows (op, node name, kernel)…"));
  filter_->setClearButtonEnabled(true);
  layout->addWidget(filter_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  model_ = new CompareModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  table_ = new QTableView(split);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(CompareModel::SavingMs, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->setWordWrap(false);
  chart_ = new GainsChart(split);
  split->addWidget(table_);
  split->addWidget(chart_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  connect(filter_, &QLineEdit::textChanged, this, &CompareView::set_filter);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (selecting_ || !cur.isValid()) return;
    const int row = proxy_->mapToSource(cur).row();
    if (row < 0 || row >= static_cast<int>(model_->rows().size())) return;
    const auto& o = model_->rows()[static_cast<size_t>(row)].origins;
    if (!o.empty()) Q_EMIT node_selected(o.front());
  });
  clear();
}

void CompareView::clear() {
  model_->set_rows({});
  chart_->set_rows({});
  summary_->setText(tr("Run the model in both modes (Run ▸ Both) to compare PyNative and Graph mode."));
}

void CompareView::set_comparison(const prof::Comparison& c, double) {
  const prof::CompareSummary& s = c.summary;
  const double speedup = s.graph_iter_ms > 0 ? s.eager_iter_ms / s.graph_iter_ms : 0;
  const QString be = std::isfinite(s.break_even_iterations)
                         ? tr("after %n iteration(s)", nullptr, static_cast<int>(std::ceil(s.break_even_iterations)))
                         : tr("never (Graph mode is not faster)");
  auto mb = [](uint64_t b) { return QString::fromStdString(format_bytes(static_cast<double>(b))); };
  summary_->setText(
      tr("<table cellspacing=0 cellpadding=3>"
         "<tr><td></td><td><b>PyNative</b></td><td><b>Graph</b></td></tr>"
         "<tr><td>Latency per iteration (median)</td><td>%1 ms</td><td>%2 ms</td><td>&nbsp;&nbsp;speedup "
         "<b>%3×</b></td></tr>"
         "<tr><td>Kernels per iteration</td><td>%4</td><td>%5</td><td>&nbsp;&nbsp;compile %6, break-even: "
         "%7</td></tr>"
         "<tr><td>Peak memory</td><td>%8</td><td>%9</td><td>&nbsp;&nbsp;overhead outside ops %10 / %11 ms</td></tr>"
         "</table><p><b>Verdict:</b> %12</p>")
          .arg(s.eager_iter_ms, 0, 'f', 3)
          .arg(s.graph_iter_ms, 0, 'f', 3)
          .arg(speedup, 0, 'f', 2)
          .arg(s.eager_kernels_per_iter, 0, 'f', 0)
          .arg(s.graph_kernels_per_iter, 0, 'f', 0)
          .arg(s.compile_cached ? tr("%1 ms (cached: an earlier run compiled it)").arg(s.compile_ms, 0, 'f', 1)
                                : tr("%1 ms").arg(s.compile_ms, 0, 'f', 1))
          .arg(be)
          .arg(mb(s.eager_peak_bytes), mb(s.graph_peak_bytes))
          .arg(s.eager_overhead_ms, 0, 'f', 3)
          .arg(s.graph_overhead_ms, 0, 'f', 3)
          .arg(c.verdict.disturbed  // timings the machine's load inflated: said in the warning colour
                   ? QStringLiteral("<span style=\"color:#b35900\">%1</span>")
                         .arg(QString::fromStdString(c.verdict.text).toHtmlEscaped())
                   : QString::fromStdString(c.verdict.text).toHtmlEscaped()));
  model_->set_rows(c.rows);
  chart_->set_rows(c.rows);
  table_->resizeColumnsToContents();
  for (int col = 0; col < 3; ++col) table_->setColumnWidth(col, std::min(table_->columnWidth(col), 220));
}

QString CompareView::summary_text() const { return summary_->text(); }

void CompareView::focus_filter() {
  filter_->setFocus(Qt::ShortcutFocusReason);
  filter_->selectAll();
}

void CompareView::set_filter(const QString& text) {
  if (filter_->text() != text) filter_->setText(text);
  proxy_->setFilterFixedString(text);
}

void CompareView::set_selected_node(uint64_t node) {
  const int row = model_->row_of_node(node);
  selecting_ = true;
  if (row < 0)
    table_->clearSelection();
  else {
    const QModelIndex idx = proxy_->mapFromSource(model_->index(row, 0));
    if (idx.isValid()) {
      table_->selectRow(idx.row());
      table_->scrollTo(idx);
    }
  }
  selecting_ = false;
}

bool CompareView::export_png(const QString& path) { return save_image(path, grab().toImage()); }

bool CompareView::export_csv(const QString& path) const { return save_bytes(path, model_->to_csv().toUtf8()); }

}  // namespace ms::views
