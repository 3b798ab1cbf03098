#include <unordered_set>

#include "engine/ir/graph.h"

namespace ms::ir {
namespace {

Status verify_graph(const Graph& g, std::unordered_set<uint64_t>& seen_ids) {
  std::unordered_set<std::string> defined;
  for (const auto& in : g.inputs) {
    if (!g.has_value(in)) return invalid_model("graph '" + g.name + "': input '" + in + "' has no value entry");
    if (!defined.insert(in).second) return invalid_model("graph '" + g.name + "': input '" + in + "' listed twice");
  }
  for (const auto& [name, v] : g.values())
    if (v.is_initializer()) defined.insert(name);

  auto visible = [&](const std::string& nm) {
    if (defined.count(nm)) return true;
    return g.parent() && g.parent()->resolve(nm) != nullptr;
  };

  for (const auto& n : g.nodes()) {
    if (!n.id.valid()) return invalid_model(n.label() + ": has no id");
    if (!seen_ids.insert(n.id.value).second) return invalid_model(n.label() + ": id used twice");
    if (n.op_type.empty()) return invalid_model(n.label() + ": empty op type");
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const auto& in = n.inputs[i];
      if (in.empty()) continue;
      if (!visible(in)) {
        Status s = invalid_model(n.label() + ": input " + std::to_string(i) + " '" + in +
                                 "' is not defined before use (dangling input or cycle)");
        return s.with_node(n.id.value);
      }
    }
    for (const auto& [key, a] : n.attrs) {
      std::vector<Attribute::GraphPtr> subs;
      if (auto* s = a.get_if<Attribute::GraphPtr>()) subs.push_back(*s);
      if (auto* s = a.get_if<std::vector<Attribute::GraphPtr>>()) subs = *s;
      for (const auto& sub : subs) {
        if (!sub) return invalid_model(n.label() + ": attribute '" + key + "' holds no graph");
        // Names visible to the subgraph: everything defined so far here plus enclosing scopes.
        Graph scope_view;  // lightweight scope: values defined so far
        for (const auto& d : defined)
          if (const Value* v = g.resolve(d)) scope_view.add_value(*v);
        scope_view.set_parent(g.parent());
        const Graph* old_parent = sub->parent();
        const_cast<Graph&>(*sub).set_parent(&scope_view);
        Status st = verify_graph(*sub, seen_ids);
        const_cast<Graph&>(*sub).set_parent(old_parent);
        if (!st.is_ok()) return st.prepend(n.label() + ", subgraph '" + key + "': ").with_node(n.id.value);
      }
    }
    for (const auto& out : n.outputs) {
      if (out.empty()) continue;
      if (!defined.insert(out).second)
        return invalid_model(n.label() + ": output '" + out + "' is defined more than once").with_node(n.id.value);
    }
  }
  for (const auto& out : g.outputs)
    if (!visible(out)) return invalid_model("graph '" + g.name + "': output '" + out + "' is never produced");
  return Status::ok();
}

}  // namespace

Status verify(const Graph& g) {
  std::unordered_set<uint64_t> ids;
  return verify_graph(g, ids);
}

}  // namespace ms::ir
