// Recorder: the engine's RunObserver that profiles a run. Every hook appends one fixed-size record
// to the calling thread's buffer (thread_local lookup, no lock, no allocation: chunks are
// preallocated, a new one is taken only when a chunk fills). Names (kernel impl, value names) are
// copied into the chunk's text area because the engine's strings may die right after the hook.
// build() turns the records into the immutable Trace after the run; it needs the graph that ran
// (node names, origins, shapes and cost by NodeId) and, for Graph mode, the memory plan.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/executor.h"
#include "engine/runtime/observer.h"
#include "profiler/trace/trace.h"

namespace ms::prof {

struct RecorderOptions {
  size_t chunk_events = 1u << 15;   // records per chunk (40 bytes each)
  size_t text_per_event = 24;       // text bytes reserved per record in a chunk
  size_t preallocated_chunks = 2;   // per thread, taken at the thread's first event
  uint64_t max_events = 64u << 20;  // beyond this records are dropped (and counted)
};

struct GpuActivity;

// What build() needs besides the records.
struct BuildContext {
  const ir::Graph* graph = nullptr;             // the graph that ran (Graph mode: GraphExecutor::graph())
  const runtime::MemoryPlan* plan = nullptr;    // Graph mode: arena slots with step lifetimes
  std::map<std::string, std::string> metadata;  // model, device, compile_ms, ...
  const GpuActivity* gpu = nullptr;             // CUPTI activity of the same runs (CUDA backend)
};

class Recorder final : public runtime::RunObserver {
 public:
  explicit Recorder(RecorderOptions options = {});
  ~Recorder() override;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void on_run_begin(const runtime::RunInfo& info) override;
  void on_run_end(const runtime::RunInfo& info) override;
  void on_op_begin(const ir::Node& node) override;
  void on_op_end(const ir::Node& node) override;
  void on_kernel_begin(const ir::Node& node, std::string_view impl) override;
  void on_kernel_impl(const ir::Node& node, std::string_view impl) override;
  void on_kernel_end(const ir::Node& node) override;
  void on_alloc(const runtime::MemoryEvent& e) override;
  void on_free(const runtime::MemoryEvent& e) override;

  // Records kept so far (all threads) and records dropped for lack of space. Not for the hot path.
  uint64_t recorded() const;
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Forgets every record (call between runs only, never while a run is being observed).
  void clear();
  // Post-processing: records -> Trace. Call after the observed runs have ended.
  TracePtr build(const BuildContext& ctx) const;

  enum class Kind : uint8_t { RunBegin, RunEnd, OpBegin, OpEnd, KernelBegin, KernelImpl, KernelEnd, Alloc, Free };
  struct Record {
    int64_t ts;
    uint64_t id;    // node id (memory: producer)
    uint64_t a;     // memory: offset/address; run: iteration
    uint64_t b;     // memory: bytes; run: mode
    uint32_t text;  // offset of the text in the chunk
    uint16_t len;   // text length
    Kind kind;
    uint8_t pad = 0;
  };
  struct Chunk;
  struct ThreadBuffer;

 private:
  ThreadBuffer& buffer();
  ThreadBuffer& register_thread();
  void push(Kind kind, uint64_t id, uint64_t a, uint64_t b, std::string_view text);
  Chunk* next_chunk(ThreadBuffer& tb);

  RecorderOptions options_;
  uint64_t epoch_;                 // unique per recorder: a thread's cached buffer is valid only for this epoch
  mutable std::mutex threads_mu_;  // guards `threads_` (taken once per thread, never per record)
  std::vector<std::unique_ptr<ThreadBuffer>> threads_;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> reserved_{0};
};

}  // namespace ms::prof
