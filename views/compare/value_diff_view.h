// The mode diff value by value: a one-line summary, a filter on value and node names, "only past
// the tolerance", and the table of views/models/value_diff_model.h, worst relative error first.
// A row clicked (or reached with the keys) names its Graph node; a double-click or the context
// menu's "Show in PyNative graph" names the PyNative node it stands for.
#pragma once

#include <QWidget>

#include <cstdint>
#include <memory>

#include "views/models/value_diff_model.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QMenu;
class QSortFilterProxyModel;
class QTableView;

namespace ms::views {

class ValueDiffView : public QWidget {
  Q_OBJECT
 public:
  explicit ValueDiffView(QWidget* parent = nullptr);
  // nullptr clears.
  void set_diff(std::shared_ptr<const runtime::ModeDiff> diff);
  ValueDiffModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QLineEdit* filter_edit() const { return filter_; }
  QCheckBox* only_past_tolerance() const { return past_tol_; }
  QString summary_text() const { return summary_full_; }
  // Rows the filters let through.
  int rows() const;
  // Selects and shows the first value past the tolerance without naming its node; false when there
  // is none or the filters hide it.
  bool select_first_divergence();
  // The context menu of table row `index` (a proxy index); the caller owns it.
  QMenu* row_menu(const QModelIndex& index, QWidget* parent);
  QSize sizeHint() const override { return {900, 280}; }

 Q_SIGNALS:
  void node_selected(uint64_t node);     // the Graph node (NodeId value)
  void show_in_pynative(uint64_t node);  // the PyNative node it stands for

 protected:
  bool eventFilter(QObject* obj, QEvent* e) override;

 private:
  const runtime::ValueDiff* value_at(const QModelIndex& index) const;
  void update_summary();
  ValueDiffModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLabel* summary_;
  QString summary_full_;
  QLineEdit* filter_;
  QCheckBox* past_tol_;
  bool selecting_ = false;  // the current row moves by code: no signal
  bool pressing_ = false;   // the mouse moves the current row: `clicked` reports it
  bool double_ = false;     // the release after a double-click: no second report
};

}  // namespace ms::views
