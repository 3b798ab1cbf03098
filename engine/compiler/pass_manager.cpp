#include "engine/compiler/pass_manager.h"

namespace ms::compiler {
namespace {

// Runs `pass` on copies of g's subgraphs (snapshots of earlier passes share the originals) and keeps
// the copies that changed.
Status run_on_subgraphs(Pass& pass, ir::Graph& g) {
  auto one = [&](ir::Attribute::GraphPtr& sub) -> Status {
    if (!sub) return Status::ok();
    auto copy = std::make_shared<ir::Graph>(sub->deep_copy());
    const uint64_t before = sub->fingerprint();
    // Enclosing names resolve in g while the pass runs; afterwards the copy points where the
    // original did (g may be a temporary: executors link parents again before running).
    copy->set_parent(&g);
    Status st = pass.run(*copy).prepend("subgraph '" + sub->name + "': ");
    if (st.is_ok()) st = run_on_subgraphs(pass, *copy);
    copy->set_parent(sub->parent());
    MS_RETURN_IF_ERROR(st);
    if (copy->fingerprint() != before) sub = std::move(copy);
    return Status::ok();
  };
  for (auto& n : g.nodes())
    for (auto& [key, a] : n.attrs) {
      if (auto* s = a.get_if<ir::Attribute::GraphPtr>()) {
        ir::Attribute::GraphPtr sub = *s;
        MS_RETURN_IF_ERROR(one(sub));
        if (sub != *s) a = ir::Attribute(sub);
      } else if (auto* ss = a.get_if<std::vector<ir::Attribute::GraphPtr>>()) {
        std::vector<ir::Attribute::GraphPtr> subs = *ss;
        bool changed = false;
        for (size_t i = 0; i < subs.size(); ++i) {
          const auto old = subs[i];
          MS_RETURN_IF_ERROR(one(subs[i]));
          changed = changed || subs[i] != old;
        }
        if (changed) a = ir::Attribute(std::move(subs));
      }
    }
  return Status::ok();
}

}  // namespace

const WorkCounters& PassManager::work(int index) const {
  static const WorkCounters none;
  return index >= 0 && static_cast<size_t>(index) < work_.size() ? work_[static_cast<size_t>(index)] : none;
}

WorkCounters PassManager::total_work() const {
  WorkCounters t;
  for (const auto& w : work_) t += w;
  return t;
}

Status PassManager::run(ir::Graph& g) {
  work_.assign(passes_.size(), WorkCounters{});
  for (auto* inst : instrumentations_) inst->run_before_pipeline(g);
  for (size_t i = 0; i < passes_.size(); ++i) {
    Pass& pass = *passes_[i];
    const int index = static_cast<int>(i);
    bool run_it = true;
    for (auto* inst : instrumentations_)
      if (!inst->run_before_pass(pass, index, g)) {
        run_it = false;
        break;
      }
    if (!run_it) {
      for (auto* inst : instrumentations_) inst->run_skipped_pass(pass, index);
      continue;
    }
    WorkScope scope(work_[i]);
    Status st = pass.run(g);
    if (st.is_ok() && pass.runs_on_subgraphs()) st = run_on_subgraphs(pass, g);
    if (!st.is_ok()) {
      for (auto* inst : instrumentations_) inst->run_after_pass_failed(pass, index, st);
      return st.prepend("pass '" + pass.argument() + "': ");
    }
    for (auto it = instrumentations_.rbegin(); it != instrumentations_.rend(); ++it) {
      Status after = (*it)->run_after_pass(pass, index, g);
      if (!after.is_ok()) return after.prepend("after pass '" + pass.argument() + "': ");
    }
  }
  return Status::ok();
}

}  // namespace ms::compiler
