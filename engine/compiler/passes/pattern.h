// The pattern fusions (fuse-layer-norm, fuse-activations, fuse-attention, fuse-squeeze-excite,
// fold-qdq): PatternView reads a graph from the root of a pattern (the producer of a value with a
// given op, whether an intermediate value is read by the pattern alone, scalar constants), built
// once per scan, the graph unchanged while it is used; fuse_matches is the scan they share.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ir/graph.h"

namespace ms::compiler {

class PatternView {
 public:
  explicit PatternView(const ir::Graph& g) : g_(g), uses_(compute_uses(g)), prod_(producer_index(g)) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const auto& in : g.nodes()[i].inputs)
        if (!in.empty()) reader_.emplace(in, i);  // the first reader; only used for single readers
  }

  const ir::Graph& graph() const { return g_; }
  const Uses& uses() const { return uses_; }

  // The node (default domain) that defines `v` when its op is `op`, else nullptr.
  const ir::Node* def(const std::string& v, const char* op) const {
    auto it = prod_.find(v);
    if (it == prod_.end()) return nullptr;
    const ir::Node& n = g_.nodes()[it->second];
    return n.domain.empty() && n.op_type == op ? &n : nullptr;
  }

  // The node (default domain) that is the one reader of `v` when its op is `op`, else nullptr.
  const ir::Node* sole_reader(const std::string& v, const char* op) const {
    if (!read_only_by(v, 1)) return nullptr;
    auto it = reader_.find(v);
    if (it == reader_.end()) return nullptr;
    const ir::Node& n = g_.nodes()[it->second];
    return n.domain.empty() && n.op_type == op ? &n : nullptr;
  }

  // The node (any op) that is the one reader of `v`, else nullptr.
  const ir::Node* sole_reader(const std::string& v) const {
    if (!read_only_by(v, 1)) return nullptr;
    auto it = reader_.find(v);
    return it == reader_.end() ? nullptr : &g_.nodes()[it->second];
  }

  // `v` is read by `readers` plain node inputs and nothing else (no graph output, no subgraph).
  bool read_only_by(const std::string& v, int readers) const { return uses_.of(v) == readers && uses_.only_plain(v); }

  // The value of a floating-point constant with one element (any rank), else nullopt.
  std::optional<double> scalar(const std::string& v) const {
    const Tensor* t = constant_of(g_, v);
    if (!t || t->numel() != 1 || !is_float(t->dtype())) return std::nullopt;
    return t->at_double(0);
  }

  // Whether `v` is a floating-point constant with one element equal to `want` within `rel` relative,
  // or within half a unit in the last place of a narrower float type (a bf16 graph's 1/sqrt(2) is
  // 0.70703125).
  bool scalar_is(const std::string& v, double want, double rel = 1e-6) const {
    const Tensor* t = constant_of(g_, v);
    if (!t || t->numel() != 1 || !is_float(t->dtype())) return false;
    const double tol = t->dtype() == DType::BF16  ? std::max(rel, 1.0 / 256)
                       : t->dtype() == DType::F16 ? std::max(rel, 1.0 / 2048)
                                                  : rel;
    return std::abs(t->at_double(0) - want) <= tol * std::abs(want);
  }

  // For a commutative binary node: the input other than `v` (nullptr when neither input is `v`).
  static const std::string* other_input(const ir::Node& n, const std::string& v) {
    if (n.inputs.size() != 2) return nullptr;
    if (n.inputs[0] == v) return &n.inputs[1];
    if (n.inputs[1] == v) return &n.inputs[0];
    return nullptr;
  }

  // Static dims of a value, or nullptr.
  const std::vector<int64_t>* static_dims(const std::string& v) const {
    const ir::Value* val = g_.value(v);
    return val && val->type.is_static() ? &*val->type.dims : nullptr;
  }

 private:
  const ir::Graph& g_;
  Uses uses_;
  std::unordered_map<std::string, size_t> prod_;
  std::unordered_map<std::string, size_t> reader_;
};

// The scan of a pattern fusion: `match(view, node)` (returning a std::optional) at each node of the
// default domain that `is_root` accepts, counted as a pattern tried, on a view of the graph as it
// was; then `build(g, match)` makes each match's node group (it may add initializers, not nodes), and
// the groups replace their nodes together, so the matches must be disjoint (their intermediates read
// by the pattern alone). Takes no more matches once the rewrite budget is spent (bisect). Returns
// the number of groups swapped in.
template <class IsRoot, class Match, class Build>
size_t fuse_matches(ir::Graph& g, IsRoot&& is_root, Match&& match, Build&& build) {
  using Found = typename std::invoke_result_t<Match&, const PatternView&, const ir::Node&>::value_type;
  std::vector<Found> found;
  {
    const PatternView view(g);
    work().nodes_visited += g.nodes().size();
    for (const ir::Node& n : g.nodes()) {
      if (!n.domain.empty() || !is_root(n)) continue;
      ++work().patterns_tried;
      std::optional<Found> m = match(view, n);
      if (!m) continue;
      if (!take_rewrite()) break;
      found.push_back(std::move(*m));
    }
  }
  std::vector<NodeGroup> groups;
  groups.reserve(found.size());
  for (const Found& m : found) groups.push_back(build(g, m));
  const size_t swapped = groups.size();
  replace_node_groups(g, std::move(groups));
  return swapped;
}

}  // namespace ms::compiler
