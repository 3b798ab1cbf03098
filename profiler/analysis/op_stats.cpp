#include "profiler/analysis/op_stats.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace ms::prof {

std::vector<int64_t> self_times(const Trace& t, EventKind kind) {
  // Events are sorted by (track, ts, longest first), so a stack per track finds each parent.
  std::vector<int64_t> self(t.events.size(), 0);
  std::vector<uint32_t> stack;
  uint32_t track = UINT32_MAX;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.kind != kind) continue;
    if (e.track != track) {
      stack.clear();
      track = e.track;
    }
    while (!stack.empty() && t.events[stack.back()].end_ns() <= e.ts_ns) stack.pop_back();
    self[i] = e.dur_ns;
    if (!stack.empty()) self[stack.back()] -= std::min(e.dur_ns, self[stack.back()]);
    stack.push_back(i);
  }
  return self;
}

OpTable op_stats(const Trace& t) {
  OpTable table;
  bool have_ops = false;
  for (const Event& e : t.events) have_ops |= e.kind == EventKind::Op;
  const EventKind slice_kind = have_ops ? EventKind::Op : EventKind::Foreign;

  const std::vector<int64_t> self = self_times(t, slice_kind);

  std::map<std::string, OpStat> ops;
  std::unordered_map<int64_t, NodeStat> nodes;  // node index (or -1 - name id for foreign) -> stat
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.kind == EventKind::Run) {
      ++table.iterations;
      table.run_ms += static_cast<double>(e.dur_ns) * 1e-6;
      continue;
    }
    const NodeInfo* n = t.node_of(e);
    const std::string op = n ? n->op : std::string(t.str(e.name));
    const int64_t key = e.node >= 0 ? e.node : -1 - static_cast<int64_t>(e.name);
    if (e.kind == EventKind::Kernel) {
      OpStat& s = ops[op];
      s.op = op;
      s.kernel_ms += static_cast<double>(e.dur_ns) * 1e-6;
      ++s.kernels;
      NodeStat& ns = nodes[key];
      ns.kernel_ms += static_cast<double>(e.dur_ns) * 1e-6;
      ++ns.kernels;
      if (e.impl) ns.impl = std::string(t.str(e.impl));
      continue;
    }
    if (e.kind != slice_kind) continue;
    OpStat& s = ops[op];
    s.op = op;
    ++s.count;
    s.total_ms += static_cast<double>(e.dur_ns) * 1e-6;
    s.self_ms += static_cast<double>(self[i]) * 1e-6;
    NodeStat& ns = nodes[key];
    ++ns.count;
    ns.total_ms += static_cast<double>(e.dur_ns) * 1e-6;
    ns.self_ms += static_cast<double>(self[i]) * 1e-6;
    if (n) {
      s.flops += n->flops;
      s.bytes += n->bytes;
      ns.node_id = n->id;
      ns.name = n->name;
      ns.op = n->op;
      ns.shapes = n->shapes;
      ns.origins = n->origins;
      ns.flops = n->flops;
      ns.bytes = n->bytes;
    } else {
      ns.name = op;
      ns.op = op;
    }
  }
  if (table.iterations == 0) table.iterations = 1;
  for (auto& [name, s] : ops) table.busy_ms += s.self_ms;
  for (auto& [name, s] : ops) {
    s.mean_us = s.count ? s.total_ms * 1e3 / static_cast<double>(s.count) : 0;
    s.share = table.busy_ms > 0 ? s.self_ms / table.busy_ms : 0;
    const double secs = (s.kernels ? s.kernel_ms : s.self_ms) * 1e-3;
    s.flops_per_s = secs > 0 ? s.flops / secs : 0;
    s.bytes_per_s = secs > 0 ? s.bytes / secs : 0;
    if (s.count || s.kernels) table.by_op.push_back(s);
  }
  std::sort(table.by_op.begin(), table.by_op.end(), [](const OpStat& a, const OpStat& b) {
    return a.self_ms != b.self_ms ? a.self_ms > b.self_ms : a.op < b.op;
  });
  for (auto& [key, ns] : nodes)
    if (ns.count) table.by_node.push_back(std::move(ns));
  std::sort(table.by_node.begin(), table.by_node.end(), [](const NodeStat& a, const NodeStat& b) {
    return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.node_id < b.node_id;
  });
  return table;
}

}  // namespace ms::prof
