// "What did this pass buy me": the pass-effect table (views/models/pass_delta_model.h) with a
// Measure button (the app re-compiles and re-runs without each pass in a job), a progress line and
// CSV/PNG export.
#pragma once

#include <QWidget>

#include "views/models/pass_delta_model.h"

class QLabel;
class QPushButton;
class QTableView;

namespace ms::views {

class PassDeltaView : public QWidget {
  Q_OBJECT
 public:
  explicit PassDeltaView(QWidget* parent = nullptr);
  PassDeltaModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  // `what`: the measurement under way ("3 of 8: without fuse-ops"); empty when idle.
  void set_busy(bool busy, const QString& what = {});
  void set_note(const QString& text);
  QString note() const;
  bool export_csv(const QString& path) const;
  bool export_png(const QString& path);
  QSize sizeHint() const override { return {900, 320}; }

 Q_SIGNALS:
  void measure_requested();

 private:
  PassDeltaModel* model_;
  QTableView* table_;
  QLabel* note_;
  QPushButton* measure_;
  QPushButton* csv_;
};

}  // namespace ms::views
