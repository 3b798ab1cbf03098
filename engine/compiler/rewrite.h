// Small graph-editing helpers shared by the passes: use counts, renaming uses, erasing and
// inserting nodes while keeping the node list topological and values consistent.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::compiler {

// Readers of every value: node inputs, subgraph (implicit) reads and graph outputs.
struct Uses {
  std::unordered_map<std::string, int> count;  // readers (a graph output counts once)
  std::set<std::string> graph_outputs;
  std::set<std::string> implicit;  // read by some node's subgraph
  int of(const std::string& v) const {
    auto it = count.find(v);
    return it == count.end() ? 0 : it->second;
  }
  // Safe to rename/bypass: only read by plain node inputs.
  bool only_plain(const std::string& v) const { return !graph_outputs.count(v) && !implicit.count(v); }
};
Uses compute_uses(const ir::Graph& g);

// Runs `step` (one rewrite; false when none is left) until nothing is left, at most 100,000 times so
// two rewrites that undo each other cannot loop forever. Returns whether anything changed.
template <class Step> bool rewrite_to_fixpoint(Step&& step) {
  bool any = false;
  for (int guard = 0; guard < 100000 && step(); ++guard) any = true;
  return any;
}

// Producer index of each value defined by a node.
std::unordered_map<std::string, size_t> producer_index(const ir::Graph& g);

// Every node input reading `from` reads `to` instead (not graph outputs, not subgraphs).
void replace_uses(ir::Graph& g, const std::string& from, const std::string& to);

// Removes the nodes with these ids and the values they defined (unless another node defines them).
void erase_nodes(ir::Graph& g, const std::set<uint64_t>& ids);

// Makes a node with a fresh id from the graph's id source and the given origins (merged, sorted).
ir::Node new_node(ir::Graph& g, std::string op_type, std::string domain, std::vector<std::string> inputs,
                  std::vector<std::string> outputs, const std::vector<const ir::Node*>& replaced);

// Inserts `n` at position `pos` of the node list and registers its outputs' producer.
void insert_node(ir::Graph& g, size_t pos, ir::Node n);

// Replaces the nodes `ids` by `n`, placed where the first of them was (Place::First) or where the
// last was (Place::Last: every value a fused chain reads, a residual too, is defined by then); the
// types of n's outputs are kept (they are values the replaced nodes defined).
enum class Place { First, Last };
void replace_nodes(ir::Graph& g, const std::set<uint64_t>& ids, ir::Node n, Place place = Place::First);

// replace_nodes for many disjoint groups in one pass over the node list (fusion passes replace
// hundreds of chains in a training step's graph).
struct NodeGroup {
  std::set<uint64_t> ids;
  ir::Node node;
  Place place = Place::Last;
};
void replace_node_groups(ir::Graph& g, std::vector<NodeGroup> groups);

// The group of a pattern fusion: `n` in place of the last of `nodes`.
inline NodeGroup fused_group(const std::vector<const ir::Node*>& nodes, ir::Node n) {
  NodeGroup grp;
  for (const ir::Node* m : nodes) grp.ids.insert(m->id.value);
  grp.node = std::move(n);
  grp.place = Place::Last;
  return grp;
}

// Removes a node whose output `out` equals input `in` (Identity-like): readers of `out` read `in`.
// When `out` is a graph output and `in` is made by a node read nowhere else, that node is renamed to
// produce `out` instead. Returns false (nothing changed) when neither works.
bool bypass_node(ir::Graph& g, size_t index, const std::string& in, const std::string& out, const Uses& uses);

// A fresh value name based on `base` not used in the graph.
std::string fresh_name(const ir::Graph& g, const std::string& base);

// The constant of a value (initializer) or nullptr.
const Tensor* constant_of(const ir::Graph& g, const std::string& name);

// True when every element of a numeric constant equals v.
bool all_equal(const Tensor& t, double v);

// A Clip's bounds (attributes before opset 11, scalar constant inputs of dtype `dt` since); an absent
// bound is the largest finite float (infinities would not survive the JSON dumps). False when a
// bound is not such a constant.
bool clip_bounds(const ir::Graph& g, const ir::Node& n, DType dt, float& lo, float& hi);

// The reduced axes of reduction `r` over a rank-`rank` input (sorted, non-negative), or false when
// they are not constant (attribute before opset 18, input since) or the reduction is the identity
// (noop_with_empty_axes with no axes).
bool reduce_axes(const ir::Graph& g, const ir::Node& r, size_t rank, std::vector<int64_t>& axes);

// Name of the first domain-qualified custom op set used by fused nodes.
inline constexpr const char* kFusedDomain = "ai.modescope";

}  // namespace ms::compiler
