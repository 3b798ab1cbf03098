#include "engine/frontend/nn/context.h"
#include "engine/backends/select.h"

#include <cstdio>
#include <memory>
#include <mutex>

namespace ms::nn {
namespace {

// The context and the backends, under one lock.
struct State {
  std::mutex mu;
  Context ctx;
  AutoParallelContext parallel;
  std::unique_ptr<runtime::Backend> backend;
  std::vector<std::unique_ptr<runtime::Backend>> retired;  // replaced backends, alive until exit
};

State& state() {
  static State s;
  return s;
}

thread_local std::vector<const std::string*> t_scope;
thread_local std::vector<bool> t_leaf;

}  // namespace

void set_context(Mode mode) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().ctx.mode = mode;
}

void set_context(const Context& c) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  const bool same_backend = c.device == st.ctx.device && c.threads == st.ctx.threads;
  st.ctx = c;
  if (!same_backend && st.backend) st.retired.push_back(std::move(st.backend));
}

Context get_context() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().ctx;
}

Mode get_mode() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().ctx.mode;
}

compiler::AmpLevel get_amp() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().ctx.amp;
}

void set_auto_parallel_context(const AutoParallelContext& c) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().parallel = c;
}

AutoParallelContext get_auto_parallel_context() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().parallel;
}

void reset_auto_parallel_context() { set_auto_parallel_context(AutoParallelContext{}); }

const char* mode_name(Mode m) { return m == Mode::PyNative ? "PyNative" : "Graph"; }

runtime::Backend& backend() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.backend) {
    auto choice = backends::create_backend(st.ctx.device, st.ctx.threads);
    if (choice && choice->backend) {
      if (!choice->note.empty()) std::fprintf(stderr, "note: %s\n", choice->note.c_str());
      st.backend = std::move(choice->backend);
    } else {
      st.backend = backends::create_cpu_backend(st.ctx.threads);
    }
  }
  return *st.backend;
}

ScopeGuard::ScopeGuard(const std::string& name, bool leaf) : pushed_(!name.empty()) {
  if (pushed_) {
    t_scope.push_back(&name);
    t_leaf.push_back(leaf);
  }
}
ScopeGuard::~ScopeGuard() {
  if (pushed_) {
    t_scope.pop_back();
    t_leaf.pop_back();
  }
}

bool current_scope_is_leaf() { return !t_leaf.empty() && t_leaf.back() && t_leaf.size() == t_scope.size(); }

std::string current_path() {
  std::string p;
  for (const std::string* s : t_scope) {
    if (!p.empty()) p += '.';
    p += *s;
  }
  return p;
}

std::vector<const std::string*> swap_scope(std::vector<const std::string*> scope) {
  std::swap(scope, t_scope);
  t_leaf.assign(t_scope.size(), false);
  return scope;
}

}  // namespace ms::nn
