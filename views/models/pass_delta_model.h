// "What did this pass buy me": the full pipeline against the pipeline without one pass, one row
// per pass left out. Columns are the run's figures (latency, peak memory, arena, kernels, nodes,
// compile time); a pass row shows its value and the change against the full pipeline, coloured
// from the pass's side: green where the pass saves (leaving it out costs), red where it costs.
// Qt::UserRole is the raw value, kDeltaRole the relative change (for sorting and tests).
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <vector>

namespace ms::views {

// The figures of one Graph-mode compile + run.
struct PipelineFigures {
  double latency_ms = 0;  // median per iteration
  double compile_ms = 0;
  uint64_t peak_bytes = 0;
  uint64_t arena_bytes = 0;
  int64_t kernels = 0;  // per iteration
  int nodes = 0;        // after the last pass
  QString error;        // not empty: this run failed (the row says why)
};

struct PassDelta {
  QString pass;  // pipeline argument left out ("fuse-ops")
  PipelineFigures without;
};

class PassDeltaModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kPipeline, kLatency, kPeak, kArena, kKernels, kNodes, kCompile, kColumns };
  static constexpr int kDeltaRole = Qt::UserRole + 1;
  // Changes under this share are measurement noise: shown, not coloured.
  static constexpr double kNoise = 0.02;

  explicit PassDeltaModel(QObject* parent = nullptr);
  void set_results(PipelineFigures full, std::vector<PassDelta> rows);
  void clear();
  const PipelineFigures& full() const { return full_; }
  const std::vector<PassDelta>& rows() const { return rows_; }
  // (without - full) / full for a figure column of a pass row (row >= 1); 0 when undefined.
  double delta(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  // Header then one line per row: raw values and the deltas in percent.
  QString to_csv() const;

 private:
  static double value(const PipelineFigures& f, int column);
  const PipelineFigures& figures(int row) const {
    return row == 0 ? full_ : rows_[static_cast<size_t>(row - 1)].without;
  }
  bool has_full_ = false;
  PipelineFigures full_;
  std::vector<PassDelta> rows_;
};

}  // namespace ms::views
