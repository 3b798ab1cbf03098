#include "profiler/analysis/nesting.h"

#include <algorithm>
#include <map>

namespace ms::prof {

std::vector<int32_t> nesting_depths(const Trace& t) {
  std::vector<int32_t> depth(t.events.size(), 0);
  std::vector<int64_t> open;  // ends of the enclosing events
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (i == 0 || t.events[i - 1].track != e.track) open.clear();
    while (!open.empty() && open.back() <= e.ts_ns) open.pop_back();
    depth[i] = static_cast<int32_t>(open.size());
    open.push_back(e.end_ns());
  }
  return depth;
}

std::vector<IterationSpan> op_iteration_spans(const Trace& t) {
  std::map<int32_t, IterationSpan> spans;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Op) continue;
    auto [it, fresh] = spans.try_emplace(e.iteration, IterationSpan{e.iteration, e.ts_ns, e.end_ns()});
    if (!fresh) {
      it->second.t0 = std::min(it->second.t0, e.ts_ns);
      it->second.t1 = std::max(it->second.t1, e.end_ns());
    }
  }
  std::vector<IterationSpan> out;
  out.reserve(spans.size());
  for (const auto& [_, s] : spans) out.push_back(s);
  return out;
}

}  // namespace ms::prof
