// The CUDA backend's block-splitting caching allocator, run over host memory.
#include "engine/runtime/block_allocator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace ms::runtime {
namespace {

// Host memory with a capacity, so out-of-memory paths can be driven.
class LimitedRaw final : public Allocator {
 public:
  explicit LimitedRaw(size_t capacity) : capacity_(capacity) {}
  Device device() const override { return {}; }
  void* allocate(size_t bytes) override {
    if (used_ + bytes > capacity_) return nullptr;
    used_ += bytes;
    ++calls;
    return host_.allocate(bytes);
  }
  void deallocate(void* p, size_t bytes) override {
    used_ -= bytes;
    ++frees;
    host_.deallocate(p, bytes);
  }
  AllocatorStats stats() const override { return {}; }
  int calls = 0, frees = 0;

 private:
  HostAllocator host_;
  size_t capacity_;
  size_t used_ = 0;
};

struct Fixture {
  LimitedRaw* raw;
  std::unique_ptr<BlockAllocator> alloc;
  explicit Fixture(size_t capacity = size_t{1} << 30) {
    auto r = std::make_unique<LimitedRaw>(capacity);
    raw = r.get();
    alloc = std::make_unique<BlockAllocator>(std::move(r));
  }
};

TEST(BlockAllocator, SmallRequestsShareOneSegmentAndRound) {
  Fixture f;
  void* a = f.alloc->allocate(100);
  void* b = f.alloc->allocate(1000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f.raw->calls, 1);  // one 2 MiB small segment
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), 512);
  const auto s = f.alloc->block_stats();
  EXPECT_EQ(s.in_use, 512u + 1024u);
  EXPECT_EQ(s.reserved, BlockAllocator::kSmallSegment);
  EXPECT_EQ(s.segments, 1u);
  EXPECT_EQ(f.alloc->pool_offset(b), 512);
  f.alloc->deallocate(a, 100);
  f.alloc->deallocate(b, 1000);
  EXPECT_EQ(f.alloc->block_stats().in_use, 0u);
}

TEST(BlockAllocator, FreedNeighboursMergeAndAreReused) {
  Fixture f;
  std::vector<void*> ps;
  for (int i = 0; i < 4; ++i) ps.push_back(f.alloc->allocate(4 << 20));  // 4 MiB each, large pool
  EXPECT_EQ(f.raw->calls, 4);
  // Free two adjacent blocks of different segments: they cannot merge (different segments).
  f.alloc->deallocate(ps[1], 4 << 20);
  f.alloc->deallocate(ps[2], 4 << 20);
  void* again = f.alloc->allocate(3 << 20);  // best fit: one of the freed 4 MiB blocks, split (1 MiB rest)
  EXPECT_TRUE(again == ps[1] || again == ps[2]);
  EXPECT_EQ(f.raw->calls, 4);
  const auto s = f.alloc->block_stats();
  EXPECT_GE(s.cache_hits, 1u);
  EXPECT_EQ(s.splits, 1u);
  f.alloc->deallocate(again, 3 << 20);
  EXPECT_GE(f.alloc->block_stats().merges, 1u);  // the split remainder merged back
  void* whole = f.alloc->allocate(4 << 20);
  EXPECT_TRUE(whole == ps[1] || whole == ps[2]);
  EXPECT_EQ(f.raw->calls, 4);
  for (void* p : {ps[0], ps[3], whole}) f.alloc->deallocate(p, 4 << 20);
}

TEST(BlockAllocator, SplitBlocksCoalesceInsideASegment) {
  Fixture f;
  void* a = f.alloc->allocate(600 << 10);  // small pool (<= 1 MiB), same 2 MiB segment
  void* b = f.alloc->allocate(600 << 10);
  void* c = f.alloc->allocate(600 << 10);
  EXPECT_EQ(f.raw->calls, 1);
  f.alloc->deallocate(a, 0);
  f.alloc->deallocate(c, 0);
  f.alloc->deallocate(b, 0);  // joins a and c (and the tail) back into the whole segment
  const auto s = f.alloc->block_stats();
  EXPECT_EQ(s.largest_free, BlockAllocator::kSmallSegment);
  f.alloc->release_cached();
  EXPECT_EQ(f.alloc->block_stats().reserved, 0u);
  EXPECT_EQ(f.raw->frees, 1);
}

TEST(BlockAllocator, StreamsHaveTheirOwnPools) {
  Fixture f;
  void* a = f.alloc->allocate(8 << 20);
  f.alloc->deallocate(a, 0);
  BlockAllocator::set_stream(1);
  void* b = f.alloc->allocate(8 << 20);  // the free block belongs to stream 0
  EXPECT_NE(a, b);
  EXPECT_EQ(f.raw->calls, 2);
  f.alloc->deallocate(b, 0);
  BlockAllocator::set_stream(0);
  void* c = f.alloc->allocate(8 << 20);
  EXPECT_EQ(c, a);
  f.alloc->deallocate(c, 0);
}

TEST(BlockAllocator, OutOfMemoryReleasesTheCacheRetriesAndExplains) {
  Fixture f(12 << 20);
  void* a = f.alloc->allocate(6 << 20);
  ASSERT_NE(a, nullptr);
  f.alloc->deallocate(a, 0);  // cached, 6 MiB reserved
  // 8 MiB does not fit next to the cached 6 MiB: the cache is released and the request retried.
  void* b = f.alloc->allocate(8 << 20);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f.alloc->block_stats().oom_retries, 1u);
  void* c = f.alloc->allocate(8 << 20);  // truly out of memory
  EXPECT_EQ(c, nullptr);
  const std::string err = f.alloc->last_error();
  EXPECT_NE(err.find("asked 8388608 bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("in use 8388608"), std::string::npos) << err;
  f.alloc->deallocate(b, 0);
}

TEST(BlockAllocator, RandomWorkloadKeepsBlocksDisjointAndAccountsForEveryByte) {
  Fixture f;
  std::mt19937 rng(7);
  struct Live {
    char* p;
    size_t n;
    unsigned char tag;
  };
  std::vector<Live> live;
  size_t expect_in_use = 0;
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t n = (rng() % 4 == 0) ? 1 + rng() % (3 << 20) : 1 + rng() % 20000;
      char* p = static_cast<char*>(f.alloc->allocate(n));
      ASSERT_NE(p, nullptr);
      const auto tag = static_cast<unsigned char>(step);
      std::memset(p, tag, n);
      live.push_back({p, n, tag});
      expect_in_use += BlockAllocator::round_size(n);
    } else {
      const size_t i = rng() % live.size();
      // Nobody else wrote into this block while it was live.
      for (size_t k = 0; k < live[i].n; k += 97) ASSERT_EQ(static_cast<unsigned char>(live[i].p[k]), live[i].tag);
      f.alloc->deallocate(live[i].p, live[i].n);
      expect_in_use -= BlockAllocator::round_size(live[i].n);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    // A block kept whole (remainder below the split threshold) counts whole.
    const size_t in_use = f.alloc->block_stats().in_use;
    ASSERT_GE(in_use, expect_in_use);
    ASSERT_LE(in_use, expect_in_use + live.size() * BlockAllocator::kMinLargeSplit);
  }
  for (const Live& l : live) f.alloc->deallocate(l.p, l.n);
  const auto s = f.alloc->block_stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_GT(s.cache_hits, 1000u);
  f.alloc->release_cached();
  EXPECT_EQ(f.alloc->block_stats().reserved, 0u);
}

}  // namespace
}  // namespace ms::runtime
