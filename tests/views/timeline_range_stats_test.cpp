// The range statistics under the timeline for a trace kept in a session file and read window by
// window: the same names, counts, times, shares and order as for the trace loaded whole, for the
// whole span (the file's stored totals, or a scan where a file of schema 7 has none) and for a range
// cutting through events (nested ones, kernels, events of no duration on its edges), whatever window
// the view has loaded (a zoomed-out summary whose items stand for many events under one name). They
// come from a worker thread; a newer range supersedes an older one; a query that fails says so in
// one line of the panel.
#include <gtest/gtest.h>

#include <QCoreApplication>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "app/gui/session_trace_source.h"
#include "app/session/session_file.h"
#include "tests/app/session_test_util.h"
#include "tests/views/test_graphs.h"
#include "views/timeline/timeline_view.h"

namespace ms::views {
namespace {

// A host track of iterations (Run events) holding ops of 6 names, some of no duration, a kernel
// track whose kernels outlast their ops, 2000 iterations: far more events than pixels.
prof::TracePtr rs_test_trace() {
  prof::TraceBuilder b;
  b.add_track({prof::TrackKind::HostThread, 1, 0, "p", "host", 0});
  b.add_track({prof::TrackKind::KernelThread, 1, 1, "p", "kernels", 1});
  const char* names[] = {"Conv", "Relu", "MaxPool", "Gemm", "Flatten", "Marker"};
  std::vector<prof::StrId> ids;
  for (const char* n : names) ids.push_back(b.intern(n));
  const prof::StrId run = b.intern("iteration"), kernel = b.intern("conv_kernel");
  int64_t ts = 1000;
  for (int it = 0; it < 2000; ++it) {
    const int64_t start = ts;
    for (int k = 0; k < 6; ++k) {
      prof::Event e;
      e.track = 0, e.ts_ns = ts, e.iteration = it, e.kind = prof::EventKind::Op;
      e.name = ids[static_cast<size_t>(k)];
      e.dur_ns = k == 5 ? 0 : 300 + k * 170 + (it * 7 + k) % 50;
      b.add_event(e);
      if (k == 0) {
        prof::Event kern = e;
        kern.track = 1, kern.kind = prof::EventKind::Kernel, kern.name = kernel, kern.dur_ns = e.dur_ns + 900;
        b.add_event(kern);
      }
      ts += e.dur_ns + 20;
    }
    prof::Event r;
    r.track = 0, r.ts_ns = start, r.dur_ns = ts - start, r.kind = prof::EventKind::Run, r.name = run, r.iteration = it;
    b.add_event(r);
    ts += 100;
  }
  return b.finish();
}

session::SessionData rs_session(const prof::TracePtr& t) {
  session::SessionData d;
  session::SessionRun r;
  r.label = "pynative";
  r.outcome.mode = "pynative";
  r.outcome.trace = t;
  d.runs.push_back(r);
  d.model = {"zoo:lenet5", "spec", "", "", 0};
  return d;
}

// Run 0 of `path` as the app opens a big trace: its events unchecked, read window by window.
std::shared_ptr<app::SessionTraceSource> rs_open_windowed(const std::string& path) {
  auto reader = session::SessionReader::open(path, session::Verify::AllButEvents);
  EXPECT_TRUE(reader.has_value()) << reader.status().message();
  if (!reader) return nullptr;
  auto source = app::SessionTraceSource::make(std::make_shared<const session::SessionReader>(std::move(*reader)), 0);
  EXPECT_TRUE(source.has_value()) << source.status().message();
  return source ? *source : nullptr;
}

void rs_expect_equal(const RangeStats& got, const RangeStats& want) {
  EXPECT_EQ(got.t0, want.t0);
  EXPECT_EQ(got.t1, want.t1);
  ASSERT_EQ(got.per_run.size(), want.per_run.size());
  for (size_t r = 0; r < want.per_run.size(); ++r) {
    EXPECT_EQ(got.errors[r], "");
    ASSERT_EQ(got.per_run[r].size(), want.per_run[r].size()) << "run " << r;
    for (size_t i = 0; i < want.per_run[r].size(); ++i) {
      const OpShare &a = got.per_run[r][i], &b = want.per_run[r][i];
      EXPECT_EQ(a.name, b.name) << i;
      EXPECT_EQ(a.count, b.count) << b.name;
      EXPECT_EQ(a.ns, b.ns) << b.name;
      EXPECT_DOUBLE_EQ(a.share, b.share) << b.name;
    }
  }
}

// Waits for the view's range statistics to come from their worker thread.
bool rs_settle(TimelineView& v) {
  for (int i = 0; i < 2000 && v.stats_pending(); ++i) {
    QCoreApplication::processEvents();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  QCoreApplication::processEvents();
  return !v.stats_pending();
}

TEST(TimelineRangeStats, WindowedRunCountsTheRangeAsTheTraceLoadedWhole) {
  test::qt_app();
  testing::TempDir dir("timeline_range_stats");
  const prof::TracePtr trace = rs_test_trace();
  for (int schema : {8, 7}) {
    SCOPED_TRACE("schema " + std::to_string(schema));
    const std::string path = dir.file("range" + std::to_string(schema) + ".modescope");
    ASSERT_TRUE(session::save_session(path, rs_session(trace)).is_ok());
    if (schema == 7)
      session::test::exec_sql(path,
                              MS_DROP_SCHEMA_8_SQL "PRAGMA user_version = 7; PRAGMA journal_mode = DELETE; VACUUM;");
    TimelineView whole, windowed;
    whole.resize(900, 400);
    windowed.resize(900, 400);
    whole.set_runs({{"PyNative", trace}});
    windowed.set_runs({});
    auto source = rs_open_windowed(path);
    ASSERT_TRUE(source);
    windowed.add_windowed_run("PyNative", source);
    ASSERT_TRUE(windowed.model().windowed());
    whole.show();
    windowed.show();
    QCoreApplication::processEvents();
    // What the view holds is a summary: far fewer items than events.
    windowed.canvas()->reset_view();
    const std::vector<uint32_t>& folded = windowed.model().runs()[0].folded;
    ASSERT_TRUE(std::any_of(folded.begin(), folded.end(), [](uint32_t n) { return n > 1; }));
    ASSERT_LT(windowed.model().runs()[0].trace->events.size(), trace->events.size() / 4);
    const int64_t span = whole.model().span_ns();
    // Ranges from inside an op of the 700th iteration to inside one of the 1300th, and with an end
    // on the start of an op of no duration (its iteration's last: the host track holds per iteration
    // its Run event, then its 6 ops).
    const int64_t origin = trace->begin_ns();
    auto host_start = [&](int iteration, int k) {
      return trace->events[static_cast<size_t>(iteration * 7 + k)].ts_ns - origin;
    };
    ASSERT_EQ(trace->events[900 * 7 + 6].dur_ns, 0);
    const int64_t mid0 = host_start(700, 2) + 57, mid1 = host_start(1300, 4) + 131;
    const int64_t marker0 = host_start(700, 6), marker1 = host_start(900, 6);
    const std::pair<int64_t, int64_t> ranges[] = {{0, span},         {0, span + span / 100}, {mid0, mid1},
                                                  {marker0, mid1},   {mid0, marker1},        {-50, mid0},
                                                  {marker0, marker1}};
    for (const auto& [t0, t1] : ranges) {
      SCOPED_TRACE(std::to_string(t0) + " - " + std::to_string(t1));
      const RangeStats want = whole.model().stats(t0, t1);
      ASSERT_FALSE(want.per_run[0].empty());
      rs_expect_equal(windowed.model().stats(t0, t1), want);
      whole.select_range(t0, t1);
      windowed.select_range(t0, t1);
      ASSERT_TRUE(rs_settle(windowed));
      EXPECT_EQ(windowed.stats_text(), whole.stats_text());
    }
  }
}

// A session file's source whose range counts wait until they are let go.
class RsGatedSource : public TimelineWindowSource {
 public:
  explicit RsGatedSource(std::shared_ptr<app::SessionTraceSource> s) : s_(std::move(s)) {}
  prof::TracePtr skeleton() const override { return s_->skeleton(); }
  std::pair<int64_t, int64_t> span() const override { return s_->span(); }
  int64_t event_count() const override { return s_->event_count(); }
  int64_t count(uint32_t track, int64_t t0, int64_t t1) const override { return s_->count(track, t0, t1); }
  std::vector<prof::Event> events(uint32_t track, int64_t t0, int64_t t1, std::vector<int32_t>& depths) const override {
    return s_->events(track, t0, t1, depths);
  }
  int depth_count(uint32_t track) const override { return s_->depth_count(track); }
  std::vector<WindowSummaryBucket> summary(uint32_t track, int64_t t0, int64_t t1, int buckets) const override {
    return s_->summary(track, t0, t1, buckets);
  }
  std::optional<std::vector<std::pair<std::string, int64_t>>> op_type_totals() const override {
    return s_->op_type_totals();
  }
  RangeTotals range_totals(int64_t t0, int64_t t1, const std::function<bool()>& cancelled) const override {
    ++started;
    while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return s_->range_totals(t0, t1, cancelled);
  }
  mutable std::atomic<bool> open{false};
  mutable std::atomic<int> started{0};

 private:
  std::shared_ptr<app::SessionTraceSource> s_;
};

TEST(TimelineRangeStats, ThePanelWaitsForTheCountAndANewerRangeSupersedesIt) {
  test::qt_app();
  testing::TempDir dir("timeline_range_stats_gate");
  const prof::TracePtr trace = rs_test_trace();
  const std::string path = dir.file("gate.modescope");
  ASSERT_TRUE(session::save_session(path, rs_session(trace)).is_ok());
  auto gated = std::make_shared<RsGatedSource>(rs_open_windowed(path));
  TimelineView whole, windowed;
  whole.set_runs({{"PyNative", trace}});
  windowed.set_runs({});
  windowed.add_windowed_run("PyNative", gated);
  const int64_t span = whole.model().span_ns();
  windowed.select_range(0, span);
  EXPECT_TRUE(windowed.stats_pending());
  EXPECT_TRUE(windowed.stats_text().contains(QStringLiteral("counting")));
  EXPECT_FALSE(windowed.stats_text().contains(QStringLiteral("events;")));
  windowed.select_range(span / 3, span / 2);
  for (int i = 0; i < 2000 && gated->started.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(gated->started.load(), 2);
  QCoreApplication::processEvents();
  EXPECT_TRUE(windowed.stats_pending());
  gated->open = true;
  ASSERT_TRUE(rs_settle(windowed));
  whole.select_range(span / 3, span / 2);
  EXPECT_EQ(windowed.stats_text(), whole.stats_text());
  // The older count's result, arriving later, changes nothing.
  for (int i = 0; i < 20; ++i) {
    QCoreApplication::processEvents();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(windowed.stats_text(), whole.stats_text());
}

TEST(TimelineRangeStats, AFailedCountSaysSoInOneLine) {
  test::qt_app();
  testing::TempDir dir("timeline_range_stats_fail");
  const std::string path = dir.file("gone.modescope");
  ASSERT_TRUE(session::save_session(path, rs_session(rs_test_trace())).is_ok());
  auto source = rs_open_windowed(path);
  ASSERT_TRUE(source);
  TimelineView v;
  v.resize(900, 400);
  v.set_runs({});
  v.add_windowed_run("PyNative", source);
  // The file moved away after it was opened: the count's own connection cannot open it.
  const std::string moved = dir.file("moved.modescope");
  ASSERT_EQ(std::rename(path.c_str(), moved.c_str()), 0);
  const RangeStats st = v.model().stats(0, v.model().span_ns());
  ASSERT_EQ(st.errors.size(), 1u);
  EXPECT_NE(st.errors[0].find(path), std::string::npos) << st.errors[0];
  EXPECT_TRUE(st.per_run[0].empty());
  v.select_range(0, v.model().span_ns() / 2);
  ASSERT_TRUE(rs_settle(v));
  const QString text = v.stats_text();
  const QStringList lines = text.split(QStringLiteral("<br>"));
  ASSERT_EQ(lines.size(), 2) << text.toStdString();
  EXPECT_TRUE(lines[1].contains(QStringLiteral("could not be counted"))) << text.toStdString();
  EXPECT_TRUE(lines[1].contains(QString::fromStdString(path))) << text.toStdString();
  EXPECT_FALSE(lines[1].contains(QStringLiteral("events;")));
}

}  // namespace
}  // namespace ms::views

namespace ms::views {
namespace {

// Timing on a large session file (not run by default): MODESCOPE_RANGE_STATS_SESSION=F views_tests
// --gtest_also_run_disabled_tests --gtest_filter='*RangeStatsOfALargeSession*' (make F with
// `modescope-cli bench-session write-trace F --events 10000000`). Prints each range's count time.
TEST(TimelineRangeStats, DISABLED_RangeStatsOfALargeSession) {
  const char* path = std::getenv("MODESCOPE_RANGE_STATS_SESSION");
  if (!path) GTEST_SKIP() << "MODESCOPE_RANGE_STATS_SESSION names no session";
  auto source = rs_open_windowed(path);
  ASSERT_TRUE(source);
  TimelineModel m;
  m.set_runs({});
  m.add_windowed_run("big", source);
  const int64_t span = m.span_ns();
  const std::pair<int64_t, int64_t> ranges[] = {
      {0, span}, {span / 2, span / 2 + span / 100}, {span / 2, span / 2 + span / 10}, {span / 4, span * 3 / 4}};
  for (const auto& [t0, t1] : ranges) {
    const auto start = std::chrono::steady_clock::now();
    const RangeStats st = m.stats(t0, t1);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    int64_t n = 0;
    for (const OpShare& o : st.per_run[0]) n += o.count;
    std::printf("range %.1f%% of the span: %lld events, %zu names, %.1f ms%s\n",
                100.0 * static_cast<double>(t1 - t0) / static_cast<double>(span), static_cast<long long>(n),
                st.per_run[0].size(), ms, st.errors[0].empty() ? "" : (" error: " + st.errors[0]).c_str());
  }
  // A count superseded 50 ms in: how soon the query stops.
  std::atomic<bool> cancel{false};
  const auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  const RangeStats st = m.stats_job(span / 4, span * 3 / 4)([&] { return cancel.load(); });
  t.join();
  std::printf("cancelled after 50 ms: returned at %.1f ms (%s)\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
              st.errors[0].c_str());
}

}  // namespace
}  // namespace ms::views
