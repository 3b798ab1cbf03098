// Faults around session files: a save that fails at any step (disk full, permission denied, I/O
// error; injected through the atomic write helper's hook) or is killed (kill -9 in the middle of an
// autosave loop) leaves the last committed session readable and whole; a session that is damaged
// (truncated, bit-flipped, 0 bytes, from a newer schema, not SQLite, another application's SQLite,
// a folder) is refused with one line naming the file, and the file is left as it was.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "app/session/session_file.h"
#include "engine/core/atomic_file.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

size_t files_in(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// One line, naming the file.
void expect_clean_error(const Status& s, const std::string& path, const std::string& words) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

SessionData marked(const std::string& mark) {
  SessionData d;
  d.ui_state["mark"] = mark;
  d.model = *describe_model("zoo:mnist_mlp");
  return d;
}

class SessionSaveFault : public ::testing::TestWithParam<WriteFault> {};

TEST_P(SessionSaveFault, OldSessionIsKept) {
  TempDir dir("faults_save");
  const std::string path = dir.file("kept.modescope");
  ASSERT_TRUE(save_session(path, marked("old")).is_ok());
  const std::string before = test::read_bytes(path);
  Status s;
  {
    ScopedWriteFault fault(GetParam());
    s = save_session(path, test::small_session());
    EXPECT_EQ(write_fault_hits(), 1);
  }
  expect_clean_error(s, path, "(");
  EXPECT_EQ(test::read_bytes(path), before);
  EXPECT_EQ(files_in(dir.path), 1u);  // no temporary file left behind
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->ui_state.at("mark"), "old");
}

std::string fault_name(const ::testing::TestParamInfo<WriteFault>& info) {
  static const char* const kStep[] = {"open", "write", "fsync", "rename"};
  const int e = info.param.error;
  return kStep[static_cast<int>(info.param.step)] + std::to_string(info.param.nth) +
         (e == ENOSPC ? "_ENOSPC"
          : e == EIO  ? "_EIO"
                      : "_EACCES");
}

INSTANTIATE_TEST_SUITE_P(Faults, SessionSaveFault,
                         ::testing::Values(WriteFault{WriteStep::Write, 1, ENOSPC},
                                           WriteFault{WriteStep::Write, 2, ENOSPC},
                                           WriteFault{WriteStep::Open, 1, EACCES},
                                           WriteFault{WriteStep::Rename, 1, EACCES},
                                           WriteFault{WriteStep::Fsync, 1, EIO}, WriteFault{WriteStep::Write, 1, EIO}),
                         fault_name);

TEST(SessionFaults, SaveToAFolder) {
  TempDir dir("faults_folder");
  const std::string path = dir.file("folder.modescope");
  fs::create_directories(path);
  expect_clean_error(save_session(path, marked("x")), path, "is a folder");
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(files_in(dir.path), 1u);
}

TEST(SessionFaults, OpenAFolder) {
  TempDir dir("faults_openfolder");
  expect_clean_error(load_session(dir.path.string()).status(), dir.path.string(), "is a folder");
}

TEST(SessionFaults, OpenAMissingFile) {
  TempDir dir("faults_missing");
  const std::string path = dir.file("none.modescope");
  expect_clean_error(load_session(path).status(), path, "No such file");
  EXPECT_FALSE(fs::exists(path));
}

// A damaged file is refused with `words` and left byte for byte as it was.
void expect_refused(const std::string& path, const std::string& words) {
  const std::string before = test::read_bytes(path);
  expect_clean_error(load_session(path).status(), path, words);
  expect_clean_error(SessionReader::open(path, false).status(), path, words);
  EXPECT_EQ(test::read_bytes(path), before);
}

TEST(SessionFaults, ZeroByteFile) {
  TempDir dir("faults_empty");
  const std::string path = dir.file("empty.modescope");
  test::write_bytes(path, "");
  expect_refused(path, "empty file");
  EXPECT_EQ(files_in(dir.path), 1u);
}

TEST(SessionFaults, NotSqlite) {
  TempDir dir("faults_text");
  const std::string path = dir.file("text.modescope");
  test::write_bytes(path, std::string(4096, 'x'));
  expect_refused(path, "not an SQLite database");
}

TEST(SessionFaults, AnotherApplicationsDatabase) {
  TempDir dir("faults_foreign");
  const std::string path = dir.file("other.modescope");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_refused(path, "another application");
}

TEST(SessionFaults, NewerSchema) {
  TempDir dir("faults_newer");
  const std::string path = dir.file("newer.modescope");
  ASSERT_TRUE(save_session(path, marked("n")).is_ok());
  std::string b = test::read_bytes(path);
  b[63] = static_cast<char>(kSessionSchemaVersion + 1);  // user_version, big-endian at offset 60
  test::write_bytes(path, b);
  expect_refused(path, "newer Modescope");
}

TEST(SessionFaults, TruncatedFiles) {
  TempDir dir("faults_truncated");
  const std::string whole = dir.file("whole.modescope");
  ASSERT_TRUE(save_session(whole, test::small_session()).is_ok());
  const std::string b = test::read_bytes(whole);
  for (size_t keep : {size_t{50}, size_t{100}, size_t{4096}, b.size() / 2, b.size() - 4096, b.size() - 1}) {
    SCOPED_TRACE(keep);
    const std::string path = dir.file("cut.modescope");
    test::write_bytes(path, b.substr(0, keep));
    expect_refused(path, keep < 100 ? "not an SQLite database" : "truncated");
  }
}

// Every flipped bit is either refused with one line or reads back the very session that was saved:
// nothing damaged is ever handed on.
TEST(SessionFaults, BitFlippedFiles) {
  TempDir dir("faults_flip");
  const std::string whole = dir.file("whole.modescope");
  const SessionData& data = test::small_session();
  ASSERT_TRUE(save_session(whole, data).is_ok());
  const std::string b = test::read_bytes(whole);
  int refused = 0, same = 0;
  const size_t step = b.size() / 40 + 1;
  for (size_t at = 7; at < b.size(); at += step) {
    SCOPED_TRACE(at);
    std::string flipped = b;
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (at % 8)));
    const std::string path = dir.file("flip.modescope");
    test::write_bytes(path, flipped);
    auto back = load_session(path);
    if (!back) {
      expect_clean_error(back.status(), path, "");
      ++refused;
    } else {
      test::expect_same_session(data, *back);
      ++same;
    }
    EXPECT_EQ(test::read_bytes(path), flipped);
  }
  EXPECT_GT(refused, 0);
  std::printf("bit flips: %d refused, %d harmless\n", refused, same);
}

// A child saves the session over and over (an autosave loop); it is killed with SIGKILL in the
// middle; the file then holds the last session the child committed, whole.
TEST(SessionFaults, KillNineDuringAutosave) {
  TempDir dir("faults_kill");
  const std::string path = dir.file("autosave.modescope");
  const std::string done = dir.file("committed");
  const SessionData& heavy = test::small_session();  // made before fork: the child only saves
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 1;; ++i) {
      SessionData d = heavy;
      d.ui_state["mark"] = std::to_string(i);
      if (!save_session(path, d).is_ok()) ::_exit(3);
      if (!write_file_atomic(done, std::to_string(i)).is_ok()) ::_exit(4);  // whole, even when killed
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(done) && std::atoi(test::read_bytes(done).c_str()) >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(7));  // somewhere inside a save
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the autosave loop ended by itself: " << status;
  const std::string marker = test::read_bytes(done);
  const int committed = std::atoi(marker.c_str());
  ASSERT_GE(committed, 1) << "marker '" << marker << "', " << files_in(dir.path) << " files";
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  // The marker is written after the save returns: the file holds that save or the next one.
  const int mark = std::atoi(back->ui_state.at("mark").c_str());
  EXPECT_TRUE(mark == committed || mark == committed + 1) << mark << " vs " << committed;
  back->ui_state.erase("mark");
  SessionData want = heavy;
  test::expect_same_session(want, *back);
}

}  // namespace
}  // namespace ms::session
