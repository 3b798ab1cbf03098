#include "engine/frontend/nn/trace.h"

#include <cctype>

#include <algorithm>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"
#include "engine/ops/schema.h"

namespace ms::nn {
namespace {

thread_local TraceState* t_active = nullptr;

std::string lower(const std::string& s) {
  std::string r = s;
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

TraceState* active_trace() { return t_active; }

TraceGuard::TraceGuard(TraceState* t) : saved_(t_active) { t_active = t; }
TraceGuard::~TraceGuard() { t_active = saved_; }

TraceState::TraceState(std::string name, std::string prefix) : prefix_(std::move(prefix)) {
  graph.name = std::move(name);
  graph.opsets[""] = kTraceOpset;
}

TraceState::TraceState(TraceState* parent) : graph(parent->graph.ids()), parent_(parent), root_(parent->root_) {
  graph.set_parent(&parent->graph);
  graph.opsets = root_->graph.opsets;
}

bool TraceState::encloses(const TraceState* t) const {
  for (const TraceState* p = this; p; p = p->parent_)
    if (p == t) return true;
  return false;
}

std::string TraceState::unique_name(const std::string& base) {
  auto& names = root_->names_;
  if (names.insert(base).second) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (names.insert(n).second) return n;
  }
}

void TraceState::fail(const Status& st) {
  if (root_->error_.is_ok() && !st.is_ok()) root_->error_ = st;
}

Var TraceState::add_input(const std::string& name, const ir::ValueType& type) {
  const std::string n = unique_name(name);
  ir::Value v;
  v.name = n;
  v.type = type;
  graph.add_value(std::move(v));
  graph.inputs.push_back(n);
  return Var::symbolic(this, n, type, current_path());
}

void TraceState::register_parameter(const Tensor& t, const std::string& name) {
  if (!t.defined()) return;
  root_->param_names_.emplace(t.raw(), name);  // the first name given wins
}

Expected<std::string> TraceState::input_name(const Var& v) {
  if (!v.defined()) return invalid_argument("an undefined tensor was passed to an op");
  if (!v.ok()) return v.status();
  VarImpl* impl = v.impl();
  if (impl->trace) {
    if (!encloses(impl->trace))
      return invalid_argument("symbolic tensor '" + impl->sym +
                              "' belongs to another trace (a value from a finished cond/loop branch or from "
                              "another jit call cannot be used here)");
    return impl->sym;
  }
  // A concrete tensor captured while tracing: a parameter (by its registered name) or a constant.
  TraceState* r = root_;
  const void* key = impl->value.raw();
  auto it = r->consts_.find(key);
  if (it != r->consts_.end()) {
    const ir::Value* known = r->graph.value(it->second);
    if (known && known->constant && known->constant->shape() == impl->value.shape() &&
        known->constant->dtype() == impl->value.dtype())
      return it->second;
  }
  std::string name;
  auto p = r->param_names_.find(key);
  if (p != r->param_names_.end())
    name = unique_name(p->second);
  else
    name = unique_name(r->prefix_.empty() ? "const_" + std::to_string(r->next_const_++)
                                          : r->prefix_ + ".const_" + std::to_string(r->next_const_++));
  r->graph.add_initializer(name, impl->value);
  r->consts_[key] = name;
  return name;
}

Vars TraceState::add_op(const std::string& op_type, const std::string& domain, const Vars& inputs,
                        std::map<std::string, ir::Attribute> attrs, int num_outputs) {
  const std::string path = current_path();
  ir::Node node;
  node.op_type = op_type;
  node.domain = domain;
  node.attrs = std::move(attrs);
  // A leaf module's op is named by the module path ("layer1.0.conv1"); other ops get the op
  // type under the path ("layer1.0.add").
  std::string base = path.empty() ? lower(op_type) : path;
  if (!path.empty() && (!current_scope_is_leaf() || root_->names_.count(base))) base = path + "." + lower(op_type);
  node.name = unique_name(base);
  std::vector<ir::ValueType> types;
  std::vector<const Tensor*> values;
  for (const Var& in : inputs) {
    if (!in.defined()) {  // optional input left out
      node.inputs.emplace_back();
      types.emplace_back();
      values.push_back(nullptr);
      continue;
    }
    auto name = input_name(in);
    if (!name) {
      Status st = std::move(name).take_status();
      fail(st);
      return Vars(static_cast<size_t>(num_outputs), Var::failed(st));
    }
    node.inputs.push_back(*name);
    const ir::Value* val = graph.resolve(*name);
    types.push_back(val ? val->type : ir::ValueType{});
    values.push_back(val && val->constant ? &*val->constant : nullptr);
  }
  for (int i = 0; i < num_outputs; ++i)
    node.outputs.push_back(num_outputs == 1 ? node.name : unique_name(node.name + ":" + std::to_string(i)));
  node.id = graph.ids()->next();
  ops::InferContext ictx{node, graph.opset(domain), std::move(types), std::move(values), {}};
  Status st = ops::infer_node(ictx);
  if (st.is_ok())
    for (size_t i = 0; i < ictx.outputs.size(); ++i)
      if (!ictx.outputs[i].is_static())
        st = unsupported(node.label() + ": output " + std::to_string(i) + " has no static shape (" +
                         ictx.outputs[i].to_string() + "); traced graphs need static shapes");
  if (!st.is_ok()) {
    if (!path.empty() && st.message().find(path) == std::string::npos) st.prepend("in module '" + path + "': ");
    fail(st);
    return Vars(static_cast<size_t>(num_outputs), Var::failed(st));
  }
  return add_node_typed(std::move(node), ictx.outputs);
}

Vars TraceState::add_node_typed(ir::Node node, const std::vector<ir::ValueType>& out_types) {
  const std::string path = current_path();
  ir::Node& added = graph.add_node(std::move(node));
  Vars outs;
  for (size_t i = 0; i < added.outputs.size(); ++i) {
    ir::Value* v = graph.value(added.outputs[i]);
    if (v && i < out_types.size()) v->type = out_types[i];
    outs.push_back(Var::symbolic(this, added.outputs[i], i < out_types.size() ? out_types[i] : ir::ValueType{}, path));
  }
  return outs;
}

Status add_graph_outputs(TraceState& root, Vars& outs) {
  std::set<std::string> seen;
  for (Var& o : outs) {
    const bool own = o.is_symbolic() && o.impl()->trace == &root;
    const bool is_input =
        own && std::find(root.graph.inputs.begin(), root.graph.inputs.end(), o.name()) != root.graph.inputs.end();
    if (!own || is_input || seen.count(o.name())) o = F::identity(o);
    if (!o.ok()) return o.status();
    seen.insert(o.name());
    root.graph.outputs.push_back(o.name());
  }
  return Status::ok();
}

}  // namespace ms::nn
