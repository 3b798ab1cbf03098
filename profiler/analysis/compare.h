// PyNative vs Graph: one row per original node or fused group, aligned through origins (a Graph-mode
// node covers the eager ops of its origins), a summary with the break-even iteration count, and the
// mode advisor's verdict (one sentence, and a second where the runs' timings are disturbed).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::prof {

struct CompareRow {
  std::vector<uint64_t> origins;  // original node ids in the group, sorted
  std::string label;              // "Conv+BatchNormalization+Relu" (eager ops in order)
  std::string names;              // eager node names, comma-separated
  std::string graph_ops;          // Graph-mode op types covering the group
  bool fused = false;             // one Graph-mode node covers several original nodes
  // Per iteration (times: the median over iterations; counts and bytes: the mean):
  double eager_ms = 0, graph_ms = 0;
  double eager_kernel_ms = 0, graph_kernel_ms = 0;
  double eager_kernels = 0, graph_kernels = 0;  // kernel launches
  double eager_ops = 0, graph_ops_count = 0;    // dispatches
  double eager_bytes = 0, graph_bytes = 0;      // cost-model bytes moved
  double saving_ms() const { return eager_ms - graph_ms; }
};

struct CompareSummary {
  double eager_iter_ms = 0, graph_iter_ms = 0;  // median run time per iteration
  double compile_ms = 0;                        // the Graph run's compiled graph: what compiling it took
  bool compile_cached = false;                  // the Graph run found it compiled (an earlier run paid compile_ms)
  double eager_kernels_per_iter = 0, graph_kernels_per_iter = 0;
  uint64_t eager_peak_bytes = 0, graph_peak_bytes = 0;
  double eager_overhead_ms = 0, graph_overhead_ms = 0;                     // run time not inside any op, per iteration
  double saving_ms = 0;                                                    // per iteration
  double break_even_iterations = std::numeric_limits<double>::infinity();  // compile / saving
  int eager_iterations = 0, graph_iterations = 0;
  // The share of the timed iterations' time each run's threads waited for a CPU (other work had the
  // cores; the run's "cpu_wait_share" metadata), -1 where unknown. From kDisturbedCpuWait up, the
  // verdict says its timings are disturbed.
  double eager_cpu_wait_share = -1, graph_cpu_wait_share = -1;
};

// A run whose threads waited for a CPU at least this share of its timed iterations' time measured
// the machine's load as much as the model.
inline constexpr double kDisturbedCpuWait = 0.05;

struct Verdict {
  std::string text;  // one sentence (a second one where the timings are disturbed)
  bool graph_pays_off = false;
  double break_even_iterations = std::numeric_limits<double>::infinity();
  std::string main_source;  // largest source of the saving ("Conv+BatchNormalization+Relu fusion"), or of the loss
                            // when Graph mode is slower
  double main_share = 0;    // its share of the saving, 0..1 (0 when Graph mode is slower)
  // A run's threads waited for a CPU from kDisturbedCpuWait of the time up: after the verdict from the
  // figures, the text says which run and how much, and that it may not hold.
  bool disturbed = false;
};

struct Comparison {
  std::vector<CompareRow> rows;  // in eager execution order (then Graph-only rows)
  CompareSummary summary;
  Verdict verdict;
};

Comparison compare_runs(const Trace& eager, const Trace& graph);
Verdict advise(const Comparison& c);

// The break-even as the whole number of iterations a user runs: compile / saving rounded up, at
// least 1 (10.000000001 is 10); what the verdict says and what a table beside it prints.
double whole_iterations(double break_even_iterations);

// Takes the per-iteration times and the compile time from other runs of the same model (unprofiled,
// so without the recorder's cost), recomputes the saving and the break-even and advises again: the
// verdict and a table printed from those runs then come from one computation.
// The runs' CPU-wait shares (CompareSummary's) are taken where known (>= 0).
void retime(Comparison& c, double eager_iter_ms, double graph_iter_ms, double compile_ms,
            double eager_cpu_wait_share = -1, double graph_cpu_wait_share = -1);

}  // namespace ms::prof
