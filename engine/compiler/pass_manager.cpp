#include "engine/compiler/pass_manager.h"

namespace ms::compiler {

Status PassManager::run(ir::Graph& g) {
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
    Status st = pass.run(g);
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
