// The node inspector dock's content: a tree of the node's properties and, for each weight, a small
// histogram of its values.
#pragma once

#include <QWidget>

class QTreeView;
class QComboBox;
class QLabel;

namespace ms::views {

struct GraphModel;
class NodeInfoModel;
struct WeightStats;

class Histogram : public QWidget {
  Q_OBJECT
 public:
  explicit Histogram(QWidget* parent = nullptr);
  void set_stats(const WeightStats* s);
  QSize sizeHint() const override { return {240, 90}; }

 protected:
  void paintEvent(QPaintEvent* e) override;

 private:
  std::vector<int> bins_;
  double min_ = 0, max_ = 0;
};

class Inspector : public QWidget {
  Q_OBJECT
 public:
  explicit Inspector(QWidget* parent = nullptr);
  void show_node(const GraphModel* m, int node);
  NodeInfoModel* info() const { return info_; }
  // For a fused node of the pass stepper: the nodes it replaced ("Conv 'conv1'"), shown under the
  // title in the link colour with a button that brings them into view. Empty hides the section.
  void show_fused_origins(const QStringList& origins);
  QString fused_origins_text() const;

 Q_SIGNALS:
  void origins_requested();

 private:
  void show_weight(int i);
  NodeInfoModel* info_;
  QTreeView* tree_;
  QLabel* title_;
  QComboBox* weight_pick_;
  Histogram* histogram_;
  QWidget* fused_box_;
  QLabel* fused_label_;
};

}  // namespace ms::views
