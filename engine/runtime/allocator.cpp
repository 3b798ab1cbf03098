#include "engine/runtime/allocator.h"

#include <cstdlib>

#include "engine/core/alloc_error.h"
#include "engine/core/host_memory.h"

namespace ms::runtime {

std::shared_ptr<Buffer> Allocator::make_buffer(size_t bytes) {
  void* p = allocate(bytes);
  if (!p) return nullptr;
  return std::make_shared<Buffer>(p, bytes, device(), [this](void* d, size_t n) { deallocate(d, n); });
}

void* HostAllocator::allocate(size_t bytes) {
  if (take_allocation_fault()) return nullptr;
  return host_allocate(bytes);
}

void HostAllocator::deallocate(void* p, size_t) { host_free(p); }

CachingAllocator::CachingAllocator(std::unique_ptr<Allocator> raw) : raw_(std::move(raw)) {}

CachingAllocator::~CachingAllocator() { release_cached(); }

size_t CachingAllocator::size_class(size_t bytes) {
  // 64-byte granularity up to 4 KiB, then quarter-powers of two (<= 25% waste).
  if (bytes <= 4096) return (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0);
  size_t p = 4096;
  while (p < bytes) p <<= 1;
  const size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.allocations;
  void* p = nullptr;
  auto it = free_.find(cls);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    stats_.cached -= cls;
    ++stats_.cache_hits;
  } else {
    p = raw_->allocate(cls);
    if (!p) {
      // Out of memory: give the cache back and retry once.
      for (auto& [c, blocks] : free_)
        for (void* b : blocks) raw_->deallocate(b, c);
      stats_.reserved -= stats_.cached;
      stats_.cached = 0;
      free_.clear();
      p = raw_->allocate(cls);
      if (!p) return nullptr;
    }
    stats_.reserved += cls;
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  }
  stats_.in_use += cls;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return p;
}

void CachingAllocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  free_[cls].push_back(p);
  stats_.in_use -= cls;
  stats_.cached += cls;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [c, blocks] : free_)
    for (void* b : blocks) raw_->deallocate(b, c);
  stats_.reserved -= stats_.cached;
  stats_.cached = 0;
  free_.clear();
}

}  // namespace ms::runtime
