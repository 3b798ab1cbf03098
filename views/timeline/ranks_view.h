// The Ranks view (File > Open Ranks): one lane per rank of a data-parallel training run, each from
// its step 2 (the compile and step 1 drawn before it) - the steps above, the collectives below
// (highlighted), the collectives of one sequence number joined across lanes by a line at their ends
// - with each rank's median step time and all-reduce wait per step and the steps they cover (the
// warm-up step 1 left out and hatched), and each run's straggler named. Data in ranks_data.h.
#pragma once

#include <QWidget>

#include "views/timeline/ranks_data.h"

namespace ms::views {

class RanksView : public QWidget {
  Q_OBJECT
 public:
  explicit RanksView(QWidget* parent = nullptr);
  void set_data(RanksData data);
  const RanksData& data() const { return data_; }
  // One line per rank: "train graph · rank 1: step 28.7 ms (median), all-reduce wait 8.8 ms/step
  // over steps 2–10, ...", then each run's straggler.
  QString summary_text() const;
  bool export_png(const QString& path);
  QSize sizeHint() const override { return {900, 360}; }
  static constexpr int kLabel = 230, kAxis = 26, kLane = 58;

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  RanksData data_;
};

}  // namespace ms::views
