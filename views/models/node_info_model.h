// The inspector's tree: one node's attributes, inputs and outputs (shape, dtype), weights (shape,
// parameter count, statistics), cost (FLOPs, bytes) and origins. Built as an immutable snapshot and
// swapped in one reset. A weight whose data a session file did not keep (set_constants_not_kept) is
// said to be so instead of its statistics: the zeros read back in its place are not its values.
#pragma once

#include <QAbstractItemModel>
#include <QString>

#include <memory>
#include <unordered_set>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::views {

struct GraphModel;

struct WeightStats {
  QString name;
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, std = 0;
  std::vector<int> histogram;  // counts in equal-width bins over [min, max]
  bool not_kept = false;       // no data: the session file did not keep it (count only)
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
  // Constants whose data the session file did not keep (zeros in their place), matched by buffer
  // wherever a graph shows them (the tensors are held, so no other buffer takes their address), and
  // why, shown as "not kept in the session file (<why>)". Takes effect at the next set_node.
  void set_constants_not_kept(std::vector<Tensor> tensors, QString why);
  bool not_kept(const Tensor& t) const;
  QString not_kept_text() const;
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
  std::vector<Tensor> not_kept_;  // holds the buffers below
  std::unordered_set<const Buffer*> not_kept_buffers_;
  QString not_kept_why_;
};

QString format_count(double v);  // 1.2 K, 3.4 M, 5.6 G

}  // namespace ms::views
