// Branch scheduler: finds steps that do not depend on each other (Inception branches, a ResNet
// shortcut next to its main path, attention heads) and assigns them to concurrent CPU threads by list
// scheduling over the dependency graph, with the cost model's FLOPs as step weights.
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/executable.h"

namespace ms::compiler {

// Cost-model weight of a step (FLOPs + bytes moved + a fixed dispatch cost of 1e4).
double step_cost(const runtime::Step& s, const ir::Graph& g);

// Steps too small to gain from a parallel region (fork and join cost more than the work), by the
// cost model: true for each step to run on one thread.
// `min_cost` is the cost under which a step runs alone (CompileOptions::parallel_step_min_cost).
std::vector<char> single_threaded_steps(const runtime::Program& p, const ir::Graph& g, double min_cost);

// Thread (0..threads-1) of each step of `p`. A step's thread is where the list schedule placed it;
// a chain without forks stays on thread 0.
std::vector<int> schedule_branches(const runtime::Program& p, const ir::Graph& g, int threads);

// What the executor needs to run a thread assignment safely (runtime::BranchPlan).
using runtime::BranchPlan;
BranchPlan plan_branches(const runtime::Program& p, std::vector<int> thread);

}  // namespace ms::compiler
