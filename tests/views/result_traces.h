// Generated traces for the result views' tests: a PyNative run (one op and one kernel per node,
// allocator blocks at scattered addresses) and a Graph run of the same model (Conv+Relu fused,
// arena blocks), plus a large trace for the timeline benchmark.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::views::test {

inline prof::TracePtr generated_trace(bool graph, int iterations = 2, int ops_per_iter = 6) {
  using namespace ms::prof;
  TraceBuilder b;
  b.set_meta("mode", graph ? "graph" : "pynative");
  const uint32_t host = b.add_track({TrackKind::HostThread, 1, 1, "modescope", "host dispatch", 0});
  const uint32_t kern = b.add_track({TrackKind::KernelThread, 1, 2, "modescope", "CPU kernels", 1});
  const uint32_t mem = b.add_track({TrackKind::Memory, 1, 3, "modescope", "memory", 2});
  const char* ops[] = {"Conv", "Relu", "MaxPool", "Conv", "Relu", "Gemm"};
  std::vector<int32_t> nodes;
  for (int i = 0; i < ops_per_iter; ++i)
    nodes.push_back(b.add_node({static_cast<uint64_t>(i + 1),
                                std::string(ops[i % 6]) + "_" + std::to_string(i + 1),
                                ops[i % 6],
                                {static_cast<uint64_t>(i + 1)},
                                "f32[1,8,16,16] -> f32[1,8,16,16]",
                                1e6,
                                8192}));
  // Graph mode: node 100 fuses Conv 1 + Relu 2.
  const int32_t fused =
      graph ? b.add_node({100, "Conv_1_fused", "FusedConv", {1, 2}, "f32[1,8,16,16] -> f32[1,8,16,16]", 1.1e6, 8192})
            : -1;
  int64_t t = 1000;
  const int64_t op_ns = graph ? 800 : 1500;
  for (int it = 0; it < iterations; ++it) {
    Event run;
    run.kind = EventKind::Run;
    run.track = host;
    run.iteration = it;
    run.name = b.intern("iteration " + std::to_string(it));
    run.ts_ns = t;
    const int64_t start = t;
    uint64_t offset = 0;
    for (int i = 0; i < ops_per_iter; ++i) {
      if (graph && i == 1) continue;  // fused into node 100
      const int32_t n = graph && i == 0 ? fused : nodes[static_cast<size_t>(i)];
      Event e;
      e.kind = EventKind::Op;
      e.track = host;
      e.node = n;
      e.iteration = it;
      e.name = b.intern(b.raw().nodes[static_cast<size_t>(n)].op);
      e.ts_ns = t + 100;
      e.dur_ns = op_ns;
      b.add_event(e);
      Event k = e;
      k.kind = EventKind::Kernel;
      k.track = kern;
      k.ts_ns = t + 200;
      k.dur_ns = op_ns - 200;
      k.impl = b.intern("cpu:ref");
      b.add_event(k);
      MemoryBlock m;
      m.bytes = 4096u * static_cast<uint64_t>(1 + i % 3);
      m.address = graph ? offset : 0x7f0000000000ull + static_cast<uint64_t>(i % 3) * 0x100000ull;
      offset = (offset + m.bytes) % 16384;
      m.value = b.intern("v" + std::to_string(i));
      m.producer = b.raw().nodes[static_cast<size_t>(n)].id;
      m.alloc_ns = e.ts_ns + 10;
      m.free_ns = e.ts_ns + 2 * op_ns + 300;
      m.iteration = it;
      m.arena = graph;
      b.add_block(m);
      b.add_counter({mem, b.intern("live bytes"), e.ts_ns, static_cast<double>(m.bytes * 2)});
      t += op_ns + 200;
    }
    run.dur_ns = t - start + 100;
    b.add_event(run);
    t += 500;
  }
  return b.finish();
}

// The Graph run of generated_trace with 3 iterations, its iterations enclosing their ops (depth 1)
// and one op of iteration 1 holding two more (depth 2), as a subgraph call has them.
inline prof::TracePtr nested_trace() {
  auto t = std::make_shared<prof::Trace>(*generated_trace(true, 3));
  prof::Event outer;
  for (const prof::Event& e : t->events)
    if (e.kind == prof::EventKind::Op && e.iteration == 1) {
      outer = e;
      break;
    }
  for (int k = 0; k < 2; ++k) {
    prof::Event inner = outer;
    inner.ts_ns += 10 + k * 300;
    inner.dur_ns = 250;
    t->events.push_back(inner);
  }
  std::stable_sort(t->events.begin(), t->events.end(), [](const prof::Event& x, const prof::Event& y) {
    if (x.track != y.track) return x.track < y.track;
    return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : x.dur_ns > y.dur_ns;
  });
  t->flows.clear();
  return t;
}

// `n` back-to-back kernel-sized events on two tracks (the timeline benchmark).
inline prof::TracePtr large_trace(size_t n) {
  using namespace ms::prof;
  TraceBuilder b;
  const uint32_t host = b.add_track({TrackKind::HostThread, 1, 1, "bench", "host", 0});
  const uint32_t kern = b.add_track({TrackKind::KernelThread, 1, 2, "bench", "kernels", 1});
  const char* ops[] = {"Conv", "Relu", "Add", "MatMul"};
  std::vector<int32_t> nodes;
  for (int i = 0; i < 64; ++i)
    nodes.push_back(b.add_node({static_cast<uint64_t>(i + 1),
                                "n" + std::to_string(i),
                                ops[i % 4],
                                {static_cast<uint64_t>(i + 1)},
                                "",
                                1e5,
                                0}));
  for (size_t i = 0; i < n; ++i) {
    Event e;
    e.kind = i % 2 ? EventKind::Kernel : EventKind::Op;
    e.track = i % 2 ? kern : host;
    e.node = nodes[(i / 2) % nodes.size()];
    e.name = b.intern(ops[(i / 2) % 4]);
    e.ts_ns = static_cast<int64_t>(i / 2) * 1000 + (i % 2) * 100;
    e.dur_ns = 700;
    b.add_event(e);
  }
  return b.finish();
}

}  // namespace ms::views::test
