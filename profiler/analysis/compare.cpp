#include "profiler/analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "profiler/analysis/memory_analysis.h"
#include "profiler/analysis/op_stats.h"

namespace ms::prof {

namespace {

// Union-find over original node ids: every Graph-mode node joins its origins into one group, so a
// fused node, and any partial overlaps between rewritten nodes, end up in one row.
class Groups {
 public:
  uint64_t find(uint64_t x) {
    auto it = parent_.find(x);
    if (it == parent_.end()) {
      parent_.emplace(x, x);
      return x;
    }
    uint64_t r = x;
    while (parent_[r] != r) r = parent_[r];
    while (parent_[x] != r) {
      const uint64_t n = parent_[x];
      parent_[x] = r;
      x = n;
    }
    return r;
  }
  void unite(uint64_t a, uint64_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::unordered_map<uint64_t, uint64_t> parent_;
};

const std::vector<uint64_t>& origins_of(const NodeInfo& n, std::vector<uint64_t>& tmp) {
  if (!n.origins.empty()) return n.origins;
  tmp = {n.id};
  return tmp;
}

int iterations_of(const Trace& t) {
  int n = 0;
  for (const Event& e : t.events) n += e.kind == EventKind::Run;
  return std::max(n, 1);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Median run time per iteration: one slow iteration (a cold cache, a busy machine) must not decide.
double run_ms(const Trace& t) {
  std::vector<double> runs;
  for (const Event& e : t.events)
    if (e.kind == EventKind::Run) runs.push_back(static_cast<double>(e.dur_ns) * 1e-6);
  return median(std::move(runs));
}

// Per-iteration times of one row on one side; the median over the trace's iterations.
struct PerIteration {
  std::map<int, double> ms;
  double median_over(int iterations) const {
    std::vector<double> v;
    for (const auto& [it, x] : ms) v.push_back(x);
    v.resize(std::max<size_t>(v.size(), static_cast<size_t>(iterations)), 0.0);  // iterations without the op
    return median(std::move(v));
  }
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// Which time of a row a PerIteration holds.
enum What { EagerOp, GraphOp, EagerKernel, GraphKernel };

// The rows of a comparison: one per group of original nodes, filled from both traces' op and
// kernel events.
class RowBuilder {
 public:
  RowBuilder(Comparison& c, const Trace& eager, const Trace& graph) : c_(c) {
    for (const Trace* t : {&graph, &eager})
      for (const NodeInfo& n : t->nodes) {
        const auto& o = origins_of(n, tmp_);
        for (size_t i = 1; i < o.size(); ++i) groups_.unite(o[0], o[i]);
      }
  }

  // Counts, bytes, op names and per-iteration times of one side's (0 eager, 1 graph) events.
  void add_side(const Trace& t, int side, double iters) {
    const std::vector<int64_t> self = self_times(t, EventKind::Op);
    for (size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      const NodeInfo* n = t.node_of(e);
      if (!n || (e.kind != EventKind::Op && e.kind != EventKind::Kernel)) continue;
      CompareRow& r = row_for(*n);
      const uint64_t root = groups_.find(origins_of(*n, tmp_)[0]);
      const double ms = static_cast<double>(e.kind == EventKind::Op ? self[i] : e.dur_ns) * 1e-6;
      const size_t row = static_cast<size_t>(&r - c_.rows.data());
      const int what =
          e.kind == EventKind::Op ? (side == 0 ? EagerOp : GraphOp) : (side == 0 ? EagerKernel : GraphKernel);
      times_[{row, what}].ms[e.iteration] += ms;
      if (e.kind == EventKind::Op)
        add_op(r, root, *n, side, iters);
      else
        (side == 0 ? r.eager_kernels : r.graph_kernels) += 1.0 / iters;
    }
  }

  // Each row's times: the median over its side's iterations (ei eager, gi graph).
  void set_times(double ei, double gi) {
    for (const auto& [key, per] : times_) {
      CompareRow& r = c_.rows[key.first];
      const int iterations = static_cast<int>(key.second == EagerOp || key.second == EagerKernel ? ei : gi);
      double* field[] = {&r.eager_ms, &r.graph_ms, &r.eager_kernel_ms, &r.graph_kernel_ms};
      *field[key.second] = per.median_over(iterations);
    }
  }

  // Each row's sorted origins, label, eager names and Graph-mode ops.
  void label_rows() {
    for (auto& [root, idx] : row_of_) {
      CompareRow& r = c_.rows[idx];
      std::sort(r.origins.begin(), r.origins.end());
      r.origins.erase(std::unique(r.origins.begin(), r.origins.end()), r.origins.end());
      const auto& eops = ops_in_row_[root];
      r.label = join(eops.empty() ? graph_ops_in_row_[root] : eops, "+");
      r.names = join(names_in_row_[root], ", ");
      r.graph_ops = join(graph_ops_in_row_[root], "+");
    }
  }

 private:
  // The row of n's group (added when new).
  CompareRow& row_for(const NodeInfo& n) {
    const auto& o = origins_of(n, tmp_);
    const uint64_t root = groups_.find(o.empty() ? n.id : o[0]);
    auto it = row_of_.find(root);
    if (it == row_of_.end()) {
      it = row_of_.emplace(root, c_.rows.size()).first;
      c_.rows.emplace_back();
    }
    return c_.rows[it->second];
  }

  // An op event of node n in row r (group `root`): its count, bytes, origins and op name.
  void add_op(CompareRow& r, uint64_t root, const NodeInfo& n, int side, double iters) {
    (side == 0 ? r.eager_ops : r.graph_ops_count) += 1.0 / iters;
    (side == 0 ? r.eager_bytes : r.graph_bytes) += n.bytes / iters;
    for (uint64_t o : origins_of(n, tmp_)) r.origins.push_back(o);
    if (side == 1 && origins_of(n, tmp_).size() > 1) r.fused = true;
    auto& list = side == 0 ? ops_in_row_[root] : graph_ops_in_row_[root];
    if (std::find(list.begin(), list.end(), n.op) == list.end()) list.push_back(n.op);
    if (side == 0) {
      auto& names = names_in_row_[root];
      if (std::find(names.begin(), names.end(), n.name) == names.end()) names.push_back(n.name);
    }
  }

  Comparison& c_;
  Groups groups_;
  std::vector<uint64_t> tmp_;
  std::map<uint64_t, size_t> row_of_;  // group root -> row
  std::map<uint64_t, std::vector<std::string>> ops_in_row_, names_in_row_, graph_ops_in_row_;
  std::map<std::pair<size_t, int>, PerIteration> times_;  // (row, what) -> per-iteration ms
};

// The totals over the rows and runs: iteration times, overheads, kernels, peaks, saving and break-even.
void summarize(Comparison& c, const Trace& eager, const Trace& graph, double ei, double gi) {
  CompareSummary& s = c.summary;
  s.eager_iterations = static_cast<int>(ei);
  s.graph_iterations = static_cast<int>(gi);
  double eager_ops_ms = 0, graph_ops_ms = 0, ek = 0, gk = 0;
  for (const CompareRow& r : c.rows) {
    eager_ops_ms += r.eager_ms;
    graph_ops_ms += r.graph_ms;
    ek += r.eager_kernels;
    gk += r.graph_kernels;
  }
  s.eager_iter_ms = run_ms(eager) > 0 ? run_ms(eager) : eager_ops_ms;
  s.graph_iter_ms = run_ms(graph) > 0 ? run_ms(graph) : graph_ops_ms;
  s.eager_overhead_ms = std::max(0.0, s.eager_iter_ms - eager_ops_ms);
  s.graph_overhead_ms = std::max(0.0, s.graph_iter_ms - graph_ops_ms);
  s.compile_ms = graph.meta_number("compile_ms", 0);
  s.compile_cached = graph.meta("compile_cached") == "true";
  s.eager_kernels_per_iter = ek;
  s.graph_kernels_per_iter = gk;
  s.eager_peak_bytes = analyze_memory(eager, 0).peak_live_bytes;
  s.graph_peak_bytes = analyze_memory(graph, 0).peak_live_bytes;
  s.saving_ms = s.eager_iter_ms - s.graph_iter_ms;
  if (s.saving_ms > 0) s.break_even_iterations = s.compile_ms / s.saving_ms;
  s.eager_cpu_wait_share = eager.meta_number("cpu_wait_share", -1);
  s.graph_cpu_wait_share = graph.meta_number("cpu_wait_share", -1);
}

// "the Graph-mode run's threads waited for a CPU 38% of the time" for the runs at or above
// kDisturbedCpuWait; empty when neither is.
std::string disturbance(const CompareSummary& s) {
  const bool e = s.eager_cpu_wait_share >= kDisturbedCpuWait, g = s.graph_cpu_wait_share >= kDisturbedCpuWait;
  if (!e && !g) return {};
  const std::string pe = fmt("%.0f%%", 100 * s.eager_cpu_wait_share), pg = fmt("%.0f%%", 100 * s.graph_cpu_wait_share);
  if (e && g) return "the PyNative and Graph-mode runs' threads waited for a CPU " + pe + " and " + pg + " of the time";
  return std::string("the ") + (e ? "PyNative" : "Graph-mode") + " run's threads waited for a CPU " + (e ? pe : pg) +
         " of the time";
}

}  // namespace

Comparison compare_runs(const Trace& eager, const Trace& graph) {
  Comparison c;
  RowBuilder rows(c, eager, graph);
  const double ei = iterations_of(eager), gi = iterations_of(graph);
  rows.add_side(eager, 0, ei);
  rows.add_side(graph, 1, gi);
  rows.set_times(ei, gi);
  rows.label_rows();
  summarize(c, eager, graph, ei, gi);
  c.verdict = advise(c);
  return c;
}

double whole_iterations(double break_even_iterations) { return std::max(1.0, std::ceil(break_even_iterations - 1e-9)); }

void retime(Comparison& c, double eager_iter_ms, double graph_iter_ms, double compile_ms, double eager_cpu_wait_share,
            double graph_cpu_wait_share) {
  CompareSummary& s = c.summary;
  if (eager_cpu_wait_share >= 0) s.eager_cpu_wait_share = eager_cpu_wait_share;
  if (graph_cpu_wait_share >= 0) s.graph_cpu_wait_share = graph_cpu_wait_share;
  s.eager_iter_ms = eager_iter_ms;
  s.graph_iter_ms = graph_iter_ms;
  s.compile_ms = compile_ms;
  s.saving_ms = eager_iter_ms - graph_iter_ms;
  s.break_even_iterations = s.saving_ms > 0 ? compile_ms / s.saving_ms : std::numeric_limits<double>::infinity();
  c.verdict = advise(c);
}

namespace {

// The verdict from the figures alone (advise adds what disturbed them).
Verdict advise_measured(const Comparison& c) {
  const CompareSummary& s = c.summary;
  Verdict v;
  v.break_even_iterations = s.break_even_iterations;
  if (s.eager_iter_ms <= 0 || s.graph_iter_ms <= 0) {
    v.text = "Not enough data to advise: both a PyNative and a Graph run with timed iterations are needed.";
    return v;
  }
  if (s.saving_ms <= 0) {
    v.text = "Stay in PyNative mode: Graph mode is not faster per iteration here (" + fmt("%.3f", s.graph_iter_ms) +
             " ms vs " + fmt("%.3f", s.eager_iter_ms) + " ms), so its " + fmt("%.1f", s.compile_ms) +
             " ms compile never pays off";
    // Name the row that loses most, where to look first.
    const CompareRow* worst = nullptr;
    for (const CompareRow& r : c.rows)
      if (r.saving_ms() < 0 && (!worst || r.saving_ms() < worst->saving_ms())) worst = &r;
    if (worst) {
      v.main_source = worst->label + (worst->fused ? " fusion" : "");
      v.text +=
          "; the largest loss is " + v.main_source + " (" + fmt("%.3f", -worst->saving_ms()) + " ms per iteration)";
    }
    v.text += ".";
    return v;
  }
  // Where the saving comes from: fusions by pattern, other ops' cheaper dispatch, overhead between ops.
  std::map<std::string, double> sources;
  for (const CompareRow& r : c.rows) {
    const double d = r.saving_ms();
    if (r.fused)
      sources[r.label + " fusion"] += d;
    else if (r.graph_ops_count == 0 && r.eager_ops > 0)
      sources["nodes removed by graph passes"] += d;
    else
      sources["cheaper per-op dispatch"] += d;
  }
  sources["less framework overhead between ops"] += s.eager_overhead_ms - s.graph_overhead_ms;
  double positive = 0;
  for (const auto& [k, d] : sources) positive += std::max(0.0, d);
  for (const auto& [k, d] : sources)
    if (d > 0 && d / std::max(positive, 1e-12) > v.main_share) {
      v.main_share = d / positive;
      v.main_source = k;
    }
  v.graph_pays_off = true;
  const double n = whole_iterations(s.break_even_iterations);
  v.text = "Graph mode pays off after " + fmt("%.0f", n) + (n == 1 ? " iteration" : " iterations") + " (compile " +
           fmt("%.1f", s.compile_ms) + " ms, saves " + fmt("%.3f", s.saving_ms) + " ms per iteration)";
  if (!v.main_source.empty())
    v.text += "; " + fmt("%.0f", v.main_share * 100) + "% of the gain is from " + v.main_source;
  v.text += ".";
  return v;
}

}  // namespace

Verdict advise(const Comparison& c) {
  Verdict v = advise_measured(c);
  const std::string busy = disturbance(c.summary);
  if (busy.empty() || c.summary.eager_iter_ms <= 0 || c.summary.graph_iter_ms <= 0) return v;
  v.disturbed = true;
  v.text += " But the timings are disturbed: " + busy +
            " (other work had the cores), so run again on a quieter machine or with fewer threads before relying "
            "on this.";
  return v;
}

}  // namespace ms::prof
