// The kernel timeline: every run's tracks (host dispatch, kernel threads, GPU streams, counters)
// stacked on one time scale, each run aligned at its start. Wheel zooms around the cursor, dragging
// pans, Shift+drag (or the right button) selects a range whose time, count and share per op type
// show below (a windowed run's counted by its source off the UI thread). A frame is built in two steps:
// TimelineModel::build culls and folds into a draw list, paintEvent paints it.
#pragma once

#include <QWidget>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "views/timeline/timeline_model.h"

class QLabel;
class QTimer;

namespace ms::views {

class TimelineCanvas;

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;
  void set_runs(std::vector<std::pair<std::string, prof::TracePtr>> runs);
  // After set_runs: a run read window by window from `source` (each change of the visible window
  // loads that window's events, or their summary when zoomed out).
  void add_windowed_run(std::string label, std::shared_ptr<TimelineWindowSource> source);
  const WindowLoad& last_load() const { return last_load_; }
  int window_loads() const { return window_loads_; }
  const TimelineModel& model() const { return model_; }
  TimelineCanvas* canvas() const { return canvas_; }
  void set_selected_node(uint64_t node);
  // What ran on a fallback: the events of the nodes `by_node` names (NodeId value -> reason) and of
  // the op types `by_op` names (fallbacks that name no nodes) get an orange corner mark and the
  // reason in their tooltip. Both empty clear.
  void set_fallbacks(std::map<std::string, std::string> by_op, std::unordered_map<uint64_t, std::string> by_node = {});
  // Selects [t0, t1) ns (relative to the runs' starts) and shows its statistics: at once for traces
  // loaded whole; with a windowed run, counted on a worker thread (its source's query may read
  // millions of events), the panel saying so until they come. A newer range supersedes the count of
  // an older one (cancelled, its result dropped).
  void select_range(int64_t t0, int64_t t1);
  QString stats_text() const;
  bool stats_pending() const { return stats_pending_; }
  bool export_png(const QString& path);

 Q_SIGNALS:
  void node_selected(uint64_t node);
  // A frame of the runs' tracks was painted with `items` items of the draw list (benchmarks: the
  // first frame a user sees).
  void frame_painted(int items);

 private:
  friend class TimelineCanvas;
  void show_stats();
  void render_stats(const RangeStats& st);
  void cancel_stats();
  void load_window();
  TimelineModel model_;
  WindowLoad last_load_;
  int window_loads_ = 0;
  TimelineCanvas* canvas_;
  QLabel* stats_;
  QTimer* legend_timer_;  // asks the sources still counting the legend's totals again
  // The range statistics being counted: the latest count's number (older results are dropped) and
  // its cancel flag.
  uint64_t stats_generation_ = 0;
  std::shared_ptr<std::atomic<bool>> stats_cancel_;
  bool stats_pending_ = false;
};

class TimelineCanvas : public QWidget {
  Q_OBJECT
 public:
  TimelineCanvas(TimelineView* owner, const TimelineModel& model);
  void reset_view();
  // Visible window in ns (relative to the runs' starts).
  double t0() const { return t0_; }
  double t1() const { return t1_; }
  void set_window(double t0, double t1);
  void zoom_at(double x_px, double factor);
  // Step one alone (for benchmarks and tests).
  DrawList draw_list() const { return model_.build(t0_, t1_, time_width()); }
  double time_width() const { return std::max(1, width() - kLabel); }
  int row_at(double y) const;
  // Whether an event belongs to the selected node (its own, or a fused node's that covers it), and
  // how many items of the current frame are drawn outlined for that.
  bool highlights(const prof::Trace& t, const prof::Event& e) const;
  int highlighted_items() const;
  // The fallback reason of an event's op (nullptr: none), and the current frame's marked items.
  const std::string* fallback_of(const prof::Trace& t, const prof::Event& e) const;
  int fallback_items() const;
  std::map<std::string, std::string> fallbacks;              // op type -> reason
  std::unordered_map<uint64_t, std::string> fallback_nodes;  // NodeId value -> reason
  uint64_t selected_node = 0;
  int64_t sel0 = 0, sel1 = 0;  // selected range, ns
  static constexpr int kLabel = 170, kAxis = 26, kLegend = 22;

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent*) override { reset_view(); }
  void resizeEvent(QResizeEvent* e) override;

 private:
  double row_height() const;
  double row_top(int row) const;
  double x_of(double t) const { return kLabel + (t - t0_) / (t1_ - t0_) * time_width(); }
  double t_of(double x) const { return t0_ + (x - kLabel) / time_width() * (t1_ - t0_); }

  TimelineView* owner_;
  const TimelineModel& model_;
  double t0_ = 0, t1_ = 1;
  enum class Drag { None, Pan, Select } drag_ = Drag::None;
  QPointF press_;
  double press_t0_ = 0, press_t1_ = 0;
};

}  // namespace ms::views
