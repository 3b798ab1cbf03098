#include "engine/runtime/mode_diff.h"

#include <cmath>
#include <sstream>
#include <unordered_map>

namespace ms::runtime {

TensorDiff diff_tensors(const Tensor& a, const Tensor& b) {
  TensorDiff d;
  const int64_t n = std::min(a.numel(), b.numel());
  const bool fa = a.dtype() == DType::F32, fb = b.dtype() == DType::F32;
  auto av = [&](int64_t i) { return fa ? static_cast<double>(a.data<float>()[i]) : a.at_double(i); };
  auto bv = [&](int64_t i) { return fb ? static_cast<double>(b.data<float>()[i]) : b.at_double(i); };
  double ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = av(i), y = bv(i);
    const bool fx = std::isfinite(x), fy = std::isfinite(y);
    if (fx && fy) {
      d.max_abs = std::max(d.max_abs, std::fabs(x - y));
      ref = std::max(ref, std::fabs(y));
    } else if (fx != fy || std::isnan(x) != std::isnan(y) || (!std::isnan(x) && x != y)) {
      ++d.nonfinite_mismatches;
    }
  }
  d.max_rel = ref > 0 ? d.max_abs / ref : d.max_abs;
  return d;
}

namespace {

struct Counterpart {
  const ir::Node* node = nullptr;
  std::string value, match;
};

// The original node and value a compiled node's output stands for.
Counterpart counterpart(const ir::Node& g, size_t output, const std::unordered_map<uint64_t, size_t>& pos,
                        const ir::Graph& original, const std::unordered_map<std::string, const CapturedValue*>& ref) {
  const auto& nodes = original.nodes();
  Counterpart c;
  if (auto it = pos.find(g.id.value); it != pos.end()) {
    const ir::Node& o = nodes[it->second];
    if (output < o.outputs.size() && o.op_type == g.op_type) return {&o, o.outputs[output], "same node"};
  }
  const ir::Node* last = nullptr;
  size_t last_pos = 0;
  for (const ir::NodeId& id : g.origins) {
    auto it = pos.find(id.value);
    if (it == pos.end() || id.value == g.id.value) continue;
    if (!last || it->second > last_pos) {
      last = &nodes[it->second];
      last_pos = it->second;
    }
  }
  if (last && output < last->outputs.size() && (g.outputs.size() == 1 || g.outputs.size() == last->outputs.size()))
    return {last, last->outputs[output], "last origin"};
  if (output < g.outputs.size()) {
    if (auto it = ref.find(g.outputs[output]); it != ref.end()) {
      if (auto p = pos.find(it->second->producer.value); p != pos.end())
        return {&nodes[p->second], g.outputs[output], "same name"};
    }
  }
  return c;
}

}  // namespace

ModeDiff diff_modes(const ir::Graph& original, const std::vector<CapturedValue>& pynative, const ir::Graph& compiled,
                    const std::vector<CapturedValue>& graph, double tol) {
  ModeDiff out;
  out.tol = tol;
  std::unordered_map<uint64_t, size_t> pos;  // original node id -> index (topological)
  for (size_t i = 0; i < original.nodes().size(); ++i) pos[original.nodes()[i].id.value] = i;
  std::unordered_map<std::string, const CapturedValue*> ref;
  for (const auto& v : pynative) ref[v.name] = &v;
  std::unordered_map<uint64_t, const ir::Node*> compiled_nodes;
  for (const auto& n : compiled.nodes()) compiled_nodes[n.id.value] = &n;

  out.values.reserve(graph.size());
  for (const CapturedValue& gv : graph) {
    ValueDiff d;
    d.value = gv.name;
    d.node = gv.node;
    d.op = gv.op;
    d.node_id = gv.producer;
    d.order = gv.order;
    auto gn = compiled_nodes.find(gv.producer.value);
    Counterpart c;
    if (gn != compiled_nodes.end()) c = counterpart(*gn->second, static_cast<size_t>(gv.output), pos, original, ref);
    if (!c.node) {
      d.note = "no PyNative counterpart";
      out.values.push_back(std::move(d));
      continue;
    }
    d.match = c.match;
    d.ref_value = c.value;
    d.ref_node = c.node->label();
    d.ref_node_id = c.node->id;
    auto r = ref.find(c.value);
    if (r == ref.end() || !r->second->value.defined()) {
      d.note = r == ref.end() ? "not captured in PyNative" : "PyNative copy not kept (budget)";
    } else if (!gv.value.defined()) {
      d.note = "Graph copy not kept (budget)";
    } else if (gv.value.numel() != r->second->value.numel()) {
      d.note = "shape differs: " + shape_to_string(gv.shape) + " against " + shape_to_string(r->second->shape);
    } else {
      if (gv.shape != r->second->shape) d.note = "compared flat: " + shape_to_string(r->second->shape) + " in PyNative";
      const TensorDiff td = diff_tensors(gv.value, r->second->value);
      d.compared = true;
      d.max_abs = td.max_abs;
      d.max_rel = td.max_rel;
      d.nonfinite_mismatches = td.nonfinite_mismatches;
      d.diverged = td.max_rel > tol || td.nonfinite_mismatches > 0;
      ++out.compared;
      out.max_rel = std::max(out.max_rel, td.max_rel);
      if (d.diverged) {
        ++out.diverged;
        if (out.first_divergence < 0) out.first_divergence = static_cast<int>(out.values.size());
      }
    }
    out.values.push_back(std::move(d));
  }
  return out;
}

std::string ModeDiff::summary() const {
  std::ostringstream os;
  os.precision(3);
  os << compared << " of " << values.size() << " Graph values compared with PyNative, largest relative error "
     << max_rel << "; ";
  if (first_divergence < 0) {
    os << "none above " << tol;
  } else {
    const ValueDiff& d = values[static_cast<size_t>(first_divergence)];
    os << diverged << " above " << tol << ", first '" << d.value << "' of node '" << d.node << "' (" << d.op << ", "
       << d.max_rel << ")";
  }
  return os.str();
}

}  // namespace ms::runtime
