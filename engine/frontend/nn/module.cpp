#include "engine/frontend/nn/module.h"

#include <algorithm>
#include <cstring>

#include "engine/frontend/nn/autocast.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/tape.h"
#include "engine/frontend/nn/trace.h"

namespace ms::nn {

Module::~Module() = default;

namespace {
std::string describe(const Module& m) {
  const std::string path = current_path();
  return "module '" + (path.empty() ? m.name() : path) + "' (" + m.type_name() + ")";
}
}  // namespace

Var Module::forward(const Var& x) {
  if (in_forward_default_)
    return Var::failed(internal_error(describe(*this) + " defines neither forward nor forward_n"));
  in_forward_default_ = true;
  Vars r = forward_n({x});
  in_forward_default_ = false;
  if (r.empty()) return Var::failed(invalid_argument(describe(*this) + " returned no outputs"));
  return r[0];
}

Vars Module::forward_n(const Vars& xs) {
  if (in_forward_default_)
    return {Var::failed(internal_error(describe(*this) + " defines neither forward nor forward_n"))};
  if (xs.size() != 1)
    return {Var::failed(invalid_argument(describe(*this) + " takes 1 input, got " + std::to_string(xs.size())))};
  in_forward_default_ = true;
  Var r = forward(xs[0]);
  in_forward_default_ = false;
  return {r};
}

Var Module::operator()(const Var& x) {
  Vars r = call({x});
  return r.empty() ? Var::failed(invalid_argument(describe(*this) + " returned no outputs")) : r[0];
}

Vars Module::operator()(const Vars& xs) { return call(xs); }

Vars Module::call(const Vars& xs) {
  // Under value_and_grad (a tape recording outside a trace) modules run op by op so the tape sees
  // every op; a compiled call would hide them from the backward.
  if (!active_trace() && !autodiff::active_tape() && (jit_ || get_mode() == Mode::Graph)) {
    Status st = first_error(xs);
    if (!st.is_ok()) return {Var::failed(st)};
    const JitConfig cfg = jit_ ? *jit_ : JitConfig{};
    if (!cache_) {
      cache_ = std::make_unique<GraphCache>(
          [this](const Vars& in) {
            ScopeGuard scope(name_, children_.empty());
            AutocastModuleScope amp(type_name());
            return amp.finish(forward_n(in));
          },
          cfg, name_.empty() ? type_name() : name_);
      cache_->set_module(this);
    } else {
      cache_->set_config(cfg);
    }
    return cache_->run(xs);
  }
  ScopeGuard scope(name_, children_.empty());
  AutocastModuleScope amp(type_name());  // mixed precision (autocast.h)
  return amp.finish(forward_n(xs));
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(const std::string& prefix) const {
  std::vector<std::pair<std::string, Tensor>> out;
  const std::string p = prefix.empty() ? "" : prefix + ".";
  for (const auto& [n, t] : params_) out.emplace_back(p + n, t);
  for (const auto& [n, c] : children_) {
    auto sub = c->named_parameters(p + n);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::set_jit(const JitConfig& config) { jit_ = std::make_unique<JitConfig>(config); }
void Module::clear_jit() { jit_.reset(); }

namespace {
thread_local const std::unordered_map<const void*, Var>* t_binding = nullptr;
thread_local BufferSink* t_sink = nullptr;
}  // namespace

ParameterBinding::ParameterBinding(std::unordered_map<const void*, Var> bound)
    : bound_(std::move(bound)), saved_(t_binding) {
  t_binding = &bound_;
}
ParameterBinding::~ParameterBinding() { t_binding = saved_; }

BufferSink::BufferSink() : saved_(t_sink) { t_sink = this; }
BufferSink::~BufferSink() { t_sink = saved_; }

std::vector<Module::Slot> Module::parameter_slots(const std::string& prefix) {
  std::vector<Slot> out;
  const std::string p = prefix.empty() ? "" : prefix + ".";
  for (auto& [n, t] : params_) {
    const bool buf = std::find(buffers_.begin(), buffers_.end(), n) != buffers_.end();
    out.push_back({p + n, &t, buf});
  }
  for (auto& [n, c] : children_) {
    auto sub = c->parameter_slots(p + n);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

void Module::set_training(bool training) {
  training_ = training;
  for (auto& [n, c] : children_) c->set_training(training);
}

void Module::register_buffer(std::string name, Tensor t) {
  buffers_.push_back(name);
  register_parameter(std::move(name), std::move(t));
}

void Module::set_module(const std::string& name, std::shared_ptr<Module> m) {
  for (auto& [n, c] : children_)
    if (n == name) {
      m->name_ = name;
      c = std::move(m);
      return;
    }
  register_module(name, std::move(m));
}

void Module::set_parameter(const std::string& name, Tensor t, bool buffer) {
  std::erase(buffers_, name);
  if (buffer) buffers_.push_back(name);
  for (auto& [n, p] : params_)
    if (n == name) {
      p = std::move(t);
      return;
    }
  register_parameter(name, std::move(t));
}

void Module::update_buffer(const std::string& name, const Var& value) {
  Tensor* t = param_tensor(name);
  if (!t || !value.ok()) return;
  if (t_sink) {
    t_sink->add(t, value);
    return;
  }
  // Eager: write in place (same buffer, so Vars holding the buffer see the new statistics).
  if (value.is_concrete() && value.dtype() == t->dtype() && value.shape() == t->shape() && t->nbytes())
    std::memmove(t->raw(), value.impl()->value.raw(), t->nbytes());
}

Var Module::param(const std::string& name) const {
  for (const auto& [n, t] : params_)
    if (n == name) {
      if (t_binding && t.defined()) {
        auto it = t_binding->find(t.raw());
        if (it != t_binding->end()) return it->second;
      }
      // Traced through a jitted function (not a module call), the parameter is named here, by
      // the module path it is used under.
      if (TraceState* tr = active_trace()) {
        const std::string path = current_path();
        tr->register_parameter(t, path.empty() ? n : path + "." + n);
      }
      return Var(t);
    }
  return Var::failed(internal_error(describe(*this) + " has no parameter '" + name + "'"));
}

Tensor* Module::param_tensor(const std::string& name) {
  for (auto& [n, t] : params_)
    if (n == name) return &t;
  return nullptr;
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> mods) {
  for (auto& m : mods) add(std::move(m));
}

Sequential& Sequential::add(std::shared_ptr<Module> m) {
  register_module(std::to_string(children().size()), std::move(m));
  return *this;
}

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (const auto& [n, c] : children()) {
    y = (*c)(y);
    if (!y.ok()) break;
  }
  return y;
}

ModuleList& ModuleList::push_back(std::shared_ptr<Module> m) {
  register_module(std::to_string(children().size()), std::move(m));
  return *this;
}

}  // namespace ms::nn
