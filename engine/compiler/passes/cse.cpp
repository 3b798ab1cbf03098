// Common-subexpression elimination: two nodes with the same op, attributes and inputs compute the
// same values; readers of the second read the first. Inputs that are small constants of equal
// contents count as the same input. Random ops and nodes with subgraphs are left.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"

namespace ms::compiler {
namespace {

bool nondeterministic(const ir::Node& n) {
  return n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" || n.op_type == "Multinomial" ||
         (n.op_type == "Dropout" && n.outputs.size() > 1);
}

// op, domain, inputs and attributes; a one-node dump covers every attribute kind. A node without
// attributes (most of them) gets a plain key, which no dump starts with.
// Small constants by content: each name -> the first initializer with the same dtype, shape and
// bytes, so nodes reading equal constants under different names (an exporter's per-layer copies of
// the same axes or bounds) count as the same.
std::unordered_map<std::string, std::string> equal_constants(const ir::Graph& g) {
  std::unordered_map<std::string, std::string> canon, first;
  std::set<std::string> inputs(g.inputs.begin(), g.inputs.end());
  std::vector<std::string> names;
  for (const auto& [name, v] : g.values())
    if (v.constant && v.constant->is_tensor() && v.constant->defined() && v.constant->numel() <= 64 &&
        v.constant->dtype() != DType::String && !inputs.count(name))
      names.push_back(name);
  std::sort(names.begin(), names.end());  // the same canonical names whatever the map's order
  for (const auto& name : names) {
    const Tensor& t = *g.value(name)->constant;
    std::string key = std::string(dtype_name(t.dtype())) + shape_to_string(t.shape());
    key.append(static_cast<const char*>(t.raw()), t.nbytes());
    canon[name] = first.emplace(key, name).first->second;
  }
  return canon;
}

std::string key_of(const ir::Node& n, const std::unordered_map<std::string, std::string>& canon) {
  auto input = [&](const std::string& in) -> const std::string& {
    auto it = canon.find(in);
    return it == canon.end() ? in : it->second;
  };
  if (n.attrs.empty()) {
    std::string key = "\x01" + n.domain + "\x02" + n.op_type;
    for (const auto& in : n.inputs) key.append("\x02").append(input(in));
    key += "\x03";
    for (const auto& o : n.outputs) key += o.empty() ? '0' : '1';
    return key;
  }
  ir::Graph g;
  ir::Node copy = n;
  copy.id = ir::NodeId{1};
  copy.origins = {copy.id};
  copy.name.clear();
  for (auto& in : copy.inputs) in = input(in);
  for (size_t i = 0; i < copy.outputs.size(); ++i) copy.outputs[i] = copy.outputs[i].empty() ? "" : std::to_string(i);
  g.add_node(copy);
  std::string key = ir::dump_text(g);
  // The dump shows a tensor attribute's type only: its bytes make the key exact.
  for (const auto& [k, a] : n.attrs)
    if (const Tensor* t = a.get_if<Tensor>(); t && t->defined() && t->dtype() != DType::String)
      key.append(static_cast<const char*>(t->raw()), t->nbytes());
    else if (t)
      key.append("<opaque>").append(std::to_string(reinterpret_cast<uintptr_t>(t->defined() ? t->raw() : nullptr)));
  return key;
}

class CSE final : public Pass {
 public:
  std::string name() const override { return "CSE"; }
  std::string argument() const override { return "cse"; }
  std::string description() const override { return "merge nodes with the same op, attributes and inputs"; }
  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    const Uses uses = compute_uses(g);
    std::unordered_map<std::string, size_t> seen;
    const auto canon = equal_constants(g);
    // Outputs of merged nodes -> the first node's: each node's inputs are renamed when the scan reaches
    // it (readers come after their producer), so one scan does what renaming every use at once did.
    std::unordered_map<std::string, std::string> alias;
    std::set<uint64_t> dead;
    bool spent = false;  // a merge was refused: the scan only renames from here on
    work().nodes_visited += g.nodes().size();
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (!alias.empty())
        for (auto& in : g.nodes()[i].inputs)
          if (auto a = alias.find(in); a != alias.end()) in = a->second;
      const ir::Node& n = g.nodes()[i];
      if (spent || n.has_subgraph() || nondeterministic(n) || n.outputs.empty()) continue;
      bool renamable = true;
      for (const auto& o : n.outputs)
        if (!o.empty() && !uses.only_plain(o)) renamable = false;
      ++work().patterns_tried;
      const std::string key = key_of(n, canon);
      auto [it, inserted] = seen.emplace(key, i);
      if (inserted || !renamable) continue;
      const ir::Node& first = g.nodes()[it->second];
      bool ok = true;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (!n.outputs[o].empty() && first.outputs[o].empty()) ok = false;
      if (!ok) continue;
      if (!take_rewrite()) {
        spent = true;
        continue;
      }
      const std::vector<std::string> outs = n.outputs, firsts = first.outputs;
      dead.insert(n.id.value);
      for (size_t o = 0; o < outs.size(); ++o)
        if (!outs[o].empty()) alias[outs[o]] = firsts[o];
    }
    erase_nodes(g, dead);
    return Status::ok();
  }
};

}  // namespace

PassPtr make_cse_pass() { return std::make_unique<CSE>(); }

}  // namespace ms::compiler
