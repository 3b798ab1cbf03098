// The Training tab: train the open zoo template (PyNative, Graph or both, one after the other) with
// an optimizer, learning rate, step count and data set, and watch the loss curves grow step by step;
// each run's summary (test accuracy, median step time, compile time, peak memory) lands in the
// legend and the text under the plot.
#pragma once

#include <QWidget>
#include <vector>

#include "engine/frontend/train/run.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QCheckBox;
class QSpinBox;

namespace ms::views {
class LossCurveView;
}

namespace ms::app {

class TrainPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TrainPanel(QWidget* parent = nullptr);
  // Options of the form (the model is filled in by the window).
  nn::train::RunOptions options() const;
  // "PyNative" and/or "Graph", in the order they run.
  std::vector<nn::Mode> modes() const;
  void set_steps(int steps);
  // Data-parallel ranks (1: one process, in the app).
  int ranks() const;
  void set_ranks(int ranks);
  // With ranks > 1: BatchNorm statistics over every rank's slice (train --sync-bn).
  bool sync_batchnorm() const;
  void set_sync_batchnorm(bool on);
  void set_busy(bool busy);
  void set_text(const QString& text);
  QString text() const;
  views::LossCurveView* curve() const { return curve_; }

 Q_SIGNALS:
  void train_requested();

 private:
  QComboBox* mode_;
  QComboBox* optimizer_;
  QDoubleSpinBox* lr_;
  QSpinBox* steps_;
  QComboBox* data_;
  QComboBox* jit_;
  QSpinBox* ranks_;
  QCheckBox* sync_bn_;
  QPushButton* train_;
  views::LossCurveView* curve_;
  QLabel* text_;
};

}  // namespace ms::app
