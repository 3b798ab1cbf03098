// Work counters of a compile: how much a pass (or the memory planner) did, counted rather than
// timed, so a test can check that compile work grows linearly with the graph on any machine.
// The pass manager installs one WorkCounters per pass while it runs (WorkScope); helpers and passes
// add to the innermost scope of their thread, and a scope's counts flow into the enclosing one when it
// closes, so a caller can wrap a whole compile (passes, type inference, memory plan) in its own scope.
#pragma once

#include <cstdint>
#include <string>

namespace ms::compiler {

struct WorkCounters {
  uint64_t nodes_visited = 0;      // nodes a scan or worklist looked at
  uint64_t patterns_tried = 0;     // matches attempted (one per anchor, chain start, candidate pair)
  uint64_t use_list_rebuilds = 0;  // whole-graph use/producer/reader index builds (O(nodes) each)
  uint64_t snapshot_copies = 0;    // nodes copied into snapshots (deep copies of the graph)
  uint64_t planner_steps = 0;      // memory planner: blocks placed + overlap tests + search moves
  uint64_t rewrites = 0;           // rewrites applied (take_rewrite said yes); not part of total()

  uint64_t total() const {
    return nodes_visited + patterns_tried + use_list_rebuilds + snapshot_copies + planner_steps;
  }
  WorkCounters& operator+=(const WorkCounters& o) {
    nodes_visited += o.nodes_visited;
    patterns_tried += o.patterns_tried;
    use_list_rebuilds += o.use_list_rebuilds;
    snapshot_copies += o.snapshot_copies;
    planner_steps += o.planner_steps;
    rewrites += o.rewrites;
    return *this;
  }
  // {"nodes_visited": .., ..., "total": ..}
  std::string to_json() const;
};

// The counters of the innermost open scope on this thread (a discarded sink when none is open).
WorkCounters& work();

// Makes `counters` the innermost scope of this thread until destroyed; then adds what it counted
// meanwhile to the scope that was open before (if any).
class WorkScope {
 public:
  explicit WorkScope(WorkCounters& counters);
  ~WorkScope();
  WorkScope(const WorkScope&) = delete;
  WorkScope& operator=(const WorkScope&) = delete;

 private:
  WorkCounters& counters_;
  WorkCounters start_;  // counters_ when the scope opened (a reused struct may hold earlier counts)
  WorkScope* outer_;
};

// Rewrites, one at a time: a pass asks before it applies each rewrite (one fusion, one folded node,
// one bypassed op) and applies it only on a yes, which counts it. Pass bisection
// (`modescope-cli bisect`) cuts the last pass it runs after its first N rewrites by opening a
// RewriteBudget around it; with no budget open every rewrite goes ahead.
bool take_rewrite();

// While alive, take_rewrite() on this thread says yes `budget` times, then no.
class RewriteBudget {
 public:
  explicit RewriteBudget(int64_t budget);
  ~RewriteBudget();
  RewriteBudget(const RewriteBudget&) = delete;
  RewriteBudget& operator=(const RewriteBudget&) = delete;
  int64_t refused() const { return refused_; }  // rewrites asked for after the budget ran out

 private:
  int64_t left_, refused_ = 0;
  RewriteBudget* outer_;
  friend bool take_rewrite();
};

}  // namespace ms::compiler
