// The recorder's hot path: hooks -> fixed-size records in thread-local chunks.
#include "profiler/record/recorder.h"
#include "profiler/record/recorder_internal.h"

#include <time.h>

#include <algorithm>
#include <cstring>

namespace ms::prof {

namespace {

std::atomic<uint64_t> g_epoch{0};

// CLOCK_MONOTONIC through the vDSO: ~20 ns, the same clock as std::chrono::steady_clock.
inline int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct TlsSlot {
  uint64_t epoch = 0;
  Recorder::ThreadBuffer* buffer = nullptr;
};
thread_local TlsSlot t_slot;
std::atomic<uint32_t> g_thread_ordinal{0};
thread_local uint32_t t_thread_ordinal = 0;

}  // namespace

Recorder::Recorder(RecorderOptions options) : options_(options), epoch_(++g_epoch) {
  options_.chunk_events = std::max<size_t>(options_.chunk_events, 16);
}

Recorder::~Recorder() = default;

Recorder::ThreadBuffer& Recorder::register_thread() {
  if (t_thread_ordinal == 0) t_thread_ordinal = ++g_thread_ordinal;
  auto tb = std::make_unique<ThreadBuffer>();
  tb->thread = t_thread_ordinal;
  for (size_t i = 0; i < std::max<size_t>(1, options_.preallocated_chunks); ++i)
    tb->chunks.push_back(
        std::make_unique<Chunk>(options_.chunk_events, options_.chunk_events * options_.text_per_event));
  reserved_ += options_.chunk_events * tb->chunks.size();
  ThreadBuffer* raw = tb.get();
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    threads_.push_back(std::move(tb));
  }
  t_slot.epoch = epoch_;
  t_slot.buffer = raw;
  return *raw;
}

inline Recorder::ThreadBuffer& Recorder::buffer() {
  if (t_slot.epoch == epoch_) return *t_slot.buffer;
  return register_thread();
}

Recorder::Chunk* Recorder::next_chunk(ThreadBuffer& tb) {
  if (tb.current + 1 < tb.chunks.size()) return tb.chunks[++tb.current].get();
  if (reserved_.load(std::memory_order_relaxed) + options_.chunk_events > options_.max_events) return nullptr;
  // Rare (once per chunk_events records): a fresh chunk.
  tb.chunks.push_back(std::make_unique<Chunk>(options_.chunk_events, options_.chunk_events * options_.text_per_event));
  reserved_ += options_.chunk_events;
  return tb.chunks[++tb.current].get();
}

inline void Recorder::push(Kind kind, uint64_t id, uint64_t a, uint64_t b, std::string_view text) {
  const int64_t ts = now_ns();
  ThreadBuffer& tb = buffer();
  Chunk* c = tb.chunks[tb.current].get();
  const size_t len = std::min<size_t>(text.size(), 0xffff);
  if (c->size == c->capacity || c->text_used + len > c->text_capacity) {
    c = next_chunk(tb);
    if (!c || len > c->text_capacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Record& r = c->records[c->size++];
  r.ts = ts;
  r.id = id;
  r.a = a;
  r.b = b;
  r.kind = kind;
  r.text = static_cast<uint32_t>(c->text_used);
  r.len = static_cast<uint16_t>(len);
  if (len) {
    std::memcpy(c->text.get() + c->text_used, text.data(), len);
    c->text_used += len;
  }
}

void Recorder::on_run_begin(const runtime::RunInfo& info) {
  push(Kind::RunBegin, 0, static_cast<uint64_t>(info.iteration), static_cast<uint64_t>(info.mode), {});
}
void Recorder::on_run_end(const runtime::RunInfo& info) {
  push(Kind::RunEnd, 0, static_cast<uint64_t>(info.iteration), static_cast<uint64_t>(info.mode), {});
}
void Recorder::on_op_begin(const ir::Node& n) { push(Kind::OpBegin, n.id.value, 0, 0, {}); }
void Recorder::on_op_end(const ir::Node& n) { push(Kind::OpEnd, n.id.value, 0, 0, {}); }
void Recorder::on_kernel_begin(const ir::Node& n, std::string_view impl) {
  push(Kind::KernelBegin, n.id.value, 0, 0, impl);
}
void Recorder::on_kernel_impl(const ir::Node& n, std::string_view impl) {
  push(Kind::KernelImpl, n.id.value, 0, 0, impl);
}
void Recorder::on_kernel_end(const ir::Node& n) { push(Kind::KernelEnd, n.id.value, 0, 0, {}); }
void Recorder::on_alloc(const runtime::MemoryEvent& e) {
  push(Kind::Alloc, e.producer.value, e.offset, e.bytes, e.value);
}
void Recorder::on_free(const runtime::MemoryEvent& e) {
  push(Kind::Free, e.producer.value, e.offset, e.bytes, e.value);
}

uint64_t Recorder::recorded() const {
  std::lock_guard<std::mutex> lock(threads_mu_);
  uint64_t n = 0;
  for (const auto& tb : threads_)
    for (size_t i = 0; i <= tb->current && i < tb->chunks.size(); ++i) n += tb->chunks[i]->size;
  return n;
}

void Recorder::clear() {
  std::lock_guard<std::mutex> lock(threads_mu_);
  for (auto& tb : threads_) {
    for (auto& c : tb->chunks) c->size = c->text_used = 0;
    tb->current = 0;
  }
  dropped_ = 0;
}

}  // namespace ms::prof
