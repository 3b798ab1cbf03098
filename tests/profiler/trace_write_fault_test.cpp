// A Chrome trace export that fails part way (disk full at the second write, an I/O error at fsync)
// reports one error naming the file and keeps the trace that was there before, byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/atomic_file.h"
#include "profiler/io/chrome_trace.h"
#include "test_util.h"
#include "tests/temp_dir.h"

namespace ms::prof {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TraceWriteFault, FailedExportKeepsTheOldTrace) {
  TracePtr t = test::record(runtime::ExecMode::Graph, 2);
  ASSERT_TRUE(t);
  const ms::testing::TempDir tmp("trace_fault");
  const fs::path dir = tmp.path;
  const fs::path p = dir / "trace.json";
  ASSERT_TRUE(export_chrome_trace_file(*t, p.string()).is_ok());
  const std::string before = read_all(p);
  const WriteFault faults[] = {{WriteStep::Write, 1, ENOSPC}, {WriteStep::Fsync, 1, EIO}};
  for (const WriteFault& f : faults) {
    ScopedWriteFault fault(f);
    const Status st = export_chrome_trace_file(*t, p.string());
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.message().rfind(p.string() + ": ", 0), 0u) << st.message();
    EXPECT_EQ(write_fault_hits(), 1);
    EXPECT_EQ(read_all(p), before);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  }
}

}  // namespace
}  // namespace ms::prof
