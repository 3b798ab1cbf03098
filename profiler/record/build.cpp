// Post-processing: the recorder's records -> the Trace model. Pairs begin/end records per thread
// (tolerating unbalanced ones from a failed run), links ops to their kernels with flows, turns
// alloc/free records (PyNative) or the memory plan as executed (Graph mode) into memory blocks, and
// derives the live-bytes counter.
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>

#include "profiler/record/cupti_collector.h"
#include "profiler/record/node_info.h"
#include "profiler/record/recorder.h"
#include "profiler/record/recorder_internal.h"

namespace ms::prof {

namespace {

struct OpenOp {
  uint64_t id;
  int64_t ts;
  std::vector<uint32_t> kernels;  // kernel events started inside this op
};

struct OpenKernel {
  uint64_t id;
  int64_t ts;
  std::string_view impl;
};

struct StepTimes {
  int64_t begin = -1, end = -1;
};

// One thread's replay state: its tracks and the ops, kernels and run still open.
struct ThreadState {
  uint32_t host = 0, kern = 0;
  std::vector<OpenOp> ops;
  std::vector<OpenKernel> kernels;
  int iteration = 0;
  int64_t run_begin = -1;
};

// Builds the Trace step by step: the graph's nodes, then each thread's records, then memory blocks,
// GPU activity, the live-bytes counter and the shift to a common origin (in that order: string and
// track ids follow the order of the calls).
class TraceAssembler {
 public:
  using Kind = Recorder::Kind;
  using Record = Recorder::Record;

  explicit TraceAssembler(const BuildContext& ctx) : ctx_(ctx), t_(b_.raw()) {
    t_.strings.reserve(256);
    add_graph();
    for (const auto& [k, v] : ctx_.metadata) b_.set_meta(k, v);
    b_.set_meta("producer", "modescope");
    // Arena slots are reported at run begin/end; their real lifetimes come from the plan's steps.
    if (ctx_.plan)
      for (const auto& s : ctx_.plan->slots) planned_.emplace(s.producer.value, s.value);
    cat_op_ = b_.intern("op");
    cat_kernel_ = b_.intern("kernel");
    cat_run_ = b_.intern("run");
  }

  // The memory track, and the names of its counters.
  void add_memory_track() {
    mem_track_ = b_.add_track({TrackKind::Memory, 1, 0, "modescope", "memory", 1000});
    live_name_ = b_.intern("live bytes");
    arena_name_ = b_.intern("arena bytes");
  }

  // The thread's host and kernel tracks, then its records in order.
  void add_thread(const Recorder::ThreadBuffer& tb) {
    const std::string suffix = tb.thread == 1 ? "" : " " + std::to_string(tb.thread);
    ThreadState th;
    th.host = b_.add_track(
        {TrackKind::HostThread, 1, static_cast<int64_t>(tb.thread), "modescope", "host" + suffix, rank_++});
    th.kern = b_.add_track({TrackKind::KernelThread, 1, 100000 + static_cast<int64_t>(tb.thread), "modescope",
                            "cpu kernels" + suffix, rank_++});
    for (size_t ci = 0; ci <= tb.current && ci < tb.chunks.size(); ++ci) {
      const Recorder::Chunk& c = *tb.chunks[ci];
      for (size_t i = 0; i < c.size; ++i) {
        const Record& r = c.records[i];
        add_record(th, r, std::string_view(c.text.get() + r.text, r.len));
      }
    }
  }

  // Graph mode: arena slots live from their defining step's start to their last reader's end.
  void add_arena_blocks() {
    if (!ctx_.plan) return;
    for (const auto& [iter, times] : steps_) {
      for (const auto& s : ctx_.plan->slots) {
        const auto fs = static_cast<size_t>(s.first_step), ls = static_cast<size_t>(s.last_step);
        if (fs >= times.size() || ls >= times.size() || times[fs].begin < 0 || times[ls].end < 0) continue;
        MemoryBlock blk;
        blk.address = s.offset;
        blk.bytes = s.bytes;
        blk.value = b_.intern(s.value);
        blk.producer = s.producer.value;
        blk.alloc_ns = times[fs].begin;
        blk.free_ns = times[ls].end;
        blk.iteration = iter;
        blk.arena = true;
        b_.add_block(blk);
      }
    }
    b_.set_meta("arena_bytes", std::to_string(ctx_.plan->arena_bytes));
    b_.set_meta("planned_lower_bound", std::to_string(ctx_.plan->lower_bound));
  }

  // GPU activity: API calls and synchronizations on their own host track (they come from any
  // thread), kernels/copies on one track per stream, all before the shift to the common origin.
  void add_gpu_activity() {
    if (!ctx_.gpu) return;
    const uint32_t api = b_.add_track({TrackKind::HostThread, 1, 200000, "modescope", "cuda api", rank_++});
    const size_t first = t_.events.size();
    merge_gpu_activity(b_, *ctx_.gpu, api);
    // Iteration of a GPU event: the last run that began before it (kernels may finish after it).
    std::vector<std::pair<int64_t, int>> begins;
    for (const auto& [iter, span] : runs_) begins.emplace_back(span.first, iter);
    std::sort(begins.begin(), begins.end());
    for (size_t i = first; i < t_.events.size() && !begins.empty(); ++i) {
      auto it = std::upper_bound(begins.begin(), begins.end(), std::make_pair(t_.events[i].ts_ns, INT32_MAX));
      t_.events[i].iteration = it == begins.begin() ? begins.front().second : std::prev(it)->second;
    }
  }

  // Live bytes: +bytes at each alloc, -bytes at each free; one sample per distinct time.
  void add_live_bytes() {
    std::vector<std::pair<int64_t, double>> deltas;
    deltas.reserve(t_.blocks.size() * 2);
    for (const auto& blk : t_.blocks) {
      deltas.emplace_back(blk.alloc_ns, static_cast<double>(blk.bytes));
      if (blk.free_ns >= 0) deltas.emplace_back(blk.free_ns, -static_cast<double>(blk.bytes));
    }
    std::stable_sort(deltas.begin(), deltas.end(), [](auto& x, auto& y) { return x.first < y.first; });
    double live = 0;
    for (size_t i = 0; i < deltas.size(); ++i) {
      live += deltas[i].second;
      if (i + 1 < deltas.size() && deltas[i + 1].first == deltas[i].first) continue;
      b_.add_counter({mem_track_, live_name_, deltas[i].first, live});
    }
  }

  // Times relative to the first record: small numbers in the export, the origin kept in metadata.
  void shift_to_origin() {
    int64_t origin = INT64_MAX;
    for (const auto& e : t_.events) origin = std::min(origin, e.ts_ns);
    for (const auto& blk : t_.blocks) origin = std::min(origin, blk.alloc_ns);
    for (const auto& c : t_.counters) origin = std::min(origin, c.ts_ns);
    if (origin == INT64_MAX) return;
    for (auto& e : t_.events) e.ts_ns -= origin;
    for (auto& blk : t_.blocks) {
      blk.alloc_ns -= origin;
      if (blk.free_ns >= 0) blk.free_ns -= origin;
    }
    for (auto& c : t_.counters) c.ts_ns -= origin;
    b_.set_meta("clock_origin_ns", std::to_string(origin));
  }

  // The closing metadata, then the finished Trace.
  TracePtr finish(uint64_t dropped) {
    if (!mode_.empty()) b_.set_meta("mode", mode_);
    b_.set_meta("iterations", std::to_string(runs_.size()));
    b_.set_dropped(dropped);
    return b_.finish();
  }

 private:
  // The graph's nodes, and each top-level node's step (graph order = program order).
  void add_graph() {
    if (!ctx_.graph) return;
    for (NodeInfo& n : collect_node_info(*ctx_.graph)) b_.add_node(std::move(n));
    for (size_t i = 0; i < ctx_.graph->nodes().size(); ++i)
      step_of_[ctx_.graph->nodes()[i].id.value] = static_cast<int>(i);
  }

  // Replays one record of the thread.
  void add_record(ThreadState& th, const Record& r, std::string_view text) {
    switch (r.kind) {
      case Kind::RunBegin:
        th.iteration = static_cast<int>(r.a);
        th.run_begin = r.ts;
        mode_ = runtime::exec_mode_name(static_cast<runtime::ExecMode>(r.b));
        if (ctx_.plan) b_.add_counter({mem_track_, arena_name_, r.ts, static_cast<double>(ctx_.plan->arena_bytes)});
        break;
      case Kind::RunEnd: end_run(th, r); break;
      case Kind::OpBegin: th.ops.push_back({r.id, r.ts, {}}); break;
      case Kind::OpEnd: end_op(th, r); break;
      case Kind::KernelBegin: th.kernels.push_back({r.id, r.ts, text}); break;
      case Kind::KernelImpl:
        if (!th.kernels.empty() && th.kernels.back().id == r.id && !text.empty()) th.kernels.back().impl = text;
        break;
      case Kind::KernelEnd: end_kernel(th, r); break;
      case Kind::Alloc: alloc_block(th, r, text); break;
      case Kind::Free: free_block(r, text); break;
    }
  }

  // The iteration's Run event on the host track, from its RunBegin.
  void end_run(ThreadState& th, const Record& r) {
    if (th.run_begin < 0) return;
    Event e;
    e.ts_ns = th.run_begin;
    e.dur_ns = r.ts - th.run_begin;
    e.track = th.host;
    e.kind = EventKind::Run;
    e.iteration = th.iteration;
    e.name = b_.intern("iteration " + std::to_string(th.iteration));
    e.category = cat_run_;
    b_.add_event(e);
    runs_[th.iteration] = {th.run_begin, r.ts};
    th.run_begin = -1;
  }

  // Closes the innermost open op with this id: its event, flows to its kernels, and a top-level
  // op's step times.
  void end_op(ThreadState& th, const Record& r) {
    size_t k = th.ops.size();
    while (k > 0 && th.ops[k - 1].id != r.id) --k;
    if (k == 0) return;  // end without begin: ignore
    OpenOp op = std::move(th.ops[k - 1]);
    th.ops.resize(k - 1);  // drops unbalanced inner ops too
    const uint32_t idx = b_.add_event(complete(EventKind::Op, op.id, op.ts, r.ts, th.host, cat_op_, th.iteration));
    for (uint32_t kidx : op.kernels) b_.add_flow(next_flow_++, idx, kidx);
    if (!th.ops.empty()) return;
    auto st = step_of_.find(op.id);
    if (st == step_of_.end()) return;
    auto& v = steps_[th.iteration];
    if (v.size() <= static_cast<size_t>(st->second)) v.resize(static_cast<size_t>(st->second) + 1);
    v[static_cast<size_t>(st->second)] = {op.ts, r.ts};
  }

  // Closes the innermost kernel when it has this id; its event is linked to the enclosing op's.
  void end_kernel(ThreadState& th, const Record& r) {
    if (th.kernels.empty() || th.kernels.back().id != r.id) return;
    const OpenKernel k = th.kernels.back();
    th.kernels.pop_back();
    Event e = complete(EventKind::Kernel, k.id, k.ts, r.ts, th.kern, cat_kernel_, th.iteration);
    e.impl = b_.intern(k.impl);
    const uint32_t idx = b_.add_event(e);
    if (!th.ops.empty() && th.ops.back().id == k.id) th.ops.back().kernels.push_back(idx);
  }

  // A memory block opened at the record's address (arena slots of the plan are left to
  // add_arena_blocks).
  void alloc_block(const ThreadState& th, const Record& r, std::string_view text) {
    if (ctx_.plan && planned_.count({r.id, std::string(text)})) return;
    auto it = open_blocks_.find(r.a);
    if (it != open_blocks_.end()) t_.blocks[it->second].free_ns = r.ts;  // reused without a free
    MemoryBlock blk;
    blk.address = r.a;
    blk.bytes = r.b;
    blk.value = b_.intern(text);
    blk.producer = r.id;
    blk.alloc_ns = r.ts;
    blk.iteration = th.iteration;
    open_blocks_[r.a] = t_.blocks.size();
    b_.add_block(blk);
  }

  // Closes the block open at the record's address (arena slots of the plan are skipped).
  void free_block(const Record& r, std::string_view text) {
    if (ctx_.plan && planned_.count({r.id, std::string(text)})) return;
    auto it = open_blocks_.find(r.a);
    if (it == open_blocks_.end()) return;
    t_.blocks[it->second].free_ns = r.ts;
    open_blocks_.erase(it);
  }

  // The interned op type of a node (cached: one lookup per node).
  StrId name_of(int32_t node) {
    const auto i = static_cast<size_t>(node);
    if (i >= node_name_.size()) node_name_.resize(t_.nodes.size() + 1, UINT32_MAX);
    if (node_name_[i] == UINT32_MAX) node_name_[i] = b_.intern(t_.nodes[i].op);
    return node_name_[i];
  }

  // A complete event of node `id` on `track` (the node is added when the run never named it).
  Event complete(EventKind kind, uint64_t id, int64_t begin, int64_t end, uint32_t track, StrId category,
                 int iteration) {
    Event e;
    e.ts_ns = begin;
    e.dur_ns = end - begin;
    e.track = track;
    e.kind = kind;
    e.iteration = iteration;
    e.node = b_.node_index(id);
    if (e.node < 0) e.node = b_.add_node(NodeInfo{id, "", "?", {id}, "", 0, 0});
    e.name = name_of(e.node);
    e.category = category;
    return e;
  }

  const BuildContext& ctx_;
  TraceBuilder b_;
  Trace& t_;
  std::unordered_map<uint64_t, int> step_of_;  // top-level node id -> step (graph order = program order)
  std::set<std::pair<uint64_t, std::string>> planned_;
  StrId cat_op_ = 0, cat_kernel_ = 0, cat_run_ = 0;
  uint32_t mem_track_ = 0;
  StrId live_name_ = 0, arena_name_ = 0;
  std::unordered_map<uint64_t, size_t> open_blocks_;  // address -> block index
  std::map<int, std::vector<StepTimes>> steps_;       // iteration -> per-step times
  std::map<int, std::pair<int64_t, int64_t>> runs_;   // iteration -> run begin/end
  std::string mode_;
  uint64_t next_flow_ = 1;
  std::vector<StrId> node_name_;  // node index -> interned op type
  int rank_ = 0;
};

}  // namespace

TracePtr Recorder::build(const BuildContext& ctx) const {
  TraceAssembler a(ctx);
  std::lock_guard<std::mutex> lock(threads_mu_);
  std::vector<const ThreadBuffer*> threads;
  for (const auto& tb : threads_) threads.push_back(tb.get());
  std::sort(threads.begin(), threads.end(), [](auto* x, auto* y) { return x->thread < y->thread; });
  a.add_memory_track();
  for (const ThreadBuffer* tb : threads) a.add_thread(*tb);
  a.add_arena_blocks();
  a.add_gpu_activity();
  a.add_live_bytes();
  a.shift_to_origin();
  return a.finish(dropped());
}

}  // namespace ms::prof
