#include "engine/core/host_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace ms {
namespace {
constexpr size_t kSmallPageBytes = 4096;
}  // namespace

void* host_allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kHugePageBytes) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  // Whole 4 KiB pages, not whole huge pages: the part past the last 2 MiB boundary stays on small
  // pages, where rounding up to a huge page made it resident in full (a 2.25 MiB weight took 4 MiB,
  // ViT-B/16's weights and their packed copies 90 MB more).
  const size_t pages = (bytes + kSmallPageBytes - 1) / kSmallPageBytes * kSmallPageBytes;
  void* p = nullptr;
  if (::posix_memalign(&p, kHugePageBytes, pages) != 0) return nullptr;
  // Advice only: a kernel without transparent huge pages (or with them off) refuses it and the
  // memory stays on ordinary pages.
  (void)::madvise(p, pages, MADV_HUGEPAGE);
  return p;
}

void host_free(void* p) { std::free(p); }

void release_pages(void* p, size_t bytes) {
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kSmallPageBytes - 1) / kSmallPageBytes * kSmallPageBytes;
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) / kSmallPageBytes * kSmallPageBytes;
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace ms
