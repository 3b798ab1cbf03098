// The pass list: one row per compiler pass run in Graph mode (name, whether it changed the graph,
// nodes after it, time). Empty until a compile reports its passes; set_passes() swaps a whole
// snapshot in one reset.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <memory>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::views {

struct PassRow {
  QString name;
  QString description;
  bool changed = false;
  int nodes_after = 0;
  double ms = 0;
  int added = 0, removed = 0, fused = 0;
  std::shared_ptr<const ir::Graph> graph;  // the graph after this pass (null: not kept)
  std::string pass;                        // pipeline argument ("fuse-ops"); empty for the input row (not checkable)
  bool enabled = true;                     // unchecked: the next Graph-mode run leaves it out
};

class PassListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kName, kChanged, kNodes, kTime, kColumns };
  explicit PassListModel(QObject* parent = nullptr);
  void set_passes(std::vector<PassRow> rows);
  const std::vector<PassRow>& passes() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  // Pipeline arguments of the unchecked passes.
  std::vector<std::string> disabled() const;

 Q_SIGNALS:
  void enabled_changed();

 private:
  std::vector<PassRow> rows_;
};

}  // namespace ms::views
