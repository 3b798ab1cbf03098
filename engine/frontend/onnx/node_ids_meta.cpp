// Node ids and origins travel through an ONNX file as JSON in metadata_props, so a saved and
// reloaded graph keeps its identity (snapshots and traces refer to these ids).
// Format: {"version":1,"nodes":[[id,"OpType",[origin,...]],...]} in pre-order.
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "engine/frontend/onnx/import_internal.h"

namespace ms::onnx_io::detail {
namespace {

template <class G, class N, class F> void visit(G& g, const F& f) {
  for (N& n : g.nodes()) {
    f(g, n);
    for (auto& [key, a] : n.attrs) {
      if (auto* sub = a.template get_if<ir::Attribute::GraphPtr>()) {
        if (*sub) visit<G, N>(**sub, f);
      } else if (auto* subs = a.template get_if<std::vector<ir::Attribute::GraphPtr>>()) {
        for (const auto& s : *subs)
          if (s) visit<G, N>(*s, f);
      }
    }
  }
}

}  // namespace

void for_each_node_preorder(ir::Graph& g, const std::function<void(ir::Graph&, ir::Node&)>& f) {
  visit<ir::Graph, ir::Node>(g, f);
}

void for_each_node_preorder(const ir::Graph& g, const std::function<void(const ir::Graph&, const ir::Node&)>& f) {
  visit<const ir::Graph, const ir::Node>(g, f);
}

std::string encode_node_ids(const ir::Graph& g) {
  nlohmann::json nodes = nlohmann::json::array();
  for_each_node_preorder(g, [&](const ir::Graph&, const ir::Node& n) {
    nlohmann::json origins = nlohmann::json::array();
    for (const auto& o : n.origins) origins.push_back(o.value);
    nodes.push_back(nlohmann::json::array({n.id.value, n.op_type, origins}));
  });
  nlohmann::json doc{{"version", 1}, {"nodes", nodes}};
  return doc.dump();
}

bool restore_node_ids(ir::Graph& g, const std::string& json) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array()) return false;
  const auto& list = doc["nodes"];

  struct Entry {
    uint64_t id;
    std::vector<ir::NodeId> origins;
  };
  std::vector<Entry> entries;
  std::vector<std::string> ops;
  std::unordered_set<uint64_t> seen;
  for (const auto& e : list) {
    if (!e.is_array() || e.size() != 3 || !e[0].is_number_unsigned() || !e[1].is_string() || !e[2].is_array())
      return false;
    Entry entry{e[0].get<uint64_t>(), {}};
    if (entry.id == 0 || !seen.insert(entry.id).second) return false;
    for (const auto& o : e[2]) {
      if (!o.is_number_unsigned() || o.get<uint64_t>() == 0) return false;
      entry.origins.push_back(ir::NodeId{o.get<uint64_t>()});
    }
    entries.push_back(std::move(entry));
    ops.push_back(e[1].get<std::string>());
  }

  // Match first, change nothing unless everything lines up.
  size_t count = 0;
  bool match = true;
  for_each_node_preorder(static_cast<const ir::Graph&>(g), [&](const ir::Graph&, const ir::Node& n) {
    if (count >= ops.size() || ops[count] != n.op_type) match = false;
    ++count;
  });
  if (!match || count != entries.size()) return false;

  size_t i = 0;
  uint64_t max_id = 0;
  for_each_node_preorder(g, [&](ir::Graph& owner, ir::Node& n) {
    const Entry& e = entries[i++];
    n.id = ir::NodeId{e.id};
    n.origins = e.origins.empty() ? std::vector<ir::NodeId>{n.id} : e.origins;
    for (const auto& o : n.origins) max_id = std::max(max_id, o.value);
    max_id = std::max(max_id, e.id);
    for (const auto& out : n.outputs)
      if (ir::Value* v = owner.value(out)) v->producer = n.id;
  });
  g.ids()->observe(ir::NodeId{max_id});
  return true;
}

}  // namespace ms::onnx_io::detail
