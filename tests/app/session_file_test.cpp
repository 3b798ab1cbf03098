// The session store (app/session/session_file.h): a session made from real runs goes through a file
// and comes back field by field; the file is marked WAL and carries the application id; opening
// never writes; a trace's time window is answered from the index; models are embedded or kept by
// path and hash.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "app/session/session_file.h"
#include "profiler/trace/trace.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TEST(SessionFile, RoundTripReproducesEveryField) {
  TempDir dir("session_rt");
  const SessionData& data = test::small_session();
  ASSERT_EQ(data.runs.size(), 2u);
  ASSERT_TRUE(data.runs[0].outcome.trace && data.runs[1].outcome.trace);
  ASSERT_FALSE(data.runs[1].outcome.passes.empty());
  ASSERT_TRUE(data.runs[1].outcome.plan);
  const std::string path = dir.file("a.modescope");
  ASSERT_TRUE(save_session(path, data).is_ok());
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  test::expect_same_session(data, *back);
}

TEST(SessionFile, HeaderSaysWalAndModescope) {
  TempDir dir("session_hdr");
  const std::string path = dir.file("h.modescope");
  ASSERT_TRUE(save_session(path, SessionData{}).is_ok());
  const std::string b = test::read_bytes(path);
  ASSERT_GE(b.size(), 100u);
  EXPECT_EQ(b.substr(0, 15), "SQLite format 3");
  EXPECT_EQ(b[18], 2);  // WAL
  EXPECT_EQ(b[19], 2);
  EXPECT_EQ(b.substr(68, 4), "MSCO");
  EXPECT_EQ(b[63], kSessionSchemaVersion);
}

TEST(SessionFile, OpeningWritesNothing) {
  TempDir dir("session_ro");
  const std::string path = dir.file("r.modescope");
  ASSERT_TRUE(save_session(path, test::small_session()).is_ok());
  const std::string before = test::read_bytes(path);
  const auto mtime = fs::last_write_time(path);
  {
    auto reader = SessionReader::open(path);
    ASSERT_TRUE(reader.has_value()) << reader.status().message();
    EXPECT_TRUE(reader->load().has_value());
  }
  EXPECT_EQ(test::read_bytes(path), before);
  EXPECT_EQ(fs::last_write_time(path), mtime);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);  // no -wal, -shm
}

TEST(SessionFile, SaveReplacesTheOldSession) {
  TempDir dir("session_replace");
  const std::string path = dir.file("s.modescope");
  SessionData one, two;
  one.ui_state["pass"] = "1";
  two.ui_state["pass"] = "2";
  two.model = *describe_model("zoo:lenet5");
  ASSERT_TRUE(save_session(path, one).is_ok());
  ASSERT_TRUE(save_session(path, two).is_ok());
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->ui_state.at("pass"), "2");
  EXPECT_EQ(back->model.kind, "spec");
  EXPECT_EQ(back->model.source, "zoo:lenet5");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
}

TEST(SessionFile, ModelEmbeddedWhenSmallElseByPathAndHash) {
  const std::string onnx = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  auto small = describe_model(onnx);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->kind, "embedded");
  EXPECT_EQ(small->bytes, test::read_bytes(onnx));
  EXPECT_EQ(small->size, small->bytes.size());
  EXPECT_EQ(small->hash.size(), 16u);
  auto large = describe_model(onnx, 16);
  ASSERT_TRUE(large.has_value());
  EXPECT_EQ(large->kind, "path");
  EXPECT_TRUE(large->bytes.empty());
  EXPECT_EQ(large->hash, small->hash);
  EXPECT_EQ(describe_model("zoo:resnet50")->kind, "spec");
}

// A synthetic trace: two tracks of back-to-back events with a few long ones.
prof::TracePtr striped_trace(int per_track) {
  prof::TraceBuilder b;
  for (int k = 0; k < 2; ++k) b.add_track({prof::TrackKind::HostThread, 1, k, "p", "t" + std::to_string(k), k});
  const prof::StrId name = b.intern("Op");
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < per_track; ++i) {
      prof::Event e;
      e.track = static_cast<uint32_t>(k);
      e.ts_ns = int64_t{i} * 100 + k;
      e.dur_ns = i % 50 == 0 ? 1000 : 90;
      e.name = name;
      b.add_event(e);
    }
  return b.finish();
}

TEST(SessionFile, WindowQueryMatchesTheTrace) {
  TempDir dir("session_window");
  SessionData d;
  SessionRun r;
  r.label = "imported";
  r.outcome.trace = striped_trace(2000);
  d.runs.push_back(r);
  const std::string path = dir.file("w.modescope");
  ASSERT_TRUE(save_session(path, d).is_ok());
  auto reader = SessionReader::open(path, false);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  EXPECT_EQ(*reader->event_count(0), 4000);
  EXPECT_EQ(reader->run_labels()->at(0), "imported");
  EXPECT_EQ(reader->trace_strings(0)->at(1), "Op");
  const prof::Trace& t = *r.outcome.trace;
  for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, 1000}, {55'000, 56'050}, {199'000, 400'000}, {-10, 0}}) {
    auto got = reader->events_in_window(0, 1, t0, t1);
    ASSERT_TRUE(got.has_value()) << got.status().message();
    std::vector<int64_t> want, have;
    for (const prof::Event& e : t.events)
      if (e.track == 1 && e.ts_ns < t1 && e.end_ns() > t0) want.push_back(e.ts_ns);
    for (const prof::Event& e : *got) have.push_back(e.ts_ns);
    EXPECT_EQ(have, want) << t0 << ".." << t1;
  }
}

TEST(SessionFile, MigrationsStartBelowTheSchema) {
  for (const SessionMigration& m : session_migrations()) EXPECT_LT(m.from, kSessionSchemaVersion);
}

}  // namespace
}  // namespace ms::session
