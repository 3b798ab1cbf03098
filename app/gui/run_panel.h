// Run options (mode, device, jit level, precision, threads, iterations, batch) and the Run button; the last
// choices are kept in QSettings.
#pragma once

#include <QWidget>

#include "app/gui/document.h"

class QComboBox;
class QSpinBox;
class QPushButton;
class QLabel;

namespace ms::app {

class RunPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunPanel(QWidget* parent = nullptr);
  // Modes to run: {"pynative"}, {"graph"} or both.
  std::vector<std::string> modes() const;
  RunRequest request(const std::string& mode) const;
  void set_modes(const QString& which);  // "pynative" | "graph" | "both"
  void set_busy(bool busy);
  void set_iterations(int n);
  bool set_jit_level(const QString& level);  // "O0" | "O1" | "O2"; false for anything else
  bool set_precision(const QString& p);      // "f32" | "bf16" | "fp16"; false for anything else
  void show_result(const RunOutcome& r);
  void clear_results();
  void save_settings() const;
  void load_settings();

 Q_SIGNALS:
  void run_requested();

 private:
  QComboBox* mode_;
  QComboBox* device_;
  QComboBox* jit_;
  QComboBox* precision_;
  QSpinBox* threads_;
  QSpinBox* iterations_;
  QSpinBox* batch_;
  QPushButton* run_;
  QLabel* results_;
  QString pynative_text_, graph_text_;
};

}  // namespace ms::app
