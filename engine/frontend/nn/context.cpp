#include "engine/frontend/nn/context.h"
#include "engine/backends/select.h"

#include <cstdio>
#include <memory>
#include <mutex>

namespace ms::nn {
namespace {

Context& ctx() {
  static Context c;
  return c;
}

std::mutex& backend_mutex() {
  static std::mutex m;
  return m;
}

std::unique_ptr<runtime::Backend>& backend_slot() {
  static std::unique_ptr<runtime::Backend> b;
  return b;
}

thread_local std::vector<const std::string*> t_scope;
thread_local std::vector<bool> t_leaf;

}  // namespace

void set_context(Mode mode) { ctx().mode = mode; }

void set_context(const Context& c) {
  std::lock_guard<std::mutex> lock(backend_mutex());
  const bool same_backend = c.device == ctx().device && c.threads == ctx().threads;
  ctx() = c;
  if (!same_backend) backend_slot().reset();
}

const Context& get_context() { return ctx(); }
Mode get_mode() { return ctx().mode; }
const char* mode_name(Mode m) { return m == Mode::PyNative ? "PyNative" : "Graph"; }

runtime::Backend& backend() {
  std::lock_guard<std::mutex> lock(backend_mutex());
  auto& slot = backend_slot();
  if (!slot) {
    auto choice = backends::create_backend(ctx().device, ctx().threads);
    if (choice && choice->backend) {
      if (!choice->note.empty()) std::fprintf(stderr, "note: %s\n", choice->note.c_str());
      slot = std::move(choice->backend);
    } else {
      slot = backends::create_cpu_backend(ctx().threads);
    }
  }
  return *slot;
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
