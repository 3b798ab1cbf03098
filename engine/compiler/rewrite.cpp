#include "engine/compiler/rewrite.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "engine/compiler/work.h"
#include "engine/runtime/program.h"

namespace ms::compiler {

Uses compute_uses(const ir::Graph& g) {
  ++work().use_list_rebuilds;
  work().nodes_visited += g.nodes().size();
  Uses u;
  for (const auto& n : g.nodes()) {
    for (const auto& in : n.inputs)
      if (!in.empty()) ++u.count[in];
    for (const auto& name : runtime::implicit_inputs(n)) {
      ++u.count[name];
      u.implicit.insert(name);
    }
  }
  for (const auto& o : g.outputs) {
    ++u.count[o];
    u.graph_outputs.insert(o);
  }
  return u;
}

std::unordered_map<std::string, size_t> producer_index(const ir::Graph& g) {
  ++work().use_list_rebuilds;
  work().nodes_visited += g.nodes().size();
  std::unordered_map<std::string, size_t> p;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const auto& o : g.nodes()[i].outputs)
      if (!o.empty()) p[o] = i;
  return p;
}

void replace_uses(ir::Graph& g, const std::string& from, const std::string& to) {
  work().nodes_visited += g.nodes().size();
  for (auto& n : g.nodes())
    for (auto& in : n.inputs)
      if (in == from) in = to;
}

namespace {

// Drops the values in `dead` (outputs of removed nodes) that no remaining node defines.
void erase_orphan_values(ir::Graph& g, const std::vector<std::string>& dead) {
  if (dead.empty()) return;
  work().nodes_visited += g.nodes().size();
  std::unordered_set<std::string> orphan(dead.begin(), dead.end());
  for (const auto& n : g.nodes())
    for (const auto& o : n.outputs)
      if (!orphan.empty()) orphan.erase(o);
  for (const auto& d : dead) {
    if (!orphan.count(d)) continue;
    const ir::Value* v = g.value(d);
    if (v && !v->constant) g.erase_value(d);
  }
}

}  // namespace

void erase_nodes(ir::Graph& g, const std::set<uint64_t>& ids) {
  if (ids.empty()) return;
  work().nodes_visited += g.nodes().size();
  std::vector<std::string> dead;
  auto& nodes = g.nodes();
  for (const auto& n : nodes)
    if (ids.count(n.id.value))
      for (const auto& o : n.outputs)
        if (!o.empty()) dead.push_back(o);
  nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [&](const ir::Node& n) { return ids.count(n.id.value) != 0; }),
              nodes.end());
  erase_orphan_values(g, dead);
}

ir::Node new_node(ir::Graph& g, std::string op_type, std::string domain, std::vector<std::string> inputs,
                  std::vector<std::string> outputs, const std::vector<const ir::Node*>& replaced) {
  ir::Node n;
  n.id = g.ids()->next();
  n.op_type = std::move(op_type);
  n.domain = std::move(domain);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  std::set<uint64_t> origins;
  for (const ir::Node* r : replaced)
    for (const auto& o : r->origins) origins.insert(o.value);
  for (uint64_t o : origins) n.origins.push_back(ir::NodeId{o});
  if (n.origins.empty()) n.origins.push_back(n.id);
  if (!replaced.empty()) n.name = replaced.front()->name;
  return n;
}

void insert_node(ir::Graph& g, size_t pos, ir::Node n) {
  for (const auto& out : n.outputs) {
    if (out.empty()) continue;
    ir::Value* v = g.value(out);
    if (v)
      v->producer = n.id;
    else
      g.add_value(ir::Value{out, {}, n.id, std::nullopt});
  }
  auto& nodes = g.nodes();
  nodes.insert(nodes.begin() + static_cast<std::ptrdiff_t>(std::min(pos, nodes.size())), std::move(n));
}

void replace_nodes(ir::Graph& g, const std::set<uint64_t>& ids, ir::Node n, Place place) {
  std::vector<NodeGroup> one(1);
  one[0].ids = ids;
  one[0].node = std::move(n);
  one[0].place = place;
  replace_node_groups(g, std::move(one));
}

bool bypass_node(ir::Graph& g, size_t index, const std::string& in, const std::string& out, const Uses& uses) {
  auto& nodes = g.nodes();
  if (uses.implicit.count(out)) return false;
  if (!uses.graph_outputs.count(out)) {
    replace_uses(g, out, in);
    const uint64_t id = nodes[index].id.value;
    erase_nodes(g, {id});
    return true;
  }
  // `out` is a graph output: the producer of `in` may take its name when nothing else reads `in`.
  if (uses.of(in) != 1 || !uses.only_plain(in)) return false;
  auto prod = producer_index(g);
  auto it = prod.find(in);
  if (it == prod.end()) return false;
  const ir::Value* vin = g.value(in);
  const ir::ValueType type = vin ? vin->type : ir::ValueType{};
  const uint64_t id = nodes[index].id.value;
  ir::Node& p = nodes[it->second];
  for (auto& o : p.outputs)
    if (o == in) o = out;
  erase_nodes(g, {id});
  g.erase_value(in);
  ir::Value* vout = g.value(out);
  if (!vout) vout = &g.add_value(ir::Value{out, type, {}, std::nullopt});
  vout->producer = p.id;  // `p` stays valid: it precedes the erased node
  if (vout->type.dtype == DType::Undefined) vout->type = type;
  return true;
}

std::string fresh_name(const ir::Graph& g, const std::string& base) {
  if (!g.has_value(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!g.has_value(n)) return n;
  }
}

const Tensor* constant_of(const ir::Graph& g, const std::string& name) {
  if (name.empty()) return nullptr;
  // An initializer that is also a graph input is only a default: the caller may override it.
  for (const auto& in : g.inputs)
    if (in == name) return nullptr;
  const ir::Value* v = g.value(name);
  return v && v->constant && v->constant->defined() ? &*v->constant : nullptr;
}

bool all_equal(const Tensor& t, double v) {
  if (t.dtype() == DType::String || t.dtype() == DType::Undefined) return false;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.at_double(i) != v) return false;
  return true;
}

void replace_node_groups(ir::Graph& g, std::vector<NodeGroup> groups) {
  if (groups.empty()) return;
  work().nodes_visited += 2 * g.nodes().size();
  std::unordered_map<uint64_t, size_t> group_of;
  for (size_t k = 0; k < groups.size(); ++k)
    for (uint64_t id : groups[k].ids) group_of.emplace(id, k);
  // Where each group's node goes: in place of its first or its last member in list order.
  std::vector<uint64_t> slot(groups.size(), 0);
  std::vector<char> seen(groups.size(), 0);
  for (const auto& n : g.nodes()) {
    auto it = group_of.find(n.id.value);
    if (it == group_of.end()) continue;
    if (groups[it->second].place == Place::Last || !seen[it->second]) slot[it->second] = n.id.value;
    seen[it->second] = 1;
  }
  std::vector<std::string> dead;
  std::set<uint64_t> added;
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes().size());
  for (auto& n : g.nodes()) {
    auto it = group_of.find(n.id.value);
    if (it == group_of.end()) {
      kept.push_back(std::move(n));
      continue;
    }
    for (const auto& o : n.outputs)
      if (!o.empty()) dead.push_back(o);
    if (slot[it->second] == n.id.value) {
      added.insert(groups[it->second].node.id.value);
      kept.push_back(std::move(groups[it->second].node));
    }
  }
  g.nodes() = std::move(kept);
  erase_orphan_values(g, dead);
  // The new nodes produce their outputs (values the replaced nodes defined keep their types).
  for (const auto& n : g.nodes()) {
    if (!added.count(n.id.value)) continue;
    for (const auto& out : n.outputs) {
      if (out.empty()) continue;
      if (ir::Value* v = g.value(out))
        v->producer = n.id;
      else
        g.add_value(ir::Value{out, {}, n.id, std::nullopt});
    }
  }
}

bool clip_bounds(const ir::Graph& g, const ir::Node& n, DType dt, float& lo, float& hi) {
  constexpr float kNoBound = std::numeric_limits<float>::max();
  lo = -kNoBound;
  hi = kNoBound;
  if (g.opset() < 11) {
    lo = n.attr_float("min", -kNoBound);
    hi = n.attr_float("max", kNoBound);
  }
  for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
    if (n.inputs[i].empty()) continue;
    const Tensor* t = constant_of(g, n.inputs[i]);
    if (!t || t->numel() != 1 || t->dtype() != dt) return false;
    (i == 1 ? lo : hi) = static_cast<float>(t->at_double(0));
  }
  return true;
}

bool reduce_axes(const ir::Graph& g, const ir::Node& r, size_t rank, std::vector<int64_t>& axes) {
  axes.clear();
  if (r.inputs.size() > 1 && !r.inputs[1].empty()) {
    const Tensor* t = constant_of(g, r.inputs[1]);
    if (!t || t->rank() > 1) return false;
    for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(static_cast<int64_t>(t->at_double(i)));
  } else if (r.attrs.count("axes")) {
    axes = r.attr_ints("axes");
  }
  if (axes.empty()) {
    if (r.attr_int("noop_with_empty_axes", 0) != 0) return false;
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  for (auto& a : axes) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return false;
  }
  std::sort(axes.begin(), axes.end());
  return std::adjacent_find(axes.begin(), axes.end()) == axes.end();
}

}  // namespace ms::compiler
