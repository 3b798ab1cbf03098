// The aligned per-op table of a PyNative-vs-Graph comparison: one row per original node or fused
// group (eager op(s) against the Graph-mode kernel that covers them). Display text is formatted;
// Qt::UserRole gives the raw number for sorting through a QSortFilterProxyModel.
#pragma once

#include <QAbstractTableModel>

#include "profiler/analysis/compare.h"

namespace ms::views {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Group, Names, GraphOps, EagerMs, GraphMs, SavingMs, Speedup, EagerKernels, GraphKernels, ColumnCount };
  explicit CompareModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void set_rows(std::vector<prof::CompareRow> rows);
  const std::vector<prof::CompareRow>& rows() const { return rows_; }
  // The row covering the node (an origin of the group), or -1.
  int row_of_node(uint64_t node) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  // Every row and column as CSV (raw numbers, header first).
  QString to_csv() const;

 private:
  std::vector<prof::CompareRow> rows_;
};

}  // namespace ms::views
