#include "engine/runtime/fallback.h"

#include <algorithm>
#include <iterator>

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
  const std::pair<std::string, std::string> key{f.op, f.reason};
  if (!f.nodes.empty()) nodes_[key].insert(f.nodes.begin(), f.nodes.end());
  const auto named = static_cast<int64_t>(f.nodes.size());
  if (f.count > named || f.nodes.empty()) counted_[key] += f.count - named;
}

std::vector<Fallback> FallbackLog::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::pair<std::string, std::string>, Fallback> all;
  for (const auto& [key, n] : counted_) all[key] = Fallback{key.first, n, key.second};
  for (const auto& [key, ids] : nodes_) {
    Fallback& f = all[key];
    f.op = key.first, f.reason = key.second;
    f.count += static_cast<int64_t>(ids.size());
    f.nodes.assign(ids.begin(), ids.end());
  }
  std::vector<Fallback> out;
  for (auto& [key, f] : all) out.push_back(std::move(f));
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
    if (it == into.end()) {
      into.push_back(f);
      continue;
    }
    std::vector<uint64_t> nodes;
    std::set_union(it->nodes.begin(), it->nodes.end(), f.nodes.begin(), f.nodes.end(), std::back_inserter(nodes));
    it->count = sum ? it->count + f.count : std::max({it->count, f.count, static_cast<int64_t>(nodes.size())});
    it->nodes = std::move(nodes);
  }
}

}  // namespace ms::runtime
