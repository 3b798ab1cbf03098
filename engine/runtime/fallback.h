// Fallbacks: what did not run as asked on the chosen backend. An op the device has no kernel for
// runs on the CPU with host copies; a case a device kernel does not cover (another dtype) goes
// the same way. They are counted per op and reason (each node once, however often it ran) and name
// the nodes (their stable ids), so the CLI prints one `note:` line, reports carry a `fallbacks` list,
// the app marks exactly those nodes and `--strict-device` can refuse them.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::runtime {

class Backend;

struct Fallback {
  std::string op;      // op type ("Where"), or "*" for the whole run (the backend asked for is missing)
  int64_t count = 0;   // nodes
  std::string reason;  // "no cuda kernel: runs on the CPU"
  // The nodes (ir::NodeId values, sorted, each once) in the graph that ran: its input graph in
  // PyNative, the compiled graph in Graph mode. Empty for a counted entry (the whole run "*", a report
  // or session written before nodes were named); otherwise `count` is their number.
  std::vector<uint64_t> nodes = {};
};

// Fallbacks by op and reason, each node counted once and listed by id. Thread-safe.
class FallbackLog {
 public:
  void add(uint64_t node, const std::string& op, const std::string& reason);
  void add(const Fallback& f);  // its nodes as above; the count beyond them (a counted entry) adds up
  std::vector<Fallback> list() const;
  bool empty() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::set<uint64_t>> nodes_;
  std::map<std::pair<std::string, std::string>, int64_t> counted_;
};

// While alive, note_fallback on this thread goes to `log` (scopes nest; the innermost wins).
class FallbackScope {
 public:
  explicit FallbackScope(FallbackLog& log);
  ~FallbackScope();
  FallbackScope(const FallbackScope&) = delete;
  FallbackScope& operator=(const FallbackScope&) = delete;

 private:
  FallbackLog* previous_;
};

// A kernel's report that `node` did not run as asked (to the thread's FallbackScope, if any).
void note_fallback(const ir::Node& node, const std::string& reason);

// The reason for a node the backend runs through its CPU fallback kernel.
std::string no_kernel_reason(const Backend& backend);

// Every node of `graph` (subgraphs included) whose kernel on `backend` is the backend's CPU
// fallback, added to `log`.
void find_fallbacks(const ir::Graph& graph, const Backend& backend, FallbackLog& log);

// "Where x2 (no cuda kernel: runs on the CPU); Sin x1 (...)"; "" when empty.
std::string describe_fallbacks(const std::vector<Fallback>& fallbacks);

// `into` plus `more`: entries of the same op and reason summed (different runs), or with `sum`
// false the larger count kept, at least the number of nodes named by either (the same model's nodes
// seen by two runs). Node ids are united either way.
void merge_fallbacks(std::vector<Fallback>& into, const std::vector<Fallback>& more, bool sum = true);

}  // namespace ms::runtime
