// PyNative vs Graph: a summary (latency of each mode, speedup, compile time, break-even, peak
// memory, kernels per iteration, the advisor's verdict), the aligned per-op table (sortable,
// filterable) and a bar chart of the biggest gains and losses per iteration.
#pragma once

#include <QWidget>

#include "profiler/analysis/compare.h"

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace ms::views {

class CompareModel;

class GainsChart : public QWidget {
  Q_OBJECT
 public:
  explicit GainsChart(QWidget* parent = nullptr);
  void set_rows(const std::vector<prof::CompareRow>& rows, int per_side = 8);
  QSize sizeHint() const override { return {420, 300}; }
  struct Bar {
    QString label;
    double saving_ms = 0;
  };
  const std::vector<Bar>& bars() const { return bars_; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<Bar> bars_;
};

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  void set_comparison(const prof::Comparison& c, double eager_compile_free_ms = 0);
  void clear();
  CompareModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  GainsChart* chart() const { return chart_; }
  QString summary_text() const;
  void set_filter(const QString& text);
  // Ctrl+F on this tab: the filter field takes the keyboard, its text selected.
  void focus_filter();
  void set_selected_node(uint64_t node);
  bool export_png(const QString& path);
  bool export_csv(const QString& path) const;

 Q_SIGNALS:
  void node_selected(uint64_t node);

 private:
  QLabel* summary_;
  QLineEdit* filter_;
  CompareModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  GainsChart* chart_;
  bool selecting_ = false;
};

}  // namespace ms::views
