// Host memory (engine/core/host_memory.h): large buffers on 2 MiB boundaries, advised for
// transparent huge pages; small ones 64-byte aligned.
#include "engine/core/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace ms {
namespace {

using Held = std::unique_ptr<void, void (*)(void*)>;

Held take(size_t bytes) { return Held(host_allocate(bytes), &host_free); }

// The VmFlags of the mapping of /proc/self/smaps that holds `p`, or "" where none does.
std::string vm_flags_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool kernel_offers_huge_pages() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
}

TEST(HostMemory, SmallBuffersAre64ByteAligned) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, kHugePageBytes - 1}) {
    Held p = take(n);
    ASSERT_NE(p.get(), nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % 64, 0u) << n;
    std::memset(p.get(), 0x5a, n);
  }
}

TEST(HostMemory, LargeBuffersSitOnHugePageBoundariesAdvisedForHugePages) {
  const size_t n = 3 * kHugePageBytes + 12345;
  Held p = take(n);
  ASSERT_NE(p.get(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % kHugePageBytes, 0u);
  std::memset(p.get(), 0x5a, n);  // every byte asked for is there
  if (!kernel_offers_huge_pages())
    GTEST_SKIP() << "this kernel offers no transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled)";
  // The advice is on the mapping ("hg"), whether or not the kernel found free huge pages for it.
  EXPECT_NE(vm_flags_at(p.get()).find(" hg"), std::string::npos) << vm_flags_at(p.get());
}

// Resident anonymous memory of this process, in bytes.
size_t resident_anon_bytes() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;  // "RssAnon:  123 kB"
  return 0;
}

// A buffer just past a huge page boundary costs its own bytes, not a second whole huge page: the
// tail stays on small pages. Sixteen written 2.25 MiB buffers add about 36 MiB; rounded up to whole
// huge pages they took 64.
TEST(HostMemory, TheTailPastTheLastHugePageIsNotAWholeHugePage) {
  if (!kernel_offers_huge_pages())
    GTEST_SKIP() << "this kernel offers no transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled)";
  const size_t n = kHugePageBytes + kHugePageBytes / 8;
  std::vector<Held> held;
  const size_t before = resident_anon_bytes();
  for (int i = 0; i < 16; ++i) {
    held.push_back(take(n));
    ASSERT_NE(held.back().get(), nullptr);
    std::memset(held.back().get(), 0x5a, n);
  }
  const size_t grew = resident_anon_bytes() - before;
  EXPECT_GE(grew, 16 * n * 9 / 10);
  EXPECT_LT(grew, 16 * (n + kHugePageBytes / 2)) << "16 buffers of " << n << " bytes took " << grew;
}

TEST(HostMemory, TensorsOfMegabytesTakeIt) {
  const Tensor t = Tensor::empty(DType::F32, {1024, 1024});  // 4 MiB
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kHugePageBytes, 0u);
}

}  // namespace
}  // namespace ms
