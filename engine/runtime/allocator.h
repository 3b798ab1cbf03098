// Device memory allocators. The caching allocator keeps freed blocks in size classes for reuse,
// as eager frameworks do; stats feed the profiler and the CLI's peak figures.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/tensor.h"

namespace ms::runtime {

struct AllocatorStats {
  size_t in_use = 0;  // bytes handed out and not yet returned
  size_t peak_in_use = 0;
  size_t cached = 0;    // bytes held in free lists
  size_t reserved = 0;  // bytes obtained from the system (in use + cached)
  size_t peak_reserved = 0;
  size_t allocations = 0;  // calls to allocate
  size_t cache_hits = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns nullptr when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() {}
  virtual void release_cached() {}
  // Buffer whose destruction returns the block here. The allocator must outlive it.
  std::shared_ptr<Buffer> make_buffer(size_t bytes);
};

// Plain aligned host memory.
class HostAllocator final : public Allocator {
 public:
  Device device() const override { return {}; }
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  AllocatorStats stats() const override { return {}; }
};

// Size-class caching on top of a raw allocator (host or device).
class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(std::unique_ptr<Allocator> raw);
  ~CachingAllocator() override;
  Device device() const override { return raw_->device(); }
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  AllocatorStats stats() const override;
  void reset_peak() override;
  void release_cached() override;
  static size_t size_class(size_t bytes);

 private:
  std::unique_ptr<Allocator> raw_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // size class -> blocks
  AllocatorStats stats_;
};

}  // namespace ms::runtime
