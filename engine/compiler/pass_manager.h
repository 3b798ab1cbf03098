// PassManager: runs a pipeline of passes in order and calls its instrumentations around each one
// (MLIR's PassInstrumentation, TVM's RunBeforePass): a before-hook may skip a pass, after-hooks see
// the result and may fail the pipeline (the verifier does).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "engine/compiler/pass.h"
#include "engine/compiler/work.h"

namespace ms::compiler {

class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  virtual void run_before_pipeline(const ir::Graph& /*g*/) {}
  // Called before pass `index` runs; false skips it (the after-hooks are not called then).
  virtual bool run_before_pass(const Pass& /*pass*/, int /*index*/, const ir::Graph& /*g*/) { return true; }
  // Called after a pass succeeded; an error stops the pipeline.
  virtual Status run_after_pass(const Pass& /*pass*/, int /*index*/, const ir::Graph& /*g*/) { return Status::ok(); }
  virtual void run_after_pass_failed(const Pass& /*pass*/, int /*index*/, const Status& /*error*/) {}
  // Called for a skipped pass (after some before-hook said no).
  virtual void run_skipped_pass(const Pass& /*pass*/, int /*index*/) {}
};

class PassManager {
 public:
  void add(PassPtr pass) { passes_.push_back(std::move(pass)); }
  // Puts `pass` at position `index` (at the end when past it).
  void insert(size_t index, PassPtr pass) {
    passes_.insert(passes_.begin() + static_cast<std::ptrdiff_t>(std::min(index, passes_.size())), std::move(pass));
  }
  // Instrumentations are called in the order added (before-hooks) and in reverse (after-hooks), so
  // a timer added last measures only the pass.
  void add_instrumentation(PassInstrumentation* inst) { instrumentations_.push_back(inst); }
  const std::vector<PassPtr>& passes() const { return passes_; }

  // Runs every pass; an error names the pass. Each pass (its subgraph runs and its after-hooks, such
  // as the snapshot copy, included) counts its work into its own WorkCounters, which then flow into
  // whatever WorkScope the caller has open.
  Status run(ir::Graph& g);
  // Work of pass `index` in the last run (zero when skipped).
  const WorkCounters& work(int index) const;
  WorkCounters total_work() const;

 private:
  std::vector<PassPtr> passes_;
  std::vector<WorkCounters> work_;
  std::vector<PassInstrumentation*> instrumentations_;
};

}  // namespace ms::compiler
