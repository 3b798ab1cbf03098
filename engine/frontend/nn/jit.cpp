#include "engine/frontend/nn/jit.h"
#include "engine/compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/module.h"
#include "engine/frontend/nn/trace.h"
#include "engine/runtime/program.h"

namespace ms::nn {
namespace {

Vars failed1(Status st) { return {Var::failed(std::move(st))}; }

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "." + b;
}

Expected<ir::Graph> trace_impl(const Fn& fn, const std::vector<ir::ValueType>& types, const TraceSpec& spec,
                               Module* module, const std::string& module_path) {
  TraceState root(spec.graph_name, spec.prefix);
  if (module)
    for (const auto& [name, t] : module->named_parameters(module_path)) root.register_parameter(t, name);
  Vars outs;
  {
    TraceGuard guard(&root);
    Vars ins;
    for (size_t i = 0; i < types.size(); ++i) {
      std::string name = i < spec.input_names.size() ? spec.input_names[i]
                         : types.size() == 1         ? std::string("input")
                                                     : "input_" + std::to_string(i);
      ins.push_back(root.add_input(name, types[i]));
    }
    outs = fn(ins);
    if (!root.error().is_ok()) return root.error();
    MS_RETURN_IF_ERROR(first_error(outs));
    if (outs.empty()) return invalid_argument("traced function '" + spec.graph_name + "' returned no outputs");
    MS_RETURN_IF_ERROR(add_graph_outputs(root, outs));
    if (!root.error().is_ok()) return root.error();
  }
  ir::Graph g = std::move(root.graph);
  runtime::link_subgraph_parents(g);
  Status v = ir::verify(g);
  if (!v.is_ok()) return v.prepend("traced graph '" + spec.graph_name + "': ");
  return g;
}

std::string signature_key(const Vars& xs) {
  std::string k;
  for (const Var& x : xs) {
    k += dtype_name(x.dtype());
    k += shape_to_string(x.shape());
    k += ';';
  }
  return k;
}

}  // namespace

ir::ValueType static_type(DType dtype, const Shape& shape) {
  ir::ValueType t;
  t.dtype = dtype;
  t.dims = shape;
  t.dim_params.assign(shape.size(), "");
  return t;
}

Expected<ir::Graph> trace_function(const Fn& fn, const std::vector<ir::ValueType>& inputs, const TraceSpec& spec) {
  return trace_impl(fn, inputs, spec, nullptr, "");
}

Expected<ir::Graph> trace_module(Module& m, const std::vector<ir::ValueType>& inputs, const TraceSpec& spec) {
  // The module's own name is part of the path of its nodes, as when it is called from a parent.
  const std::string path = join_path(spec.prefix, m.name());
  TraceSpec s = spec;
  if (s.graph_name == "main") s.graph_name = m.name().empty() ? m.type_name() : m.name();
  auto saved = swap_scope({});
  const std::string prefix_copy = spec.prefix;
  std::vector<std::string> parts;
  // Rebuild the scope from the prefix so node names carry it.
  for (size_t a = 0; a < prefix_copy.size();) {
    size_t b = prefix_copy.find('.', a);
    if (b == std::string::npos) b = prefix_copy.size();
    parts.push_back(prefix_copy.substr(a, b - a));
    a = b + 1;
  }
  std::vector<std::unique_ptr<ScopeGuard>> guards;
  for (const auto& p : parts) guards.push_back(std::make_unique<ScopeGuard>(p));
  auto g = trace_impl(
      [&m](const Vars& in) {
        ScopeGuard scope(m.name(), m.children().empty());
        return m.forward_n(in);
      },
      inputs, s, &m, path);
  guards.clear();
  swap_scope(std::move(saved));
  return g;
}

struct GraphCache::Entry {
  ir::Graph graph;
  std::unique_ptr<compiler::CompiledExecutor> compiled;
  std::unique_ptr<runtime::EagerExecutor> eager;
};

GraphCache::GraphCache(Fn fn, JitConfig config, std::string graph_name)
    : fn_(std::move(fn)), config_(config), name_(std::move(graph_name)) {}
GraphCache::~GraphCache() = default;

void GraphCache::set_config(const JitConfig& c) {
  if (c.jit_level == config_.jit_level && c.exec_mode == config_.exec_mode) return;
  config_ = c;
  entries_.clear();
  last_ = nullptr;
}

size_t GraphCache::size() const { return entries_.size(); }
const ir::Graph* GraphCache::last_graph() const { return last_ ? &last_->graph : nullptr; }

Vars GraphCache::run(const Vars& inputs) {
  for (const Var& x : inputs) {
    if (!x.ok()) return failed1(x.status());
    if (!x.is_concrete())
      return failed1(invalid_argument("jit '" + name_ + "': inputs must be concrete tensors outside a trace"));
  }
  const std::string key = signature_key(inputs);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<ir::ValueType> types;
    for (const Var& x : inputs) types.push_back(static_type(x.dtype(), x.shape()));
    TraceSpec spec;
    spec.graph_name = name_;
    spec.prefix = current_path();
    const std::string mpath = module_ ? join_path(spec.prefix, module_->name()) : "";
    auto g = trace_impl(fn_, types, spec, module_, mpath);
    if (!g) return failed1(std::move(g).take_status());
    ++traces_;
    auto entry = std::make_unique<Entry>();
    entry->graph = std::move(*g);
    if (config_.exec_mode == runtime::ExecMode::Graph) {
      std::map<std::string, ir::ValueType> sig;
      for (size_t i = 0; i < types.size(); ++i) sig[entry->graph.inputs[i]] = types[i];
      compiler::CompileOptions opts;
      opts.jit_level = config_.jit_level;
      auto ex = compiler::compile_executor(entry->graph, backend(), sig, opts);
      if (!ex) return failed1(Status(ex.status()).prepend("jit '" + name_ + "': compile: "));
      entry->compiled = std::move(*ex);
    } else {
      entry->eager = std::make_unique<runtime::EagerExecutor>(entry->graph, backend());
    }
    last_compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    it = entries_.emplace(key, std::move(entry)).first;
  }
  Entry& e = *it->second;
  last_ = &e;
  runtime::TensorMap feed;
  for (size_t i = 0; i < inputs.size(); ++i) feed[e.graph.inputs[i]] = inputs[i].impl()->value;
  auto outs = e.compiled ? e.compiled->run(feed) : e.eager->run(feed);
  if (!outs) return failed1(Status(outs.status()).prepend("jit '" + name_ + "': "));
  Vars result;
  for (auto& t : *outs) result.emplace_back(std::move(t));
  return result;
}

JitFunction::JitFunction(Fn fn, JitConfig config, std::string name)
    : cache_(std::make_shared<GraphCache>(std::move(fn), config, std::move(name))) {}

Vars JitFunction::operator()(const Vars& inputs) {
  // Inside another trace a jitted function is simply traced through (one graph).
  if (active_trace()) return cache_->run_inline(inputs);
  return cache_->run(inputs);
}

JitFunction jit(Fn fn, JitConfig config) { return JitFunction(std::move(fn), config); }

Module& jit(Module& m, JitConfig config) {
  m.set_jit(config);
  return m;
}

}  // namespace ms::nn
