#include "views/models/pass_list_model.h"

#include <QBrush>
#include <QColor>

namespace ms::views {

PassListModel::PassListModel(QObject* parent) : QAbstractTableModel(parent) {}

void PassListModel::set_passes(std::vector<PassRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int PassListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int PassListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant PassListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const PassRow& r = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case kName: return r.name;
      case kChanged: {
        if (!r.changed) return tr("—");
        QStringList parts;
        if (r.fused) parts << tr("%1 fused").arg(r.fused);
        if (r.added) parts << tr("+%1").arg(r.added);
        if (r.removed) parts << tr("−%1").arg(r.removed);
        return parts.isEmpty() ? tr("changed") : parts.join(QStringLiteral(" "));
      }
      case kNodes: return r.nodes_after;
      case kTime: return QString::number(r.ms, 'f', 2);
    }
  }
  // The name's cell tells the whole name (it elides in a narrow dock) above what the pass does.
  if (role == Qt::ToolTipRole)
    return index.column() == kName && !r.description.isEmpty() ? r.name + QLatin1Char('\n') + r.description
           : index.column() == kName                           ? r.name
                                                               : r.description;
  if (role == Qt::CheckStateRole && index.column() == kName && !r.pass.empty())
    return r.enabled ? Qt::Checked : Qt::Unchecked;
  // Passes that changed nothing are dimmed.
  if (role == Qt::ForegroundRole && !r.changed && index.row() > 0) return QBrush(QColor(150, 150, 150));
  if (role == Qt::TextAlignmentRole && index.column() >= kNodes) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

Qt::ItemFlags PassListModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && index.column() == kName && index.row() < static_cast<int>(rows_.size()) &&
      !rows_[static_cast<size_t>(index.row())].pass.empty())
    f |= Qt::ItemIsUserCheckable;
  return f;
}

bool PassListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::CheckStateRole || !index.isValid() || index.column() != kName ||
      index.row() >= static_cast<int>(rows_.size()))
    return false;
  PassRow& r = rows_[static_cast<size_t>(index.row())];
  if (r.pass.empty()) return false;
  r.enabled = value.toInt() == Qt::Checked;
  Q_EMIT dataChanged(index, index, {Qt::CheckStateRole});
  Q_EMIT enabled_changed();
  return true;
}

std::vector<std::string> PassListModel::disabled() const {
  std::vector<std::string> out;
  for (const auto& r : rows_)
    if (!r.pass.empty() && !r.enabled) out.push_back(r.pass);
  return out;
}

QVariant PassListModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName: return tr("Pass");
    case kChanged: return tr("Effect");
    case kNodes: return tr("Nodes");
    case kTime: return tr("ms");
  }
  return {};
}

}  // namespace ms::views
