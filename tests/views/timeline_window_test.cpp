// The timeline over a trace read window by window (views/timeline/timeline_source.h): a source over
// an in-memory trace answers as a session file does, counting each query. Zoomed out, each track's
// window comes as a summary whose buckets count every event; zoomed in, the events themselves, drawn
// exactly as the whole trace draws them; the view loads a window on every change of it.
#include <gtest/gtest.h>

#include <QImage>
#include <QTest>

#include <algorithm>
#include <map>
#include <tuple>

#include "profiler/analysis/nesting.h"

#include "tests/views/result_traces.h"
#include "tests/views/test_graphs.h"
#include "views/common/palette.h"
#include "views/timeline/timeline_view.h"

namespace ms::views {
namespace {

class MemoryWindowSource : public TimelineWindowSource {
 public:
  explicit MemoryWindowSource(prof::TracePtr t) : t_(std::move(t)), depth_(prof::nesting_depths(*t_)) {
    auto sk = std::make_shared<prof::Trace>(*t_);
    sk->events.clear();
    sk->flows.clear();
    skeleton_ = sk;
  }
  prof::TracePtr skeleton() const override { return skeleton_; }
  std::pair<int64_t, int64_t> span() const override { return {t_->begin_ns(), t_->end_ns()}; }
  int64_t event_count() const override { return static_cast<int64_t>(t_->events.size()); }
  int64_t count(uint32_t track, int64_t t0, int64_t t1) const override {
    ++queries;
    return std::count_if(t_->events.begin(), t_->events.end(),
                         [&](const prof::Event& e) { return e.track == track && e.ts_ns >= t0 && e.ts_ns < t1; });
  }
  std::vector<prof::Event> events(uint32_t track, int64_t t0, int64_t t1, std::vector<int32_t>& depths) const override {
    ++queries;
    std::vector<prof::Event> out;
    depths.clear();
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const prof::Event& e = t_->events[i];
      if (e.track == track && e.ts_ns < t1 && e.end_ns() > t0) out.push_back(e), depths.push_back(depth_[i]);
    }
    fetched += out.size();
    return out;
  }
  int depth_count(uint32_t track) const override {
    int n = 0;
    for (size_t i = 0; i < t_->events.size(); ++i)
      if (t_->events[i].track == track) n = std::max(n, depth_[i] + 1);
    return n;
  }
  std::vector<WindowSummaryBucket> summary(uint32_t track, int64_t t0, int64_t t1, int buckets) const override {
    ++queries;
    std::vector<WindowSummaryBucket> out(static_cast<size_t>(buckets));
    const double step = static_cast<double>(t1 - t0) / buckets;
    for (int k = 0; k < buckets; ++k) {
      out[k].t0 = t0 + static_cast<int64_t>(step * k);
      out[k].t1 = k + 1 == buckets ? t1 : t0 + static_cast<int64_t>(step * (k + 1));
    }
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const prof::Event& e = t_->events[i];
      if (e.track != track || e.ts_ns < t0 || e.ts_ns >= t1) continue;
      auto k = std::min<size_t>(static_cast<size_t>(static_cast<double>(e.ts_ns - t0) / step), out.size() - 1);
      while (k > 0 && e.ts_ns < out[k].t0) --k;
      while (k + 1 < out.size() && e.ts_ns >= out[k].t1) ++k;
      if (out[k].count++ == 0) out[k].first = e, out[k].first_depth = depth_[i];
    }
    return out;
  }
  std::optional<std::vector<std::pair<std::string, int64_t>>> op_type_totals() const override {
    if (totals_pending > 0) {
      --totals_pending;
      return std::nullopt;
    }
    std::map<std::string, int64_t> by_name;
    for (const prof::Event& e : t_->events)
      if (e.kind == prof::EventKind::Op || e.kind == prof::EventKind::Foreign)
        by_name[std::string(t_->str(e.name))] += e.dur_ns;
    return std::vector<std::pair<std::string, int64_t>>(by_name.begin(), by_name.end());
  }
  std::string error() const override { return fail; }
  std::string fail;                // what error() says (a source that failed)
  mutable int totals_pending = 0;  // asks answered "still counting" before the totals
  mutable int queries = 0;
  mutable size_t fetched = 0;

 private:
  prof::TracePtr t_, skeleton_;
  std::vector<int32_t> depth_;
};

TEST(TimelineWindow, ZoomedOutSummarizesEveryEventZoomedInDrawsThemAsTheWholeTrace) {
  auto trace = test::large_trace(200000);
  auto source = std::make_shared<MemoryWindowSource>(trace);
  TimelineModel whole, windowed;
  whole.set_runs({{"big", trace}});
  windowed.set_runs({});
  windowed.add_windowed_run("big", source);
  ASSERT_TRUE(windowed.windowed());
  EXPECT_EQ(windowed.span_ns(), whole.span_ns());
  EXPECT_EQ(windowed.event_count(), 200000u);
  // The whole span on 1000 px: summaries, about a bucket per 3 px, counting every event.
  const WindowLoad out = windowed.load_window(0, static_cast<double>(windowed.span_ns()), 1000);
  EXPECT_EQ(out.events, 0u);
  EXPECT_GT(out.tracks_summarized, 0u);
  EXPECT_LT(source->fetched, 1u);
  uint64_t counted = 0;
  for (const DrawItem& it : windowed.build(0, static_cast<double>(windowed.span_ns()), 1000).items) counted += it.count;
  EXPECT_EQ(counted, 200000u);
  // 10 µs: the events themselves, the same items as the whole trace's.
  const WindowLoad in = windowed.load_window(50'000'000, 50'010'000, 1000);
  EXPECT_GT(in.events, 0u);
  EXPECT_EQ(in.tracks_summarized, 0u);
  EXPECT_LT(in.events, 200u);
  const DrawList a = whole.build(50'000'000, 50'010'000, 1000), b = windowed.build(50'000'000, 50'010'000, 1000);
  ASSERT_EQ(a.items.size(), b.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    EXPECT_FLOAT_EQ(a.items[i].x0, b.items[i].x0) << i;
    EXPECT_FLOAT_EQ(a.items[i].x1, b.items[i].x1) << i;
    EXPECT_EQ(a.items[i].count, b.items[i].count) << i;
    EXPECT_EQ(whole.event(a.items[i].row, a.items[i].event).ts_ns,
              windowed.event(b.items[i].row, b.items[i].event).ts_ns);
  }
}

// Iterations enclosing ops on the host track, ops of one iteration nested two deep, the kernels on
// their own track: the windowed rows are the loaded trace's rows, each event at its depth.
TEST(TimelineWindow, NestedEventsGetTheRowsOfTheWholeTrace) {
  auto nested = test::nested_trace();
  prof::Event outer;  // the op holding two more
  for (const prof::Event& e : nested->events)
    if (e.kind == prof::EventKind::Op && e.iteration == 1) {
      outer = e;
      break;
    }
  auto source = std::make_shared<MemoryWindowSource>(nested);
  TimelineModel whole, windowed;
  whole.set_runs({{"nested", nested}});
  windowed.set_runs({});
  windowed.add_windowed_run("nested", source);
  const double span = static_cast<double>(whole.span_ns());
  const WindowLoad load = windowed.load_window(0, span, 100000);
  EXPECT_EQ(load.tracks_summarized, 0u);
  // Events: the rows of the host track hold iterations (0), ops (1) and the inner ops (2).
  const auto event_rows = [](const TimelineModel& m) {
    std::vector<std::tuple<int, uint32_t, int, std::string, std::vector<int64_t>, std::vector<int64_t>>> out;
    for (const TimelineRow& r : m.rows()) {
      if (r.counter) continue;
      std::vector<int64_t> durs;
      for (uint32_t e : r.events) durs.push_back(m.runs()[static_cast<size_t>(r.run)].trace->events[e].dur_ns);
      out.emplace_back(r.run, r.track, r.depth, r.label, r.starts, durs);
    }
    return out;
  };
  const auto a = event_rows(whole), bb = event_rows(windowed);
  int deepest = 0;
  for (const auto& r : a) deepest = std::max(deepest, std::get<2>(r));
  EXPECT_EQ(deepest, 2);
  ASSERT_EQ(a.size(), bb.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == bb[i]) << "row " << i << " depth " << std::get<2>(a[i]);
  // A window inside the nested op: its enclosing events come with it, each in its row.
  const double t0 = static_cast<double>(outer.ts_ns + 20 - whole.runs()[0].origin_ns);
  windowed.load_window(t0, t0 + 100, 1000);
  const DrawList x = whole.build(t0, t0 + 100, 1000), y = windowed.build(t0, t0 + 100, 1000);
  ASSERT_EQ(x.items.size(), y.items.size());
  ASSERT_GE(x.items.size(), 3u);
  for (size_t i = 0; i < x.items.size(); ++i) {
    EXPECT_EQ(x.items[i].row, y.items[i].row) << i;
    EXPECT_EQ(whole.event(x.items[i].row, x.items[i].event).ts_ns,
              windowed.event(y.items[i].row, y.items[i].event).ts_ns);
  }
}

// The view at 1200x500 with `source` as its one run, windowed ("Graph").
void show_windowed(TimelineView& v, const std::shared_ptr<MemoryWindowSource>& source) {
  v.resize(1200, 500);
  v.set_runs({});
  v.add_windowed_run("Graph", source);
}

TEST(TimelineWindow, TheViewLoadsTheWindowItShows) {
  test::qt_app();
  auto source = std::make_shared<MemoryWindowSource>(test::generated_trace(true, 4));
  TimelineView v;
  show_windowed(v, source);
  const int loads = v.window_loads();
  EXPECT_GT(loads, 0);
  const QImage img = v.grab().toImage();
  EXPECT_FALSE(img.isNull());
  TimelineCanvas* c = v.canvas();
  c->zoom_at(TimelineCanvas::kLabel + c->time_width() / 2, 0.25);
  EXPECT_GT(v.window_loads(), loads);
  EXPECT_GT(v.last_load().events, 0u);
  EXPECT_FALSE(c->draw_list().items.empty());
  // The range statistics of a windowed run come from a worker thread.
  v.select_range(0, v.model().span_ns());
  for (int i = 0; i < 1000 && v.stats_pending(); ++i) QTest::qWait(5);
  EXPECT_FALSE(v.stats_pending());
  EXPECT_TRUE(v.stats_text().contains(QStringLiteral("Graph")));
}

TEST(TimelineWindow, TheLegendTakesTotalsCountedAfterTheFirstFrame) {
  test::qt_app();
  const prof::TracePtr t = test::generated_trace(true, 4);
  TimelineModel whole;
  whole.set_runs({{"Graph", t}});
  ASSERT_FALSE(whole.top_names().empty());
  auto source = std::make_shared<MemoryWindowSource>(t);
  source->totals_pending = 3;
  TimelineView v;
  show_windowed(v, source);
  EXPECT_TRUE(v.model().legend_pending());
  EXPECT_TRUE(v.model().top_names().empty());
  for (int i = 0; i < 100 && v.model().legend_pending(); ++i) QTest::qWait(50);
  EXPECT_FALSE(v.model().legend_pending());
  EXPECT_EQ(v.model().top_names(), whole.top_names());
}

// A windowed run whose source failed (its file moved or damaged while open) says so in the legend's
// line, in red, in place of the op types; the model names the error.
TEST(TimelineWindow, AFailedSourceSaysSoInTheLegend) {
  test::qt_app();
  auto source = std::make_shared<MemoryWindowSource>(test::generated_trace(true, 4));
  TimelineView v;
  show_windowed(v, source);
  EXPECT_EQ(v.model().source_error(), "");
  ASSERT_FALSE(v.model().top_names().empty());
  const QColor swatch = op_type_color(QString::fromStdString(v.model().top_names()[0]));
  // Pixels in the legend's line of the first op type's swatch colour, and reddish ones.
  auto legend_pixels = [&v, &swatch] {
    const QImage img = v.canvas()->grab().toImage();
    std::pair<int, int> n{0, 0};
    for (int y = img.height() - TimelineCanvas::kLegend; y < img.height(); ++y)
      for (int x = TimelineCanvas::kLabel; x < img.width(); ++x) {
        const QColor c = img.pixelColor(x, y);
        n.first += c.rgb() == swatch.rgb();
        n.second += c.red() > 150 && c.green() < 100 && c.blue() < 90 && c.rgb() != swatch.rgb();
      }
    return n;
  };
  EXPECT_GT(legend_pixels().first, 100);  // the swatch, 14 x 12
  source->fail = "f.modescope: database disk image is malformed";
  EXPECT_EQ(v.model().source_error(), source->fail);
  const auto [swatches, red_text] = legend_pixels();
  EXPECT_EQ(swatches, 0);
  EXPECT_GT(red_text, 20);
}

}  // namespace
}  // namespace ms::views
