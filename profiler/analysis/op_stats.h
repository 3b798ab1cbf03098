// Per-op and per-node statistics of one trace: count, total, mean, self time, share of the busy
// time, achieved FLOP/s and bytes/s (cost-model figures over kernel time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::prof {

struct OpStat {
  std::string op;  // op type (foreign traces: the event name)
  int64_t count = 0;
  double total_ms = 0;  // inclusive
  double mean_us = 0;
  double self_ms = 0;    // minus nested slices on the same track
  double share = 0;      // self time / all self time, 0..1
  double kernel_ms = 0;  // time inside kernels of these ops
  int64_t kernels = 0;
  double flops = 0;  // cost model, summed over executions
  double bytes = 0;
  double flops_per_s = 0;  // over kernel time (op time when no kernels were recorded)
  double bytes_per_s = 0;
};

struct NodeStat {
  uint64_t node_id = 0;
  std::string name, op, shapes, impl;
  std::vector<uint64_t> origins;
  int64_t count = 0;
  double total_ms = 0, self_ms = 0, kernel_ms = 0;
  int64_t kernels = 0;
  double flops = 0, bytes = 0;  // per execution
};

struct OpTable {
  std::vector<OpStat> by_op;      // by self time, largest first
  std::vector<NodeStat> by_node;  // by total time, largest first
  int iterations = 0;             // run events seen (1 when the trace has none)
  double run_ms = 0;              // sum of run events (0 when none)
  double busy_ms = 0;             // sum of self times
};

OpTable op_stats(const Trace& t);

// Self time of every event of `kind` (its duration minus nested events of that kind on its track);
// 0 for other events.
std::vector<int64_t> self_times(const Trace& t, EventKind kind);

}  // namespace ms::prof
