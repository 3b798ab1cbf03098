#include "engine/compiler/schedule.h"

#include <algorithm>
#include <queue>

#include "engine/ops/schema.h"

namespace ms::compiler {
namespace {

std::vector<std::vector<int>> step_deps(const runtime::Program& p) {
  std::vector<std::vector<int>> deps(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    auto add = [&](int slot) {
      if (slot < 0) return;
      const int prod = p.producer_step[static_cast<size_t>(slot)];
      if (prod >= 0 && std::find(deps[s].begin(), deps[s].end(), prod) == deps[s].end()) deps[s].push_back(prod);
    };
    for (int in : p.steps[s].inputs) add(in);
    for (int in : p.steps[s].implicit) add(in);
  }
  return deps;
}

}  // namespace

double step_cost(const runtime::Step& s, const ir::Graph& g) {
  std::vector<ir::ValueType> in, out;
  for (const auto& i : s.node->inputs) {
    const ir::Value* v = i.empty() ? nullptr : g.resolve(i);
    in.push_back(v ? v->type : ir::ValueType{});
  }
  for (const auto& o : s.node->outputs) {
    const ir::Value* v = o.empty() ? nullptr : g.resolve(o);
    out.push_back(v ? v->type : ir::ValueType{});
  }
  const ops::Cost c = ops::node_cost(*s.node, in, out);
  return 1e4 + c.flops + c.bytes;  // a fixed dispatch cost keeps tiny ops from looking free
}

std::vector<char> single_threaded_steps(const runtime::Program& p, const ir::Graph& g, double min_cost) {
  std::vector<char> one(p.steps.size(), 0);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    // If/Loop: their cost is their subgraphs' (which run with the threads the step gets), not the
    // few bytes of their own inputs and outputs.
    one[s] = !p.steps[s].node->has_subgraph() && step_cost(p.steps[s], g) < min_cost;
  }
  return one;
}

std::vector<int> schedule_branches(const runtime::Program& p, const ir::Graph& g, int threads) {
  const size_t n = p.steps.size();
  std::vector<int> thread(n, 0);
  if (threads < 2 || n < 2) return thread;
  const auto deps = step_deps(p);
  std::vector<std::vector<int>> users(n);
  std::vector<int> pending(n, 0);
  for (size_t s = 0; s < n; ++s) {
    pending[s] = static_cast<int>(deps[s].size());
    for (int d : deps[s]) users[static_cast<size_t>(d)].push_back(static_cast<int>(s));
  }
  std::vector<double> cost(n), finish(n, 0);
  for (size_t s = 0; s < n; ++s) cost[s] = step_cost(p.steps[s], g);
  std::vector<double> free_at(static_cast<size_t>(threads), 0);
  // Ready steps in program order (keeps the schedule close to the sequential one).
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t s = 0; s < n; ++s)
    if (!pending[s]) ready.push(static_cast<int>(s));
  while (!ready.empty()) {
    const int s = ready.top();
    ready.pop();
    double deps_done = 0;
    int prefer = 0;  // continue on the thread of the latest-finishing dependency (no hand-off)
    for (int d : deps[static_cast<size_t>(s)])
      if (finish[static_cast<size_t>(d)] >= deps_done) {
        deps_done = finish[static_cast<size_t>(d)];
        prefer = thread[static_cast<size_t>(d)];
      }
    int best = prefer;
    double best_start = std::max(free_at[static_cast<size_t>(prefer)], deps_done);
    for (int t = 0; t < threads; ++t) {
      const double start = std::max(free_at[static_cast<size_t>(t)], deps_done);
      if (start < best_start) {
        best = t;
        best_start = start;
      }
    }
    thread[static_cast<size_t>(s)] = best;
    finish[static_cast<size_t>(s)] = best_start + cost[static_cast<size_t>(s)];
    free_at[static_cast<size_t>(best)] = finish[static_cast<size_t>(s)];
    for (int u : users[static_cast<size_t>(s)])
      if (--pending[static_cast<size_t>(u)] == 0) ready.push(u);
  }
  return thread;
}

BranchPlan plan_branches(const runtime::Program& p, std::vector<int> thread) {
  const size_t n = p.steps.size();
  BranchPlan bp;
  thread.resize(n, 0);
  if (std::all_of(thread.begin(), thread.end(), [](int t) { return t == 0; })) {
    bp.thread = std::move(thread);  // one thread: program order, nothing to wait for
    bp.waits.assign(n, {});
    bp.lo.resize(n);
    for (size_t s = 0; s < n; ++s) bp.lo[s] = static_cast<int>(s);
    bp.hi = bp.lo;
    return bp;
  }
  const auto deps = step_deps(p);
  const size_t words = (n + 63) / 64;
  // Predecessor bitsets in program order (every dependency and same-thread predecessor comes
  // earlier), then the successor view by transposition.
  auto compute = [&](const std::vector<int>& th) {
    bp.pred.assign(n, std::vector<uint64_t>(words, 0));
    std::vector<int> last_on(n + 1, -1);
    for (size_t s = 0; s < n; ++s) {
      auto add = [&](int d) {
        if (d < 0) return;
        auto& dst = bp.pred[s];
        const auto& src = bp.pred[static_cast<size_t>(d)];
        for (size_t w = 0; w < words; ++w) dst[w] |= src[w];
        dst[static_cast<size_t>(d) / 64] |= uint64_t{1} << (d % 64);
      };
      for (int d : deps[s]) add(d);
      const size_t t = static_cast<size_t>(std::clamp(th[s], 0, static_cast<int>(n)));
      add(last_on[t]);
      last_on[t] = static_cast<int>(s);
    }
    bp.lo.assign(n, 0);
    bp.hi.assign(n, 0);
    for (size_t s = 0; s < n; ++s) {
      bp.lo[s] = bp.hi[s] = static_cast<int>(s);
      for (size_t x = 0; x < n; ++x)
        if (bp.concurrent(static_cast<int>(x), static_cast<int>(s))) {
          bp.lo[s] = std::min(bp.lo[s], static_cast<int>(x));
          bp.hi[s] = std::max(bp.hi[s], static_cast<int>(x));
        }
    }
  };
  compute(thread);
  // A step nothing runs beside goes to thread 0 (the caller's thread, which runs such steps on all
  // the cores). Leaving its thread can unorder it from that thread's later steps: recompute.
  bool moved = false;
  for (size_t s = 0; s < n; ++s)
    if (thread[s] != 0 && bp.lo[s] == static_cast<int>(s) && bp.hi[s] == static_cast<int>(s)) {
      thread[s] = 0;
      moved = true;
    }
  if (moved) compute(thread);
  bp.thread = std::move(thread);
  bp.waits.assign(n, {});
  for (size_t s = 0; s < n; ++s) {
    for (int d : deps[s])
      if (bp.thread[static_cast<size_t>(d)] != bp.thread[s]) bp.waits[s].push_back(d);
    bp.threads_used = std::max(bp.threads_used, bp.thread[s] + 1);
  }
  return bp;
}

}  // namespace ms::compiler
