// The atomic write helper (engine/core/atomic_file.h): a full write replaces the file; an injected
// failure at any step (disk full while writing, an I/O error at fsync, permission denied at rename)
// gives one error naming the file, keeps the old file byte for byte and leaves no temporary file;
// a folder in the way and a missing parent folder are errors too. Then the engine's own writers
// (.npy, ONNX export) report an injected failure and keep the old file.
#include "engine/core/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/core/tensor.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("modescope_atomic_" + std::to_string(::getpid()) + "_" + std::string(info->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    clear_write_fault();
    fs::remove_all(dir_);
  }
  // Files in the folder: the target alone, never a temporary file left behind.
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++n;
    return n;
  }
  // A previous file with bytes that must survive.
  fs::path old_file(const std::string& name) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << kOld;
    return p;
  }

  static constexpr const char* kOld = "old contents\n";
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplaces) {
  const fs::path p = old_file("a.txt");
  ASSERT_TRUE(write_file_atomic(p.string(), "new").is_ok());
  EXPECT_EQ(read_all(p), "new");
  // A fresh file, written through the stream in pieces larger and smaller than its buffer.
  const std::string big(200000, 'x');
  AtomicFile f((dir_ / "b.txt").string());
  f.stream() << "head " << 42 << '\n' << big;
  f.write("tail");
  const Status st = f.commit();
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(read_all(dir_ / "b.txt"), "head 42\n" + big + "tail");
  EXPECT_EQ(entries(), 2u);
}

TEST_F(AtomicFileTest, InjectedFaultsKeepTheOldFile) {
  struct Case {
    WriteStep step;
    int error;
    const char* words;
  };
  const Case cases[] = {{WriteStep::Write, ENOSPC, "No space left on device"},
                        {WriteStep::Fsync, EIO, "Input/output error"},
                        {WriteStep::Rename, EACCES, "Permission denied"},
                        {WriteStep::Open, EACCES, "Permission denied"}};
  for (const Case& c : cases) {
    const fs::path p = old_file("keep.json");
    ScopedWriteFault fault({c.step, 1, c.error});
    const Status st = write_file_atomic(p.string(), std::string(100000, 'n'));
    SCOPED_TRACE(c.words);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), ErrorCode::Io);
    EXPECT_EQ(st.message().rfind(p.string() + ": ", 0), 0u) << st.message();
    EXPECT_NE(st.message().find(c.words), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos);
    EXPECT_EQ(write_fault_hits(), 1);
    EXPECT_EQ(read_all(p), kOld);
    EXPECT_EQ(entries(), 1u);
  }
}

TEST_F(AtomicFileTest, FaultOnTheNthWriteAndStreamError) {
  const fs::path p = old_file("n.bin");
  ScopedWriteFault fault({WriteStep::Write, 3, ENOSPC});
  {
    AtomicFile f(p.string());
    f.write("one");
    f.write("two");
    EXPECT_TRUE(f.ok());
    f.write("three");
    EXPECT_FALSE(f.ok());
    f.stream() << "more";
    EXPECT_TRUE(f.stream().bad());
    const Status st = f.commit();
    EXPECT_NE(st.message().find("cannot write"), std::string::npos) << st.message();
  }
  EXPECT_EQ(read_all(p), kOld);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, UncommittedFileLeavesNothing) {
  const fs::path p = old_file("u.txt");
  {
    AtomicFile f(p.string());
    f.write("half a file");
  }
  EXPECT_EQ(read_all(p), kOld);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, FolderInTheWayAndMissingFolder) {
  fs::create_directories(dir_ / "sub");
  Status st = write_file_atomic((dir_ / "sub").string(), "x");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind((dir_ / "sub").string() + ": ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("folder"), std::string::npos) << st.message();
  EXPECT_TRUE(fs::is_directory(dir_ / "sub"));
  EXPECT_TRUE(fs::is_empty(dir_ / "sub"));

  const fs::path missing = dir_ / "no" / "such" / "f.txt";
  st = write_file_atomic(missing.string(), "x");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind(missing.string() + ": ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("No such file or directory"), std::string::npos) << st.message();
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, SymlinkKeepsTheLinkAndReplacesItsTarget) {
  const fs::path real = old_file("real.txt");
  fs::create_symlink(real, dir_ / "link.txt");
  ASSERT_TRUE(write_file_atomic((dir_ / "link.txt").string(), "via link").is_ok());
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.txt"));
  EXPECT_EQ(read_all(real), "via link");
}

TEST_F(AtomicFileTest, NpySaveReportsTheFaultAndKeepsTheOldFile) {
  const fs::path p = dir_ / "t.npy";
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::F32, {4, 4}), p.string()).is_ok());
  const std::string before = read_all(p);
  ScopedWriteFault fault({WriteStep::Write, 2, ENOSPC});  // the data after the header
  const Status st = save_npy(Tensor::zeros(DType::F32, {64, 64}), p.string());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(p.string()), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.message();
  EXPECT_EQ(read_all(p), before);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, OnnxExportReportsTheFaultAndKeepsTheOldFile) {
  auto g = onnx_io::load_model(std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx");
  ASSERT_TRUE(g) << g.status().message();
  const fs::path p = old_file("m.onnx");
  {
    ScopedWriteFault fault({WriteStep::Rename, 1, EACCES});
    const Status st = onnx_io::save_model(*g, p.string());
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(p.string()), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("Permission denied"), std::string::npos) << st.message();
    EXPECT_EQ(read_all(p), kOld);
    EXPECT_EQ(entries(), 1u);
  }
  ASSERT_TRUE(onnx_io::save_model(*g, p.string()).is_ok());
  EXPECT_TRUE(onnx_io::load_model(p.string()));
}

}  // namespace
}  // namespace ms
