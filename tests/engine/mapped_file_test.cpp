// Mapped files (engine/core/mapped_file.h): untouched pages stay on storage; advise_will_read
// brings a range in ahead of its reads.
#include "engine/core/mapped_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/executor.h"
#include "tests/temp_dir.h"

namespace ms {
namespace {

// Pages of [p, p + bytes) in the page cache (mincore), or -1 where the call fails.
int64_t resident_pages(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = reinterpret_cast<uintptr_t>(p) / page * page;
  const size_t len = reinterpret_cast<uintptr_t>(p) + bytes - from;
  std::vector<unsigned char> in((len + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(from), len, in.data()) != 0) return -1;
  int64_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// Writes `bytes` to `path` and asks the kernel to drop its cached pages; false where they stay.
bool write_uncached(const std::string& path, size_t bytes) {
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(1 << 16, 'w');
    for (size_t n = 0; n < bytes; n += block.size())
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::fdatasync(fd);
  const bool dropped = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return dropped;
}

TEST(MappedFile, AdviseWillReadBringsTheRangeInAheadOfItsReads) {
  testing::TempDir dir("mapped_file");
  const std::string path = dir.file("weights.bin");
  constexpr size_t kBytes = size_t{8} << 20;
  ASSERT_TRUE(write_uncached(path, kBytes));
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.has_value()) << file.status().message();
  std::shared_ptr<Buffer> view = (*file)->view(0, kBytes);
  const int64_t pages = static_cast<int64_t>(kBytes / static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  const int64_t before = resident_pages(view->data(), kBytes);
  ASSERT_GE(before, 0);
  if (before > pages / 2)
    GTEST_SKIP() << "this file system keeps the file's pages in memory (fadvise DONTNEED left " << before << " of "
                 << pages << ")";
  // Nothing read them: the mapping's random-access advice brings in no more than it is asked for.
  EXPECT_EQ(resident_pages(view->data(), kBytes), before);

  // A graph whose constant is that view: what the executors and the compile call.
  ir::Graph g;
  g.add_initializer("w", Tensor(view, DType::F32, {static_cast<int64_t>(kBytes / 4)}));
  runtime::advise_constants_will_be_read(g);
  int64_t after = 0;
  for (int i = 0; i < 200 && (after = resident_pages(view->data(), kBytes)) < pages; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(after, pages) << "of the range's pages, " << before << " were in before the advice";
}

}  // namespace
}  // namespace ms
