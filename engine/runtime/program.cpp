#include "engine/runtime/program.h"

#include <algorithm>
#include <set>

namespace ms::runtime {
namespace {

void collect_free_names(const ir::Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, v] : g.values())
    if (v.is_initializer()) defined.insert(name);
  for (const auto& n : g.nodes()) {
    for (const auto& in : n.inputs)
      if (!in.empty() && !defined.count(in)) out.insert(in);
    for (const auto& name : implicit_inputs(n))
      if (!defined.count(name)) out.insert(name);
    for (const auto& o : n.outputs) defined.insert(o);
  }
  for (const auto& o : g.outputs)
    if (!defined.count(o)) out.insert(o);
}

template <class F> void for_each_subgraph(const ir::Node& n, F&& f) {
  for (const auto& [key, a] : n.attrs) {
    if (auto* s = a.template get_if<ir::Attribute::GraphPtr>()) {
      if (*s) f(**s);
    } else if (auto* ss = a.template get_if<std::vector<ir::Attribute::GraphPtr>>()) {
      for (const auto& s : *ss)
        if (s) f(*s);
    }
  }
}

}  // namespace

std::vector<std::string> implicit_inputs(const ir::Node& node) {
  std::set<std::string> names;
  for_each_subgraph(node, [&](const ir::Graph& sub) { collect_free_names(sub, names); });
  return {names.begin(), names.end()};
}

bool is_view_op(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity";
}

void link_subgraph_parents(ir::Graph& g) {
  for (auto& n : g.nodes())
    for (auto& [key, a] : n.attrs) {
      if (auto* s = a.get_if<ir::Attribute::GraphPtr>()) {
        if (*s) {
          (*s)->set_parent(&g);
          link_subgraph_parents(**s);
        }
      } else if (auto* ss = a.get_if<std::vector<ir::Attribute::GraphPtr>>()) {
        for (const auto& s : *ss)
          if (s) {
            s->set_parent(&g);
            link_subgraph_parents(*s);
          }
      }
    }
}

namespace {

// Numbers values into slots while a program is built; `bound` marks the slots a step may read
// without a producer (graph inputs, initializers, names of enclosing scopes).
struct SlotTable {
  Program& p;
  std::vector<char> bound;
  int slot(const std::string& name) {
    auto it = p.slot_of.find(name);
    if (it != p.slot_of.end()) return it->second;
    const int id = static_cast<int>(p.slot_names.size());
    p.slot_names.push_back(name);
    p.slot_of.emplace(name, id);
    p.producer_step.push_back(-1);
    p.last_use.push_back(-1);
    bound.push_back(0);
    return id;
  }
  int bind(const std::string& name) {
    const int id = slot(name);
    bound[static_cast<size_t>(id)] = 1;
    return id;
  }
};

Status bind_step_inputs(SlotTable& t, const ir::Node& n, Step& s, int step_index) {
  Program& p = t.p;
  for (const auto& in : n.inputs) {
    if (in.empty()) {
      s.inputs.push_back(-1);
      continue;
    }
    auto it = p.slot_of.find(in);
    if (it == p.slot_of.end() ||
        (p.producer_step[static_cast<size_t>(it->second)] < 0 && !t.bound[static_cast<size_t>(it->second)]))
      return invalid_model(n.label() + ": input '" + in + "' is not defined before use").with_node(n.id.value);
    s.inputs.push_back(it->second);
    p.last_use[static_cast<size_t>(it->second)] = step_index;
  }
  for (const auto& name : implicit_inputs(n)) {
    auto it = p.slot_of.find(name);
    if (it == p.slot_of.end()) continue;  // defined inside an enclosing-enclosing scope chain only
    s.implicit.push_back(it->second);
    p.last_use[static_cast<size_t>(it->second)] = step_index;
  }
  return Status::ok();
}

Status bind_step_outputs(SlotTable& t, const ir::Node& n, Step& s, int step_index) {
  Program& p = t.p;
  for (const auto& out : n.outputs) {
    if (out.empty()) {
      s.outputs.push_back(-1);
      continue;
    }
    auto it = p.slot_of.find(out);
    if (it != p.slot_of.end() && p.producer_step[static_cast<size_t>(it->second)] >= 0)
      return invalid_model(n.label() + ": output '" + out + "' is defined twice").with_node(n.id.value);
    const int o = t.slot(out);
    p.producer_step[static_cast<size_t>(o)] = step_index;
    s.outputs.push_back(o);
  }
  return Status::ok();
}

// Release lists: a value dies after its last reader, or right after its producer when unread.
// Inputs, constants and outer values belong to the caller and are never released here.
void fill_release_lists(Program& p) {
  for (size_t v = 0; v < p.slot_names.size(); ++v) {
    const int prod = p.producer_step[v];
    if (prod < 0) continue;
    const int last = p.last_use[v];
    if (last >= static_cast<int>(p.steps.size())) continue;
    p.steps[static_cast<size_t>(std::max(last, prod))].release.push_back(static_cast<int>(v));
  }
}

}  // namespace

Expected<Program> build_program(const ir::Graph& g) {
  Program p;
  p.graph = &g;
  SlotTable t{p, {}};
  for (const auto& in : g.inputs) p.input_slots.push_back(t.bind(in));
  for (const auto& name : g.initializer_names()) {
    // An initializer that is also a graph input (old ONNX style) is an input with a default.
    if (p.slot_of.count(name)) continue;
    p.constant_slots.push_back(t.bind(name));
  }
  std::set<std::string> outer;
  collect_free_names(g, outer);
  for (const auto& name : outer) {
    if (!g.parent() || !g.parent()->resolve(name))
      return invalid_model("graph '" + g.name + "': value '" + name + "' is used but never defined");
    p.outer_slots.push_back(t.bind(name));
  }
  const auto& reg = ops::Registry::instance();
  p.steps.reserve(g.nodes().size());
  for (const auto& n : g.nodes()) {
    Step s;
    s.node = &n;
    s.schema = reg.find(n.op_type, n.domain);
    if (!s.schema) return unsupported(n.label() + ": op '" + n.op_type + "' is not supported").with_node(n.id.value);
    s.opset = g.opset(n.domain);
    s.view_op = is_view_op(n.op_type);
    const int step_index = static_cast<int>(p.steps.size());
    MS_RETURN_IF_ERROR(bind_step_inputs(t, n, s, step_index));
    MS_RETURN_IF_ERROR(bind_step_outputs(t, n, s, step_index));
    p.steps.push_back(std::move(s));
  }
  for (const auto& out : g.outputs) {
    auto it = p.slot_of.find(out);
    if (it == p.slot_of.end()) return invalid_model("graph '" + g.name + "': output '" + out + "' is never produced");
    p.output_slots.push_back(it->second);
    p.last_use[static_cast<size_t>(it->second)] = static_cast<int>(p.steps.size());
  }
  fill_release_lists(p);
  return p;
}

}  // namespace ms::runtime
