// The cross-cutting concerns of a pipeline, each an instrumentation: disable a pass by argument,
// stop after pass N, verify after each pass, time each pass, snapshot after each pass.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/compiler/pass_manager.h"

namespace ms::compiler {

// Skips passes whose argument (or name) is listed.
class DisablePasses final : public PassInstrumentation {
 public:
  explicit DisablePasses(std::vector<std::string> names) : names_(names.begin(), names.end()) {}
  bool run_before_pass(const Pass& pass, int, const ir::Graph&) override {
    return !names_.count(pass.argument()) && !names_.count(pass.name());
  }

 private:
  std::set<std::string> names_;
};

// Runs passes 0..n-1 only (n < 0: all).
class StopAfter final : public PassInstrumentation {
 public:
  explicit StopAfter(int n) : n_(n) {}
  bool run_before_pass(const Pass&, int index, const ir::Graph&) override { return n_ < 0 || index < n_; }

 private:
  int n_;
};

// ir::verify after every pass; an error stops the pipeline and names the pass.
class VerifyAfterEachPass final : public PassInstrumentation {
 public:
  Status run_after_pass(const Pass& pass, int index, const ir::Graph& g) override;
};

// Wall time of each pass that ran (ms, indexed by pass index; -1 when skipped).
class PassTiming final : public PassInstrumentation {
 public:
  bool run_before_pass(const Pass&, int index, const ir::Graph&) override;
  Status run_after_pass(const Pass&, int index, const ir::Graph&) override;
  void run_after_pass_failed(const Pass&, int index, const Status&) override { stop(index); }
  double ms(int index) const { return index >= 0 && static_cast<size_t>(index) < ms_.size() ? ms_[index] : -1; }
  double total_ms() const;

 private:
  void stop(int index);
  std::chrono::steady_clock::time_point start_;
  std::vector<double> ms_;
};

// An immutable copy of the graph after a pass (NodeIds and origins included). Unchanged passes share
// the previous snapshot's graph and are marked so.
struct Snapshot {
  int index = -1;        // pass index; -1 for the input graph
  std::string pass;      // pass argument ("input" for the input graph)
  bool ran = true;       // false when the pass was skipped (disabled, stop-after)
  bool changed = false;  // fingerprint differs from the previous snapshot
  uint64_t fingerprint = 0;
  std::shared_ptr<const ir::Graph> graph;
};

// Takes a snapshot of the input graph before the first pass and after every pass (a copy only when
// the fingerprint changed).
class SnapshotAfterEachPass final : public PassInstrumentation {
 public:
  void run_before_pipeline(const ir::Graph& g) override;
  Status run_after_pass(const Pass& pass, int index, const ir::Graph& g) override;
  void run_skipped_pass(const Pass& pass, int index) override;
  const std::vector<Snapshot>& snapshots() const { return snapshots_; }
  std::vector<Snapshot> take() { return std::move(snapshots_); }

 private:
  std::vector<Snapshot> snapshots_;
};

}  // namespace ms::compiler
