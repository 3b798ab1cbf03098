// The inspector's tree: one node's attributes, inputs and outputs (shape, dtype), weights (shape,
// parameter count, statistics), cost (FLOPs, bytes) and origins. Built as an immutable snapshot and
// swapped in one reset.
#pragma once

#include <QAbstractItemModel>
#include <QString>

#include <memory>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::views {

struct GraphModel;

struct WeightStats {
  QString name;
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, std = 0;
  std::vector<int> histogram;  // counts in equal-width bins over [min, max]
};

// Statistics of a tensor's values (sampled to at most `max_samples` values for huge tensors).
WeightStats weight_stats(const QString& name, const Tensor& t, int bins = 24, int64_t max_samples = 4'000'000);

class NodeInfoModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  struct Row {
    QString key, value;
    int parent = -1;
    std::vector<int> children;
  };

  explicit NodeInfoModel(QObject* parent = nullptr);
  // Shows node `node` of `m` (-1 clears).
  void set_node(const GraphModel* m, int node);
  const std::vector<WeightStats>& weights() const { return weights_; }
  int section(const QString& key) const;  // row index of a top-level section, or -1

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<Row> rows_;  // rows_[i].parent == -1: top level
  std::vector<int> top_;
  std::vector<WeightStats> weights_;
};

QString format_count(double v);  // 1.2 K, 3.4 M, 5.6 G

}  // namespace ms::views
