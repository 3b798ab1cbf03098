#include "views/models/pass_delta_model.h"

#include <QColor>
#include <QFont>
#include <QStringList>

#include <cmath>

#include "views/common/axis.h"

namespace ms::views {

PassDeltaModel::PassDeltaModel(QObject* parent) : QAbstractTableModel(parent) {}

void PassDeltaModel::set_results(PipelineFigures full, std::vector<PassDelta> rows) {
  beginResetModel();
  full_ = std::move(full);
  rows_ = std::move(rows);
  has_full_ = true;
  endResetModel();
}

void PassDeltaModel::clear() {
  beginResetModel();
  full_ = {};
  rows_.clear();
  has_full_ = false;
  endResetModel();
}

int PassDeltaModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !has_full_ ? 0 : static_cast<int>(rows_.size()) + 1;
}

int PassDeltaModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

double PassDeltaModel::value(const PipelineFigures& f, int column) {
  switch (column) {
    case kLatency: return f.latency_ms;
    case kPeak: return static_cast<double>(f.peak_bytes);
    case kArena: return static_cast<double>(f.arena_bytes);
    case kKernels: return static_cast<double>(f.kernels);
    case kNodes: return f.nodes;
    case kCompile: return f.compile_ms;
    default: return 0;
  }
}

double PassDeltaModel::delta(int row, int column) const {
  if (row < 1 || row > static_cast<int>(rows_.size()) || column <= kPipeline || column >= kColumns) return 0;
  const PipelineFigures& w = rows_[static_cast<size_t>(row - 1)].without;
  if (!w.error.isEmpty() || !full_.error.isEmpty()) return 0;
  const double base = value(full_, column), v = value(w, column);
  if (base == 0) return 0;
  return (v - base) / base;
}

namespace {

QString format_value(double v, int column) {
  switch (column) {
    case PassDeltaModel::kLatency: return QStringLiteral("%1 ms").arg(v, 0, 'f', v < 10 ? 3 : 2);
    case PassDeltaModel::kCompile: return QStringLiteral("%1 ms").arg(v, 0, 'f', 1);
    case PassDeltaModel::kPeak:
    case PassDeltaModel::kArena: return QString::fromStdString(format_bytes(v));
    default: return QString::number(static_cast<qint64>(std::llround(v)));
  }
}

}  // namespace

QVariant PassDeltaModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumns) return {};
  const int row = index.row(), col = index.column();
  const PipelineFigures& f = figures(row);
  if (col == kPipeline) {
    if (role == Qt::DisplayRole || role == Qt::UserRole)
      return row == 0 ? tr("full pipeline") : tr("without %1").arg(rows_[static_cast<size_t>(row - 1)].pass);
    if (role == Qt::ToolTipRole && !f.error.isEmpty()) return f.error;
    if (role == Qt::FontRole && row == 0) {
      QFont bold;
      bold.setBold(true);
      return bold;
    }
    return {};
  }
  if (!f.error.isEmpty()) {
    if (role == Qt::DisplayRole) return col == kLatency ? tr("failed: %1").arg(f.error) : QString();
    if (role == Qt::ForegroundRole) return QColor(0xb0, 0x20, 0x20);
    if (role == Qt::UserRole) return -1.0;  // sorts below every measured row
    return {};
  }
  const double v = value(f, col), d = delta(row, col);
  switch (role) {
    case Qt::DisplayRole: {
      QString s = format_value(v, col);
      if (row > 0 && value(full_, col) != 0)
        s += QStringLiteral("  (%1%2%)").arg(d >= 0 ? QStringLiteral("+") : QString()).arg(d * 100, 0, 'f', 1);
      else if (row > 0 && v != value(full_, col))
        s += QStringLiteral("  (new)");
      return s;
    }
    case Qt::UserRole: return v;
    case kDeltaRole: return d;
    case Qt::TextAlignmentRole: return static_cast<int>(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      // Every figure is better lower: without the pass higher means the pass saves it (green).
      if (row == 0 || std::abs(d) < kNoise) return {};
      return d > 0 ? QColor(0x1e, 0x8c, 0x3a) : QColor(0xc0, 0x30, 0x30);
    case Qt::ToolTipRole:
      if (row == 0) return tr("The full pipeline: every pass runs");
      if (std::abs(d) < kNoise)
        return tr("Within %1% of the full pipeline: no measurable effect").arg(kNoise * 100, 0, 'f', 0);
      return d > 0 ? tr("Leaving the pass out costs %1%: the pass saves this").arg(d * 100, 0, 'f', 1)
                   : tr("Leaving the pass out saves %1%: the pass costs this").arg(-d * 100, 0, 'f', 1);
    default: return {};
  }
}

QVariant PassDeltaModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kPipeline: return tr("Pipeline");
    case kLatency: return tr("Latency (median)");
    case kPeak: return tr("Peak memory");
    case kArena: return tr("Arena");
    case kKernels: return tr("Kernels / iter");
    case kNodes: return tr("Nodes");
    case kCompile: return tr("Compile");
    default: return {};
  }
}

QString PassDeltaModel::to_csv() const {
  QStringList lines;
  lines << QStringLiteral(
      "pipeline,latency_ms,latency_delta_pct,peak_bytes,peak_delta_pct,arena_bytes,arena_delta_pct,"
      "kernels,kernels_delta_pct,nodes,nodes_delta_pct,compile_ms,compile_delta_pct,error");
  for (int r = 0; r < rowCount(); ++r) {
    const PipelineFigures& f = figures(r);
    QStringList cells;
    cells << (r == 0 ? QStringLiteral("full") : QStringLiteral("without ") + rows_[static_cast<size_t>(r - 1)].pass);
    for (int c = kLatency; c < kColumns; ++c) {
      cells << QString::number(value(f, c), 'g', 10);
      cells << (r == 0 ? QString() : QString::number(delta(r, c) * 100, 'f', 2));
    }
    QString err = f.error;
    err.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    cells << (err.isEmpty() ? QString() : QStringLiteral("\"%1\"").arg(err));
    lines << cells.join(QLatin1Char(','));
  }
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace ms::views
