#include "views/compare/compare_model.h"

#include <QBrush>
#include <QColor>

#include <algorithm>

namespace ms::views {

void CompareModel::set_rows(std::vector<prof::CompareRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int CompareModel::row_of_node(uint64_t node) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (std::find(rows_[i].origins.begin(), rows_[i].origins.end(), node) != rows_[i].origins.end())
      return static_cast<int>(i);
  return -1;
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int CompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size()) || index.column() >= ColumnCount) return {};
  const prof::CompareRow& r = rows_[static_cast<size_t>(index.row())];
  const double speedup = r.graph_ms > 0 ? r.eager_ms / r.graph_ms : 0;
  auto raw = [&]() -> QVariant {
    switch (index.column()) {
      case Group: return QString::fromStdString(r.label);
      case Names: return QString::fromStdString(r.names);
      case GraphOps: return QString::fromStdString(r.graph_ops);
      case EagerMs: return r.eager_ms;
      case GraphMs: return r.graph_ms;
      case SavingMs: return r.saving_ms();
      case Speedup: return speedup;
      case EagerKernels: return r.eager_kernels;
      case GraphKernels: return r.graph_kernels;
      default: return {};
    }
  };
  switch (role) {
    case Qt::UserRole: return raw();
    case Qt::DisplayRole: {
      const QVariant v = raw();
      if (index.column() <= GraphOps) {
        if (index.column() == Group && r.fused) return v.toString() + QStringLiteral("  (fused)");
        return v;
      }
      if (index.column() == Speedup)
        return speedup > 0 ? QStringLiteral("%1×").arg(speedup, 0, 'f', 2) : QStringLiteral("–");
      if (index.column() >= EagerKernels) return QString::number(v.toDouble(), 'f', 1);
      return QString::number(v.toDouble(), 'f', 4);
    }
    case Qt::TextAlignmentRole:
      return index.column() > GraphOps ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                       : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if (index.column() == SavingMs) return QBrush(r.saving_ms() >= 0 ? QColor(20, 120, 40) : QColor(180, 30, 30));
      return {};
    case Qt::ToolTipRole:
      return QStringLiteral("%1\neager: %2\nGraph: %3")
          .arg(QString::fromStdString(r.label), QString::fromStdString(r.names), QString::fromStdString(r.graph_ops));
    default: return {};
  }
}

QVariant CompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Group: return tr("Group");
    case Names: return tr("Eager nodes");
    case GraphOps: return tr("Graph kernel(s)");
    case EagerMs: return tr("PyNative ms");
    case GraphMs: return tr("Graph ms");
    case SavingMs: return tr("Saving ms");
    case Speedup: return tr("Speedup");
    case EagerKernels: return tr("PyNative kernels");
    case GraphKernels: return tr("Graph kernels");
    default: return {};
  }
}

QString CompareModel::to_csv() const {
  auto quote = [](QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace('"', QStringLiteral("\"\"")) + '"';
    return s;
  };
  QString out;
  for (int c = 0; c < ColumnCount; ++c)
    out += (c ? QStringLiteral(",") : QString()) + quote(headerData(c, Qt::Horizontal).toString());
  out += '\n';
  for (int r = 0; r < rowCount(); ++r) {
    for (int c = 0; c < ColumnCount; ++c)
      out += (c ? QStringLiteral(",") : QString()) + quote(data(index(r, c), Qt::UserRole).toString());
    out += '\n';
  }
  return out;
}

}  // namespace ms::views
