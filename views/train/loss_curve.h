// Live loss curves of training runs: one line per run (PyNative, Graph), loss against step, with
// axes in data units, a legend carrying each run's summary (final loss, step time, accuracy) and a
// log-scale toggle. Points arrive one step at a time from the training job.
#pragma once

#include <QColor>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <vector>

namespace ms::views {

class LossCurveView : public QWidget {
  Q_OBJECT
 public:
  explicit LossCurveView(QWidget* parent = nullptr);
  // Starts (or restarts) the series `name`; colours follow the mode names ("PyNative", "Graph").
  void begin_series(const QString& name);
  void add_point(const QString& name, int step, double loss);
  // One line under the series' legend entry ("96.9% test accuracy, 1.2 ms/step").
  void set_summary(const QString& name, const QString& text);
  void clear();
  void set_log_scale(bool on);
  bool log_scale() const { return log_; }
  int series_count() const { return static_cast<int>(series_.size()); }
  int point_count(const QString& name) const;
  // The series' names in order, a series' (step, loss) points and its summary line.
  QStringList names() const;
  std::vector<std::pair<int, double>> points(const QString& name) const;
  QString summary(const QString& name) const;
  // The series' colour: its mode's, lighter for ranks above 0 ("Graph rank 1"); invalid for none.
  QColor color(const QString& name) const;
  QSize sizeHint() const override { return {900, 420}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  struct Series {
    QString name;
    QColor color;
    std::vector<std::pair<int, double>> points;
    QString summary;
  };
  Series* find(const QString& name);
  std::vector<Series> series_;
  bool log_ = false;
};

}  // namespace ms::views
