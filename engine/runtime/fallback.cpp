#include "engine/runtime/fallback.h"

#include <algorithm>

#include "engine/runtime/backend.h"

namespace ms::runtime {

namespace {

thread_local FallbackLog* current_log = nullptr;

}  // namespace

void FallbackLog::add(uint64_t node, const std::string& op, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  nodes_[{op, reason}].insert(node);
}

void FallbackLog::add(const Fallback& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  counted_[{f.op, f.reason}] += f.count;
}

std::vector<Fallback> FallbackLog::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::pair<std::string, std::string>, int64_t> all = counted_;
  for (const auto& [key, ids] : nodes_) all[key] += static_cast<int64_t>(ids.size());
  std::vector<Fallback> out;
  for (const auto& [key, n] : all) out.push_back(Fallback{key.first, n, key.second});
  return out;
}

bool FallbackLog::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_.empty() && counted_.empty();
}

FallbackScope::FallbackScope(FallbackLog& log) : previous_(current_log) { current_log = &log; }

FallbackScope::~FallbackScope() { current_log = previous_; }

void note_fallback(const ir::Node& node, const std::string& reason) {
  if (current_log) current_log->add(node.id.value, node.op_type, reason);
}

std::string no_kernel_reason(const Backend& backend) { return "no " + backend.name() + " kernel: runs on the CPU"; }

void find_fallbacks(const ir::Graph& graph, const Backend& backend, FallbackLog& log) {
  for (const ir::Node& n : graph.nodes()) {
    const KernelFn k = backend.find_kernel(n);
    if (k && backend.is_fallback(k)) {
      log.add(n.id.value, n.op_type, no_kernel_reason(backend));
      continue;  // its subgraphs run on the CPU backend with it
    }
    for (const auto& sub : n.subgraphs())
      if (sub) find_fallbacks(*sub, backend, log);
  }
}

std::string describe_fallbacks(const std::vector<Fallback>& fallbacks) {
  std::string out;
  for (const Fallback& f : fallbacks)
    out += (out.empty() ? "" : "; ") + f.op + " x" + std::to_string(f.count) + " (" + f.reason + ")";
  return out;
}

void merge_fallbacks(std::vector<Fallback>& into, const std::vector<Fallback>& more, bool sum) {
  for (const Fallback& f : more) {
    auto it =
        std::find_if(into.begin(), into.end(), [&](const Fallback& g) { return g.op == f.op && g.reason == f.reason; });
    if (it == into.end())
      into.push_back(f);
    else
      it->count = sum ? it->count + f.count : std::max(it->count, f.count);
  }
}

}  // namespace ms::runtime
