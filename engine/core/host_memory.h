// Host memory for tensors, arenas and prepacked weights: 64-byte aligned, and from 2 MiB up placed
// on 2 MiB boundaries and offered to the kernel's transparent huge pages (madvise), so a kernel
// streaming megabytes of weights walks 2 MiB pages instead of 4 KiB ones (fewer TLB misses and page
// walks while the hardware prefetchers run ahead). The part past the last 2 MiB boundary is ordinary
// pages: a whole huge page there would be resident in full. Where huge pages are off or refused, the
// memory is ordinary pages; nothing else changes. Release with host_free.
#pragma once

#include <cstddef>

namespace ms {

// From this size up an allocation is asked for huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` (0 counts as 1) of host memory, or nullptr when none is left. Does not consult the
// allocation-fault injection; callers that count as engine allocations do.
void* host_allocate(size_t bytes);
void host_free(void* p);

// Gives the whole pages inside [p, p + bytes) back to the system now (madvise MADV_DONTNEED): they
// read as zeros (anonymous memory) or as the file (a private file mapping) when touched again. For
// bytes about to be freed: the allocator may keep freed memory resident for reuse (glibc's heap
// below its mmap threshold), so a large freed weight would stay in the process's resident set.
// Advice only; never fails.
void release_pages(void* p, size_t bytes);

}  // namespace ms
