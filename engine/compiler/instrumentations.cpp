#include "engine/compiler/instrumentations.h"

#include "engine/compiler/work.h"

namespace ms::compiler {

Status VerifyAfterEachPass::run_after_pass(const Pass& pass, int, const ir::Graph& g) {
  Status st = ir::verify(g);
  if (!st.is_ok()) st.prepend("graph broken by '" + pass.argument() + "': ");
  return st;
}

bool PassTiming::run_before_pass(const Pass&, int index, const ir::Graph&) {
  if (ms_.size() <= static_cast<size_t>(index)) ms_.resize(static_cast<size_t>(index) + 1, -1);
  start_ = std::chrono::steady_clock::now();
  return true;
}

void PassTiming::stop(int index) {
  if (ms_.size() <= static_cast<size_t>(index)) ms_.resize(static_cast<size_t>(index) + 1, -1);
  ms_[static_cast<size_t>(index)] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
}

Status PassTiming::run_after_pass(const Pass&, int index, const ir::Graph&) {
  stop(index);
  return Status::ok();
}

double PassTiming::total_ms() const {
  double t = 0;
  for (double v : ms_)
    if (v > 0) t += v;
  return t;
}

void SnapshotAfterEachPass::run_before_pipeline(const ir::Graph& g) {
  snapshots_.clear();
  Snapshot s;
  s.pass = "input";
  s.changed = true;
  s.fingerprint = g.fingerprint();
  s.graph = std::make_shared<const ir::Graph>(g.deep_copy());
  work().snapshot_copies += g.nodes().size();
  snapshots_.push_back(std::move(s));
}

Status SnapshotAfterEachPass::run_after_pass(const Pass& pass, int index, const ir::Graph& g) {
  Snapshot s;
  s.index = index;
  s.pass = pass.argument();
  s.fingerprint = g.fingerprint();
  const Snapshot& prev = snapshots_.back();
  s.changed = s.fingerprint != prev.fingerprint;
  s.graph = s.changed ? std::make_shared<const ir::Graph>(g.deep_copy()) : prev.graph;
  if (s.changed) work().snapshot_copies += g.nodes().size();
  snapshots_.push_back(std::move(s));
  return Status::ok();
}

void SnapshotAfterEachPass::run_skipped_pass(const Pass& pass, int index) {
  if (snapshots_.empty()) return;  // skipped before any graph was seen: nothing to share
  Snapshot s = snapshots_.back();
  s.index = index;
  s.pass = pass.argument();
  s.ran = false;
  s.changed = false;
  snapshots_.push_back(std::move(s));
}

}  // namespace ms::compiler
