// Branch scheduler: finds steps that do not depend on each other (Inception branches, a ResNet
// shortcut next to its main path, attention heads) and assigns them to concurrent CPU threads by list
// scheduling over the dependency graph, with the cost model's FLOPs as step weights.
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/program.h"

namespace ms::compiler {

// Cost-model weight of a step (FLOPs + bytes moved + a fixed dispatch cost of 1e4).
double step_cost(const runtime::Step& s, const ir::Graph& g);

// Steps too small to gain from a parallel region (fork and join cost more than the work), by the
// cost model: true for each step to run on one thread.
std::vector<char> single_threaded_steps(const runtime::Program& p, const ir::Graph& g);

// Thread (0..threads-1) of each step of `p`. A step's thread is where the list schedule placed it;
// a chain without forks stays on thread 0.
std::vector<int> schedule_branches(const runtime::Program& p, const ir::Graph& g, int threads);

// What the executor needs to run a thread assignment safely. Happens-before: step x before step y
// when y depends on x (transitively) or both are on one thread and x comes first (a thread runs
// its steps in program order).
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
BranchPlan plan_branches(const runtime::Program& p, std::vector<int> thread);

}  // namespace ms::compiler
