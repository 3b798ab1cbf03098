#include "engine/core/host_memory.h"

#include <sys/mman.h>

#include <cstdlib>

namespace ms {

void* host_allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kHugePageBytes) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  // Whole huge pages: the tail of the last one would be backed by a huge page anyway.
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  // Advice only: a kernel without transparent huge pages (or with them off) refuses it and the
  // memory stays on ordinary pages.
  if (p) (void)::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void host_free(void* p) { std::free(p); }

}  // namespace ms
