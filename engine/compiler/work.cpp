#include "engine/compiler/work.h"

namespace ms::compiler {
namespace {

thread_local WorkScope* t_innermost = nullptr;
thread_local WorkCounters* t_counters = nullptr;
thread_local WorkCounters t_sink;
thread_local RewriteBudget* t_budget = nullptr;

}  // namespace

std::string WorkCounters::to_json() const {
  return "{\"nodes_visited\": " + std::to_string(nodes_visited) +
         ", \"patterns_tried\": " + std::to_string(patterns_tried) +
         ", \"use_list_rebuilds\": " + std::to_string(use_list_rebuilds) +
         ", \"snapshot_copies\": " + std::to_string(snapshot_copies) +
         ", \"planner_steps\": " + std::to_string(planner_steps) + ", \"rewrites\": " + std::to_string(rewrites) +
         ", \"total\": " + std::to_string(total()) + "}";
}

WorkCounters& work() { return t_counters ? *t_counters : t_sink; }

WorkScope::WorkScope(WorkCounters& counters) : counters_(counters), start_(counters), outer_(t_innermost) {
  t_innermost = this;
  t_counters = &counters_;
}

WorkScope::~WorkScope() {
  t_innermost = outer_;
  t_counters = outer_ ? &outer_->counters_ : nullptr;
  if (!outer_) return;
  WorkCounters& o = outer_->counters_;
  o.nodes_visited += counters_.nodes_visited - start_.nodes_visited;
  o.patterns_tried += counters_.patterns_tried - start_.patterns_tried;
  o.use_list_rebuilds += counters_.use_list_rebuilds - start_.use_list_rebuilds;
  o.snapshot_copies += counters_.snapshot_copies - start_.snapshot_copies;
  o.planner_steps += counters_.planner_steps - start_.planner_steps;
  o.rewrites += counters_.rewrites - start_.rewrites;
}

bool take_rewrite() {
  if (t_budget) {
    if (t_budget->left_ <= 0) {
      ++t_budget->refused_;
      return false;
    }
    --t_budget->left_;
  }
  ++work().rewrites;
  return true;
}

RewriteBudget::RewriteBudget(int64_t budget) : left_(budget), outer_(t_budget) { t_budget = this; }
RewriteBudget::~RewriteBudget() { t_budget = outer_; }

}  // namespace ms::compiler
