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

}  // namespace

TracePtr Recorder::build(const BuildContext& ctx) const {
  TraceBuilder b;
  Trace& t = b.raw();
  t.strings.reserve(256);
  std::unordered_map<uint64_t, int> step_of;  // top-level node id -> step (graph order = program order)
  if (ctx.graph) {
    for (NodeInfo& n : collect_node_info(*ctx.graph)) b.add_node(std::move(n));
    for (size_t i = 0; i < ctx.graph->nodes().size(); ++i)
      step_of[ctx.graph->nodes()[i].id.value] = static_cast<int>(i);
  }
  for (const auto& [k, v] : ctx.metadata) b.set_meta(k, v);
  b.set_meta("producer", "modescope");

  // Arena slots are reported at run begin/end; their real lifetimes come from the plan's steps.
  std::set<std::pair<uint64_t, std::string>> planned;
  if (ctx.plan)
    for (const auto& s : ctx.plan->slots) planned.emplace(s.producer.value, s.value);

  const StrId cat_op = b.intern("op"), cat_kernel = b.intern("kernel"), cat_run = b.intern("run");
  std::lock_guard<std::mutex> lock(threads_mu_);
  std::vector<const ThreadBuffer*> threads;
  for (const auto& tb : threads_) threads.push_back(tb.get());
  std::sort(threads.begin(), threads.end(), [](auto* x, auto* y) { return x->thread < y->thread; });

  const uint32_t mem_track = b.add_track({TrackKind::Memory, 1, 0, "modescope", "memory", 1000});
  const StrId live_name = b.intern("live bytes"), arena_name = b.intern("arena bytes");
  std::unordered_map<uint64_t, size_t> open_blocks;  // address -> block index
  std::map<int, std::vector<StepTimes>> steps;       // iteration -> per-step times
  std::map<int, std::pair<int64_t, int64_t>> runs;   // iteration -> run begin/end
  std::string mode;
  uint64_t next_flow = 1;
  std::vector<StrId> node_name;  // node index -> interned op type (cached: one lookup per node)
  auto name_of = [&](int32_t node) {
    const auto i = static_cast<size_t>(node);
    if (i >= node_name.size()) node_name.resize(t.nodes.size() + 1, UINT32_MAX);
    if (node_name[i] == UINT32_MAX) node_name[i] = b.intern(t.nodes[i].op);
    return node_name[i];
  };
  // A complete event of node `id` on `track` (the node is added when the run never named it).
  auto complete = [&](EventKind kind, uint64_t id, int64_t begin, int64_t end, uint32_t track, StrId category,
                      int iteration) {
    Event e;
    e.ts_ns = begin;
    e.dur_ns = end - begin;
    e.track = track;
    e.kind = kind;
    e.iteration = iteration;
    e.node = b.node_index(id);
    if (e.node < 0) e.node = b.add_node(NodeInfo{id, "", "?", {id}, "", 0, 0});
    e.name = name_of(e.node);
    e.category = category;
    return e;
  };
  int rank = 0;

  for (const ThreadBuffer* tb : threads) {
    const std::string suffix = tb->thread == 1 ? "" : " " + std::to_string(tb->thread);
    const uint32_t host =
        b.add_track({TrackKind::HostThread, 1, static_cast<int64_t>(tb->thread), "modescope", "host" + suffix, rank++});
    const uint32_t kern = b.add_track({TrackKind::KernelThread, 1, 100000 + static_cast<int64_t>(tb->thread),
                                       "modescope", "cpu kernels" + suffix, rank++});
    std::vector<OpenOp> ops;
    std::vector<OpenKernel> kernels;
    int iteration = 0;
    int64_t run_begin = -1;
    for (size_t ci = 0; ci <= tb->current && ci < tb->chunks.size(); ++ci) {
      const Chunk& c = *tb->chunks[ci];
      for (size_t i = 0; i < c.size; ++i) {
        const Record& r = c.records[i];
        const std::string_view text(c.text.get() + r.text, r.len);
        switch (r.kind) {
          case Kind::RunBegin:
            iteration = static_cast<int>(r.a);
            run_begin = r.ts;
            mode = runtime::exec_mode_name(static_cast<runtime::ExecMode>(r.b));
            if (ctx.plan) b.add_counter({mem_track, arena_name, r.ts, static_cast<double>(ctx.plan->arena_bytes)});
            break;
          case Kind::RunEnd: {
            if (run_begin < 0) break;
            Event e;
            e.ts_ns = run_begin;
            e.dur_ns = r.ts - run_begin;
            e.track = host;
            e.kind = EventKind::Run;
            e.iteration = iteration;
            e.name = b.intern("iteration " + std::to_string(iteration));
            e.category = cat_run;
            b.add_event(e);
            runs[iteration] = {run_begin, r.ts};
            run_begin = -1;
            break;
          }
          case Kind::OpBegin: ops.push_back({r.id, r.ts, {}}); break;
          case Kind::OpEnd: {
            size_t k = ops.size();
            while (k > 0 && ops[k - 1].id != r.id) --k;
            if (k == 0) break;  // end without begin: ignore
            OpenOp op = std::move(ops[k - 1]);
            ops.resize(k - 1);  // drops unbalanced inner ops too
            const uint32_t idx = b.add_event(complete(EventKind::Op, op.id, op.ts, r.ts, host, cat_op, iteration));
            for (uint32_t kidx : op.kernels) b.add_flow(next_flow++, idx, kidx);
            if (ops.empty()) {
              auto st = step_of.find(op.id);
              if (st != step_of.end()) {
                auto& v = steps[iteration];
                if (v.size() <= static_cast<size_t>(st->second)) v.resize(static_cast<size_t>(st->second) + 1);
                v[static_cast<size_t>(st->second)] = {op.ts, r.ts};
              }
            }
            break;
          }
          case Kind::KernelBegin: kernels.push_back({r.id, r.ts, text}); break;
          case Kind::KernelImpl:
            if (!kernels.empty() && kernels.back().id == r.id && !text.empty()) kernels.back().impl = text;
            break;
          case Kind::KernelEnd: {
            if (kernels.empty() || kernels.back().id != r.id) break;
            const OpenKernel k = kernels.back();
            kernels.pop_back();
            Event e = complete(EventKind::Kernel, k.id, k.ts, r.ts, kern, cat_kernel, iteration);
            e.impl = b.intern(k.impl);
            const uint32_t idx = b.add_event(e);
            if (!ops.empty() && ops.back().id == k.id) ops.back().kernels.push_back(idx);
            break;
          }
          case Kind::Alloc: {
            if (ctx.plan && planned.count({r.id, std::string(text)})) break;
            auto it = open_blocks.find(r.a);
            if (it != open_blocks.end()) t.blocks[it->second].free_ns = r.ts;  // reused without a free
            MemoryBlock blk;
            blk.address = r.a;
            blk.bytes = r.b;
            blk.value = b.intern(text);
            blk.producer = r.id;
            blk.alloc_ns = r.ts;
            blk.iteration = iteration;
            open_blocks[r.a] = t.blocks.size();
            b.add_block(blk);
            break;
          }
          case Kind::Free: {
            if (ctx.plan && planned.count({r.id, std::string(text)})) break;
            auto it = open_blocks.find(r.a);
            if (it == open_blocks.end()) break;
            t.blocks[it->second].free_ns = r.ts;
            open_blocks.erase(it);
            break;
          }
        }
      }
    }
  }

  // Graph mode: arena slots live from their defining step's start to their last reader's end.
  if (ctx.plan) {
    for (const auto& [iter, times] : steps) {
      for (const auto& s : ctx.plan->slots) {
        const auto fs = static_cast<size_t>(s.first_step), ls = static_cast<size_t>(s.last_step);
        if (fs >= times.size() || ls >= times.size() || times[fs].begin < 0 || times[ls].end < 0) continue;
        MemoryBlock blk;
        blk.address = s.offset;
        blk.bytes = s.bytes;
        blk.value = b.intern(s.value);
        blk.producer = s.producer.value;
        blk.alloc_ns = times[fs].begin;
        blk.free_ns = times[ls].end;
        blk.iteration = iter;
        blk.arena = true;
        b.add_block(blk);
      }
    }
    b.set_meta("arena_bytes", std::to_string(ctx.plan->arena_bytes));
    b.set_meta("planned_lower_bound", std::to_string(ctx.plan->lower_bound));
  }

  // GPU activity: API calls and synchronizations on their own host track (they come from any
  // thread), kernels/copies on one track per stream, all before the shift to the common origin.
  if (ctx.gpu) {
    const uint32_t api = b.add_track({TrackKind::HostThread, 1, 200000, "modescope", "cuda api", rank++});
    const size_t first = t.events.size();
    merge_gpu_activity(b, *ctx.gpu, api);
    // Iteration of a GPU event: the last run that began before it (kernels may finish after it).
    std::vector<std::pair<int64_t, int>> begins;
    for (const auto& [iter, span] : runs) begins.emplace_back(span.first, iter);
    std::sort(begins.begin(), begins.end());
    for (size_t i = first; i < t.events.size() && !begins.empty(); ++i) {
      auto it = std::upper_bound(begins.begin(), begins.end(), std::make_pair(t.events[i].ts_ns, INT32_MAX));
      t.events[i].iteration = it == begins.begin() ? begins.front().second : std::prev(it)->second;
    }
  }

  // Live bytes: +bytes at each alloc, -bytes at each free; one sample per distinct time.
  std::vector<std::pair<int64_t, double>> deltas;
  deltas.reserve(t.blocks.size() * 2);
  for (const auto& blk : t.blocks) {
    deltas.emplace_back(blk.alloc_ns, static_cast<double>(blk.bytes));
    if (blk.free_ns >= 0) deltas.emplace_back(blk.free_ns, -static_cast<double>(blk.bytes));
  }
  std::stable_sort(deltas.begin(), deltas.end(), [](auto& x, auto& y) { return x.first < y.first; });
  double live = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    live += deltas[i].second;
    if (i + 1 < deltas.size() && deltas[i + 1].first == deltas[i].first) continue;
    b.add_counter({mem_track, live_name, deltas[i].first, live});
  }

  // Times relative to the first record: small numbers in the export, the origin kept in metadata.
  int64_t origin = INT64_MAX;
  for (const auto& e : t.events) origin = std::min(origin, e.ts_ns);
  for (const auto& blk : t.blocks) origin = std::min(origin, blk.alloc_ns);
  for (const auto& c : t.counters) origin = std::min(origin, c.ts_ns);
  if (origin != INT64_MAX) {
    for (auto& e : t.events) e.ts_ns -= origin;
    for (auto& blk : t.blocks) {
      blk.alloc_ns -= origin;
      if (blk.free_ns >= 0) blk.free_ns -= origin;
    }
    for (auto& c : t.counters) c.ts_ns -= origin;
    b.set_meta("clock_origin_ns", std::to_string(origin));
  }
  if (!mode.empty()) b.set_meta("mode", mode);
  b.set_meta("iterations", std::to_string(runs.size()));
  b.set_dropped(dropped());
  return b.finish();
}

}  // namespace ms::prof
