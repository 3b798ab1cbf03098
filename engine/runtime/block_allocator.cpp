#include "engine/runtime/block_allocator.h"

#include <algorithm>

namespace ms::runtime {

namespace {
thread_local int t_stream = 0;
}

void BlockAllocator::set_stream(int stream) { t_stream = stream; }
int BlockAllocator::current_stream() { return t_stream; }

BlockAllocator::BlockAllocator(std::unique_ptr<Allocator> raw) : raw_(std::move(raw)) {}

BlockAllocator::~BlockAllocator() {
  // Every block is either handed out (live_) or cached (a free set). Blocks still handed out are
  // leaked by their owners; the segments go back regardless.
  for (auto& [p, b] : live_) delete b;
  for (Block* b : small_free_) delete b;
  for (Block* b : large_free_) delete b;
  for (auto& seg : segments_) raw_->deallocate(seg->base, seg->size);
}

BlockAllocator::Block* BlockAllocator::find_free(FreeSet& pool, size_t size, int stream) {
  Block key;
  key.stream = stream;
  key.size = size;
  key.ptr = nullptr;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

BlockAllocator::Block* BlockAllocator::new_segment(size_t size, bool small, int stream) {
  const size_t seg_size =
      small ? kSmallSegment : (size + kLargeSegmentRound - 1) / kLargeSegmentRound * kLargeSegmentRound;
  void* p = raw_->allocate(seg_size);
  if (!p) return nullptr;
  auto seg = std::make_unique<Segment>();
  seg->base = static_cast<char*>(p);
  seg->size = seg_size;
  seg->pool_base = next_pool_base_;
  next_pool_base_ += seg_size;
  auto* b = new Block();
  b->ptr = seg->base;
  b->size = seg_size;
  b->stream = stream;
  b->small = small;
  b->segment = seg.get();
  segments_.push_back(std::move(seg));
  stats_.reserved += seg_size;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.segments;
  return b;
}

void BlockAllocator::split(Block* b, size_t size, FreeSet& pool) {
  const size_t rest = b->size - size;
  const bool keep_whole = b->small ? rest < kRound : rest < kMinLargeSplit;
  if (keep_whole) return;
  auto* r = new Block();
  r->ptr = b->ptr + size;
  r->size = rest;
  r->stream = b->stream;
  r->small = b->small;
  r->segment = b->segment;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  pool.insert(r);
  ++stats_.splits;
}

void* BlockAllocator::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallRequest;
  const int stream = t_stream;
  FreeSet& pool = pool_of(small);
  ++stats_.allocations;
  Block* b = find_free(pool, size, stream);
  if (b) {
    ++stats_.cache_hits;
  } else {
    b = new_segment(size, small, stream);
    if (!b) {
      // Out of memory: give every fully free segment back and try once more.
      const size_t freed = release_free_segments();
      ++stats_.oom_retries;
      b = new_segment(size, small, stream);
      if (!b) {
        last_error_ = "out of memory: asked " + std::to_string(bytes) + " bytes, in use " +
                      std::to_string(stats_.in_use) + ", cached " + std::to_string(stats_.reserved - stats_.in_use) +
                      " (released " + std::to_string(freed) + " cached bytes and retried)";
        return nullptr;
      }
    }
  }
  split(b, size, pool);
  b->allocated = true;
  live_[b->ptr] = b;
  stats_.in_use += b->size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  last_error_.clear();
  return b->ptr;
}

void BlockAllocator::merge_into(Block* b, Block* other, FreeSet& pool) {
  // `other` is a free neighbour of `b`; it joins b and is deleted.
  if (!other || other->allocated || other->stream != b->stream) return;
  pool.erase(other);
  if (other == b->prev) {
    b->ptr = other->ptr;
    b->prev = other->prev;
    if (b->prev) b->prev->next = b;
  } else {
    b->next = other->next;
    if (b->next) b->next->prev = b;
  }
  b->size += other->size;
  delete other;
  ++stats_.merges;
}

void BlockAllocator::deallocate(void* p, size_t /*bytes*/) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not ours: ignore rather than corrupt the pool
  Block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  stats_.in_use -= b->size;
  FreeSet& pool = pool_of(b->small);
  merge_into(b, b->prev, pool);
  merge_into(b, b->next, pool);
  pool.insert(b);
}

size_t BlockAllocator::release_free_segments() {
  size_t freed = 0;
  for (FreeSet* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (!b->prev && !b->next && b->size == b->segment->size) {
        Segment* seg = b->segment;
        it = pool->erase(it);
        raw_->deallocate(seg->base, seg->size);
        stats_.reserved -= seg->size;
        --stats_.segments;
        freed += seg->size;
        delete b;
        segments_.erase(
            std::find_if(segments_.begin(), segments_.end(), [&](const auto& s) { return s.get() == seg; }));
      } else {
        ++it;
      }
    }
  }
  return freed;
}

void BlockAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  release_free_segments();
}

BlockAllocatorStats BlockAllocator::block_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BlockAllocatorStats s = stats_;
  s.cached = s.reserved - s.in_use;
  s.largest_free = 0;
  for (const FreeSet* pool : {&small_free_, &large_free_})
    for (const Block* b : *pool) s.largest_free = std::max(s.largest_free, b->size);
  return s;
}

void BlockAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
}

int64_t BlockAllocator::pool_offset(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(const_cast<void*>(p));
  if (it == live_.end()) return -1;
  const Block* b = it->second;
  return static_cast<int64_t>(b->segment->pool_base + static_cast<uint64_t>(b->ptr - b->segment->base));
}

std::string BlockAllocator::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace ms::runtime
