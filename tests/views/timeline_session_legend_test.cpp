// The timeline's legend (op types by total time) for a trace kept in a session file and read window
// by window: the same names in the same order as for the trace loaded whole, from the totals the
// file stores (no event is read for it); also for files of schema 7 (read as they are: the totals
// counted from the events) and 6 (migrated on open), and for a trace copied from either into a new
// file.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/gui/session_trace_source.h"
#include "app/session/session_file.h"
#include "tests/app/session_test_util.h"
#include "views/timeline/timeline_model.h"

namespace ms::views {
namespace {

// Two tracks of 1500 ops and foreign ops under 24 names (more than the legend's 16), each name with a
// total of its own, and kernels of a name that would lead the legend if kernels counted.
prof::TracePtr legend_test_trace() {
  prof::TraceBuilder b;
  for (int k = 0; k < 3; ++k) b.add_track({prof::TrackKind::HostThread, 1, k, "p", "t" + std::to_string(k), k});
  std::vector<prof::StrId> names;
  for (int n = 0; n < 24; ++n) names.push_back(b.intern("Op" + std::to_string((n * 7) % 24)));
  const prof::StrId kernel = b.intern("AKernel");
  int64_t ts = 1000;
  for (int i = 0; i < 3000; ++i) {
    prof::Event e;
    e.track = static_cast<uint32_t>(i % 2);
    e.ts_ns = ts;
    const int n = (i * 5) % 24;
    e.dur_ns = 10 + n * 13 + i % 3;
    e.name = names[static_cast<size_t>(n)];
    e.kind = i % 4 == 0 ? prof::EventKind::Foreign : prof::EventKind::Op;
    e.iteration = i / 500;
    b.add_event(e);
    prof::Event k = e;
    k.track = 2, k.kind = prof::EventKind::Kernel, k.name = kernel, k.dur_ns = 5000;
    b.add_event(k);
    ts += 400 + (i % 5) * 40;
  }
  return b.finish();
}

session::SessionData legend_session() {
  session::SessionData d;
  session::SessionRun r;
  r.label = "pynative";
  r.outcome.mode = "pynative";
  r.outcome.trace = legend_test_trace();
  d.runs.push_back(r);
  d.model = {"zoo:mnist_mlp", "spec", "", "", 0};
  return d;
}

std::vector<std::string> legend_loaded_whole(const prof::TracePtr& t) {
  TimelineModel m;
  m.set_runs({{"PyNative", t}});
  return m.top_names();
}

// The legend of run 0 of `path` opened as the app opens a big trace: windowed, its events unchecked.
std::vector<std::string> legend_windowed(const std::string& path) {
  auto reader = session::SessionReader::open(path, session::Verify::AllButEvents);
  EXPECT_TRUE(reader.has_value()) << reader.status().message();
  if (!reader) return {};
  auto shared = std::make_shared<const session::SessionReader>(std::move(*reader));
  auto source = app::SessionTraceSource::make(shared, 0);
  EXPECT_TRUE(source.has_value()) << source.status().message();
  if (!source) return {};
  TimelineModel m;
  m.set_runs({});
  m.add_windowed_run("PyNative", *source);
  EXPECT_TRUE(m.windowed());
  // A file without stored totals counts them on a thread of its own: asked again until given.
  for (int i = 0; i < 1000 && m.legend_pending(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m.recount_legend();
  }
  EXPECT_FALSE(m.legend_pending());
  // Zoomed out (1500 events a track on 200 pixels: summarized), then zoomed in: the legend stays.
  const WindowLoad all = m.load_window(0, static_cast<double>(m.span_ns()), 200);
  EXPECT_GT(all.tracks_summarized, 0);
  const std::vector<std::string> names = m.top_names();
  m.load_window(0, static_cast<double>(m.span_ns()) / 50, 1200);
  EXPECT_EQ(m.top_names(), names);
  return names;
}

// Makes `path` a file of schema 7 (no stored totals: their table and its digest dropped), read as it
// is (the totals counted from its events), or of schema 6 (no nested constants either), migrated in
// memory on open (the migration stores the totals).
void downgrade_legend_file(const std::string& path, int schema) {
  if (schema == 7)
    session::test::exec_sql(path,
                            MS_DROP_SCHEMA_8_SQL "PRAGMA user_version = 7; PRAGMA journal_mode = DELETE; VACUUM;");
  else
    session::test::exec_sql(path,
                            MS_DROP_SCHEMA_7_SQL "PRAGMA user_version = 6; PRAGMA journal_mode = DELETE; VACUUM;");
}

TEST(TimelineSessionLegend, WindowedRunShowsTheOpTypesOfTheTraceLoadedWhole) {
  testing::TempDir dir("timeline_session_legend");
  const session::SessionData d = legend_session();
  const std::string path = dir.file("legend.modescope");
  ASSERT_TRUE(session::save_session(path, d).is_ok());
  auto reader = session::SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  auto whole = reader->trace(0);
  ASSERT_TRUE(whole.has_value() && *whole) << whole.status().message();
  const std::vector<std::string> want = legend_loaded_whole(*whole);
  ASSERT_EQ(want.size(), 16u);
  EXPECT_EQ(want, legend_loaded_whole(d.runs[0].outcome.trace));
  EXPECT_EQ(std::count(want.begin(), want.end(), "AKernel"), 0);
  EXPECT_EQ(legend_windowed(path), want);
}

TEST(TimelineSessionLegend, OlderFilesGetTheirTotalsOnOpenAndOnCopy) {
  testing::TempDir dir("timeline_session_legend_old");
  const session::SessionData d = legend_session();
  const std::vector<std::string> want = legend_loaded_whole(d.runs[0].outcome.trace);
  ASSERT_FALSE(want.empty());
  for (int schema : {7, 6}) {
    SCOPED_TRACE("schema " + std::to_string(schema));
    const std::string old = dir.file("old" + std::to_string(schema) + ".modescope");
    ASSERT_TRUE(session::save_session(old, d).is_ok());
    downgrade_legend_file(old, schema);
    auto reader = session::SessionReader::open(old);
    ASSERT_TRUE(reader.has_value()) << reader.status().message();
    EXPECT_EQ(reader->schema_version(), schema);
    EXPECT_EQ(legend_windowed(old), want);
    // A session whose trace stayed in the old file, saved anew: its rows are copied, the totals made.
    auto kept = reader->load(/*max_trace_events=*/0);
    ASSERT_TRUE(kept.has_value()) << kept.status().message();
    ASSERT_FALSE(kept->runs[0].outcome.trace);
    ASSERT_EQ(kept->runs[0].trace_file, old);
    const std::string copy = dir.file("copy" + std::to_string(schema) + ".modescope");
    ASSERT_TRUE(session::save_session(copy, *kept).is_ok());
    EXPECT_EQ(legend_windowed(copy), want);
  }
}

}  // namespace
}  // namespace ms::views
