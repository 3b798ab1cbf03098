// Every value of the mode diff (engine/runtime/mode_diff.h) as a table row: the Graph value, its
// node, the PyNative node it stands for, the errors and how the two were matched. Rows past the
// tolerance take error_color's background, the first of them bold; rows not compared are grey with
// the reason as tooltip. Qt::UserRole is the raw figure for sorting: the order as an integer, the
// errors as doubles (+inf with a non-finite mismatch, -1 when not compared), the names as text.
#pragma once

#include <QAbstractTableModel>

#include <memory>

#include "engine/runtime/mode_diff.h"

namespace ms::views {

class ValueDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kOrder, kValue, kNode, kRefNode, kMaxAbs, kMaxRel, kMatch, kColumns };
  // True on rows past the tolerance (ValueDiff::diverged), for filters.
  static constexpr int kDivergedRole = Qt::UserRole + 1;

  explicit ValueDiffModel(QObject* parent = nullptr);
  // nullptr clears.
  void set_diff(std::shared_ptr<const runtime::ModeDiff> diff);
  const runtime::ModeDiff* diff() const { return diff_.get(); }
  // nullptr when `row` is out of range.
  const runtime::ValueDiff* row_at(int row) const;
  // ModeDiff::first_divergence; -1 when no value is past the tolerance.
  int first_divergence_row() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const runtime::ModeDiff> diff_;
};

}  // namespace ms::views
