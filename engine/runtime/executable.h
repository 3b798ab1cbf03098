// What the graph executor runs: the compiler's product (engine/compiler/compile.h) reduced to what
// execution needs. The compiler fills it once per input signature; the runtime only reads it. Every
// decision (kernels, memory offsets, threads, streams, whole-graph replay) is made here, at compile
// time, so a run only binds inputs and launches.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/program.h"

namespace ms::runtime {

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Memory plan of a compiled graph: one arena, a slot per planned value.
struct MemorySlot {
  std::string value;
  ir::NodeId producer;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int first_step = 0;          // step that defines the value
  int last_step = 0;           // last step that reads it
  std::string reuses;          // value whose block this one takes over in place ("" none)
  int thread = 0;              // CPU thread (branch) of the producing step, from the branch scheduler
  int within = -1;             // index of the slot this value lives inside (a Concat's output it is
  uint64_t within_offset = 0;  // a part of), at this byte offset in it; -1: a block of its own
  bool view = false;           // `within` is the value it views (a Reshape's input): its bytes, read later
};
struct MemoryPlan {
  uint64_t arena_bytes = 0;
  uint64_t lower_bound = 0;  // max over steps of live bytes (blocks shared in place count once)
  uint64_t naive_bytes = 0;  // sum of every planned value's size (no reuse at all)
  std::vector<MemorySlot> slots;
  std::vector<uint64_t> live;  // per step: bytes of the blocks live at it (lower_bound is the max)
};
// In-place pairs (a, b): slot b may take over slot a's block.
using InplacePairs = std::vector<std::pair<size_t, size_t>>;
// Places `slots` in one arena (the compiler's planner). The executor calls it again when kernel
// scratch learned on a run needs room: the compiler decides how, the runtime only asks.
using Planner = std::function<MemoryPlan(std::vector<MemorySlot> slots, const InplacePairs& inplace)>;

// How steps run concurrently. Happens-before: step x before step y when y depends on x
// (transitively) or both are on one thread and x comes first (a thread runs its steps in order).
struct BranchPlan {
  std::vector<int> thread;              // per step; steps with no concurrent peer are moved to thread 0
  std::vector<std::vector<int>> waits;  // per step: steps on other threads it depends on directly
  std::vector<int> lo, hi;              // per step: first/last step index that may run concurrently (itself if none)
  int threads_used = 1;                 // 1: nothing runs concurrently
  // True when x happens before y (x != y).
  bool before(int x, int y) const;
  // True when neither happens before the other.
  bool concurrent(int x, int y) const { return x != y && !before(x, y) && !before(y, x); }
  std::vector<std::vector<uint64_t>> pred;  // bitset per step: steps that happen before it
};

// The executable part of a compiled graph. Built in place (the program points into `graph`), then
// shared read-only by the executors over it.
struct Executable {
  Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  ir::Graph graph;                                 // the final graph, every value typed
  std::map<std::string, ir::ValueType> signature;  // input types it was compiled for
  // A shape bucket's symbolic dims (the signature's -1 dims, by name): the sizes each may take.
  std::map<std::string, std::pair<int64_t, int64_t>> dim_ranges;
  Program program;                                    // steps with their kernels resolved
  std::vector<std::vector<ir::ValueType>> out_types;  // per step, per output
  std::vector<char> is_static_step;                   // all outputs static: no inference at run time

  // Memory: the planned values (intervals widened for concurrency), the program slot of each, the
  // in-place pairs, and the plan of them. Kernel scratch is planned into the arena too when
  // `plan_scratch`: one slot per step, live only during it, grown from what the runs ask for.
  bool plan_scratch = false;
  std::vector<MemorySlot> value_slots;
  std::vector<int> slot_value;
  InplacePairs inplace;
  MemoryPlan plan;
  Planner planner;
  // Per step, the scratch a kernel may take for a faster algorithm (KernelContext::scratch_budget).
  std::vector<uint64_t> scratch_budget;

  // Concurrency: the branch plan (CPU threads, or CUDA streams when gpu_streams), per step its
  // thread, the steps each thread runs, per release whether it is safe right after the step, and the
  // steps too small for a parallel region (run on one thread).
  BranchPlan branches;
  std::vector<int> step_threads;
  bool gpu_streams = false;
  std::vector<std::vector<size_t>> thread_steps;
  std::vector<std::vector<char>> release_now;
  std::vector<char> single;

  // Whole-graph replay (a backend with GraphCapture): allowed when every step is recordable;
  // otherwise replay_note says why not ("" when the backend records nothing).
  bool replay = false;
  std::string replay_note;
};

}  // namespace ms::runtime
