// The node inspector dock's content: a tree of the node's properties, for each weight a small
// histogram of its values, and the node's captured values (ValueView) when a capture has them.
#pragma once

#include <QWidget>

#include <vector>

#include "engine/core/tensor.h"
#include "views/graph/value_view.h"

class QTreeView;
class QComboBox;
class QLabel;
class QGroupBox;

namespace ms::views {

struct GraphModel;
class NodeInfoModel;
struct WeightStats;

class Histogram : public QWidget {
  Q_OBJECT
 public:
  explicit Histogram(QWidget* parent = nullptr);
  void set_stats(const WeightStats* s);
  // Counts in equal-width bins over [min, max]; empty bins clear.
  void set_bins(std::vector<int64_t> bins, double min, double max);
  const std::vector<int64_t>& bins() const { return bins_; }
  // Said in place of the bars (a weight without data); set_bins clears it.
  void set_note(const QString& note);
  const QString& note() const { return note_; }
  QSize sizeHint() const override { return {240, 90}; }

 protected:
  void paintEvent(QPaintEvent* e) override;

 private:
  std::vector<int64_t> bins_;
  double min_ = 0, max_ = 0;
  QString note_;
};

class Inspector : public QWidget {
  Q_OBJECT
 public:
  explicit Inspector(QWidget* parent = nullptr);
  void show_node(const GraphModel* m, int node);
  NodeInfoModel* info() const { return info_; }
  // Constants a session file did not keep (NodeInfoModel::set_constants_not_kept): their weights
  // say so in place of statistics and histogram. Applies from the next show_node.
  void set_constants_not_kept(std::vector<Tensor> tensors, const QString& why);
  Histogram* histogram() const { return histogram_; }
  // For a fused node of the pass stepper: the nodes it replaced ("Conv 'conv1'"), shown under the
  // title in the link colour with a button that brings them into view. Empty hides the section.
  void show_fused_origins(const QStringList& origins);
  QString fused_origins_text() const;
  // The node ran on a fallback: the reason, under the title in the fallback colour. Empty hides it;
  // show_node hides it too.
  void show_fallback(const QString& reason);
  QString fallback_text() const;
  // The node's captured values (see ValueView::set_values), in a "Values" section under the
  // properties; empty `values` with an empty `hint` hides the section. show_node hides it too, so a
  // caller shows the values after the node.
  void show_values(std::vector<ShownValue> values, const QString& comparison, const QString& hint);
  ValueView* values_view() const { return values_; }
  QTreeView* tree() const { return tree_; }

 Q_SIGNALS:
  void origins_requested();

 protected:
  bool eventFilter(QObject* obj, QEvent* e) override;

 private:
  void show_weight(int i);
  void fit_columns();
  NodeInfoModel* info_;
  QTreeView* tree_;
  QLabel* title_;
  QComboBox* weight_pick_;
  Histogram* histogram_;
  QWidget* fused_box_;
  QLabel* fused_label_;
  QLabel* fallback_label_;
  QGroupBox* values_box_;
  ValueView* values_;
};

}  // namespace ms::views
