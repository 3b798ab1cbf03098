// Branch scheduler: finds steps that do not depend on each other (Inception branches, a ResNet
// shortcut next to its main path, attention heads) and assigns them to concurrent CPU threads by list
// scheduling over the dependency graph, with the cost model's FLOPs as step weights.
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/program.h"

namespace ms::compiler {

// Thread (0..threads-1) of each step of `p`. A step's thread is where the list schedule placed it;
// a chain without forks stays on thread 0.
std::vector<int> schedule_branches(const runtime::Program& p, const ir::Graph& g, int threads);

// For each step, how many other steps may run concurrently with it (no path either way) — 0 for a
// pure chain. Used by tests and reports.
std::vector<int> independent_peers(const runtime::Program& p);

}  // namespace ms::compiler
