// Block-splitting caching allocator for device memory (the CUDA backend's eager pool). Memory comes
// from a raw allocator in segments; a request takes the best-fitting free block of its stream's pool
// and splits off the remainder; freed blocks merge with free neighbours of the same segment. Small
// requests (<= 1 MiB) share 2 MiB segments so they do not fragment the large pool. When the raw
// allocator fails, every fully free segment is returned and the request retried once; a final failure
// leaves a message with what was asked, in use and cached.
//
// Device-independent on purpose: the same logic runs over host memory in tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/runtime/allocator.h"

namespace ms::runtime {

struct BlockAllocatorStats : AllocatorStats {
  size_t segments = 0;
  size_t splits = 0;
  size_t merges = 0;
  size_t oom_retries = 0;   // raw allocation failed, cache released, retried
  size_t largest_free = 0;  // largest cached block (fragmentation)
};

class BlockAllocator final : public Allocator {
 public:
  static constexpr size_t kRound = 512;                  // every block is a multiple of this
  static constexpr size_t kSmallRequest = 1 << 20;       // <= this: small pool
  static constexpr size_t kSmallSegment = 2 << 20;       // small pool segment size
  static constexpr size_t kLargeSegmentRound = 2 << 20;  // large segments are multiples of this
  static constexpr size_t kMinLargeSplit = 1 << 20;      // keep a large block whole if the rest is smaller

  explicit BlockAllocator(std::unique_ptr<Allocator> raw);
  ~BlockAllocator() override;

  Device device() const override { return raw_->device(); }
  // On the current stream's pool (set_stream); nullptr when even a retry after releasing the cache fails.
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  AllocatorStats stats() const override { return block_stats(); }
  BlockAllocatorStats block_stats() const;
  void reset_peak() override;
  void release_cached() override;

  // Pools are per stream: a block freed on stream s is only reused by requests on s (no cross-stream
  // synchronisation needed). The stream is per thread (executors set it around a branch).
  static void set_stream(int stream);
  static int current_stream();

  // Offset of a live block in the pool's address space (segments laid end to end in creation order),
  // for the memory heatmap; -1 if `p` is not a live block.
  int64_t pool_offset(const void* p) const;
  // Why the last allocate() returned nullptr ("" otherwise).
  std::string last_error() const;

  static size_t round_size(size_t bytes) { return bytes == 0 ? kRound : (bytes + kRound - 1) / kRound * kRound; }

 private:
  struct Segment;
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    int stream = 0;
    bool small = false;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours inside the segment
    Block* next = nullptr;
    Segment* segment = nullptr;
  };
  struct Segment {
    char* base = nullptr;
    size_t size = 0;
    uint64_t pool_base = 0;  // offset of this segment in the pool's address space
  };
  struct FreeKey {
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      if (a->size != b->size) return a->size < b->size;
      return a->ptr < b->ptr;
    }
  };
  using FreeSet = std::set<Block*, FreeKey>;

  Block* find_free(FreeSet& pool, size_t size, int stream);
  Block* new_segment(size_t size, bool small, int stream);
  void split(Block* b, size_t size, FreeSet& pool);
  void merge_into(Block* b, Block* other, FreeSet& pool);
  size_t release_free_segments();
  FreeSet& pool_of(bool small) { return small ? small_free_ : large_free_; }

  std::unique_ptr<Allocator> raw_;
  mutable std::mutex mu_;
  FreeSet small_free_, large_free_;
  std::unordered_map<void*, Block*> live_;
  std::vector<std::unique_ptr<Segment>> segments_;
  uint64_t next_pool_base_ = 0;
  BlockAllocatorStats stats_;
  std::string last_error_;
};

}  // namespace ms::runtime
