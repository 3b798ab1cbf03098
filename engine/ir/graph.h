// The IR: a Graph of Nodes joined by named Values (ONNX semantics: a value is defined once, by a graph
// input, an initializer or one node output). Every node carries a stable NodeId and its origins.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms::ir {

// Stable identity of a node across passes, snapshots, traces and session files. 0 = none.
struct NodeId {
  uint64_t value = 0;
  constexpr bool valid() const { return value != 0; }
  constexpr auto operator<=>(const NodeId&) const = default;
};

// Static type of a value: dtype plus (maybe partial) shape. dims == nullopt: rank unknown;
// a dim of -1 is unknown (its symbolic name, if any, in dim_params).
// A value is a tensor, a sequence of tensors or an optional (of a tensor or of a sequence): `kind`,
// and for an optional `elem_kind`. For the containers dtype/dims describe the tensors inside (dims:
// what every element has in common). Only tensors are ever static, so containers stay out of
// memory plans and their steps run through the interpreter.
struct ValueType {
  DType dtype = DType::Undefined;
  std::optional<std::vector<int64_t>> dims;
  std::vector<std::string> dim_params;  // same length as dims when present, "" for none
  ValueKind kind = ValueKind::Tensor;
  ValueKind elem_kind = ValueKind::Tensor;  // Optional: Tensor or Sequence

  bool has_rank() const { return dims.has_value(); }
  bool is_tensor() const { return kind == ValueKind::Tensor; }
  bool is_static() const;         // a tensor whose rank is known and every dim >= 0
  std::string to_string() const;  // "f32[1,3,?,?]" / "f32[*]" / "seq(f32[*])" / "optional(seq(i64[2]))"
  // The type of one element of a sequence, or of the value an optional holds.
  ValueType element() const;
  static ValueType sequence_of(const ValueType& elem);
  static ValueType optional_of(const ValueType& elem);
  bool operator==(const ValueType&) const = default;
};

// The static type of a runtime value (a tensor's dtype and shape; a container's kind, element type
// and the dims its elements share).
ValueType type_of(const Tensor& t);
// Reads what ValueType::to_string writes ("f32[2,?]", "seq(i64[*])", "optional(seq(f32[*]))"); how a
// type-valued attribute (ONNX TYPE_PROTO, e.g. Optional's 'type') is kept. nullopt when malformed.
std::optional<ValueType> parse_value_type(std::string_view text);

struct Value {
  std::string name;
  ValueType type;
  NodeId producer;                 // invalid for graph inputs and initializers
  std::optional<Tensor> constant;  // initializer data
  bool is_initializer() const { return constant.has_value(); }
};

class Graph;

class Attribute {
 public:
  enum class Kind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph, Graphs };
  using GraphPtr = std::shared_ptr<Graph>;
  using Storage = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, ms::Tensor, GraphPtr, std::vector<GraphPtr>>;

  Attribute() = default;
  template <class T> Attribute(T v) : v_(std::move(v)) {}  // NOLINT: implicit by design

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_graph() const { return kind() == Kind::Graph || kind() == Kind::Graphs; }  // a subgraph or a list of them
  const Storage& storage() const { return v_; }
  template <class T> const T* get_if() const { return std::get_if<T>(&v_); }
  static const char* kind_name(Kind k);

 private:
  Storage v_;
};

struct Node {
  NodeId id;
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  std::string name;
  std::vector<std::string> inputs;  // "" = optional input left out
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;
  std::vector<NodeId> origins;  // original nodes this one stands for (itself when imported/built)

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(const std::string& key) const;
  std::shared_ptr<Graph> attr_graph(const std::string& key) const;
  bool has_subgraph() const;                              // an If branch, a Loop body, ...
  std::vector<std::shared_ptr<Graph>> subgraphs() const;  // every one, in attribute order

  // "node 'conv1' (Conv #12)" — how errors name a node.
  std::string label() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

// Hands out NodeIds; shared by a graph and all of its subgraphs so ids are unique in a model.
class IdSource {
 public:
  NodeId next() { return NodeId{++last_}; }
  void observe(NodeId id) {
    if (id.value > last_) last_ = id.value;
  }

 private:
  uint64_t last_ = 0;
};

class Graph {
 public:
  Graph() : ids_(std::make_shared<IdSource>()) {}
  explicit Graph(std::shared_ptr<IdSource> ids) : ids_(std::move(ids)) {}
  Graph(const Graph&) = default;  // shallow for subgraph pointers; see deep_copy()
  Graph& operator=(const Graph&) = default;

  std::string name;
  std::vector<std::string> inputs;  // graph inputs (no initializers)
  std::vector<std::string> outputs;
  std::map<std::string, int64_t> opsets;  // domain -> version ("" = ai.onnx)
  std::map<std::string, std::string> metadata;

  int64_t opset(const std::string& domain = "") const;

  // Nodes in topological order (kept so by importers, builders and passes; verify() checks).
  std::vector<Node>& nodes() { return nodes_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node* find_node(NodeId id) const;
  Node* find_node(NodeId id);
  const Node* find_node_by_name(const std::string& name) const;

  // Appends a node with a fresh id (origins = itself unless given) and registers its outputs.
  Node& add_node(Node node);

  bool has_value(const std::string& name) const { return values_.count(name) != 0; }
  Value* value(const std::string& name);
  const Value* value(const std::string& name) const;
  Value& add_value(Value v);  // replaces an existing value of the same name
  const std::unordered_map<std::string, Value>& values() const { return values_; }
  std::unordered_map<std::string, Value>& values() { return values_; }
  void erase_value(const std::string& name) { values_.erase(name); }

  void add_initializer(const std::string& name, Tensor t);
  std::vector<std::string> initializer_names() const;  // sorted

  const std::shared_ptr<IdSource>& ids() const { return ids_; }
  // Enclosing graph (for subgraphs of If/Loop): names not defined here resolve there.
  const Graph* parent() const { return parent_; }
  void set_parent(const Graph* p) { parent_ = p; }
  // Looks a name up here, then in enclosing graphs.
  const Value* resolve(const std::string& name) const;

  // Copy with subgraphs copied too (snapshots must not share mutable subgraphs).
  Graph deep_copy() const;

  // Content fingerprint (ops, attrs, edges, types; not constant data beyond a digest).
  uint64_t fingerprint() const;

  size_t node_count_recursive() const;

 private:
  std::vector<Node> nodes_;
  std::unordered_map<std::string, Value> values_;
  std::shared_ptr<IdSource> ids_;
  const Graph* parent_ = nullptr;
};

// Structural checks: every input defined before use (in this graph or an enclosing one), single
// definition per value, outputs defined, no cycles, ids unique and valid. Error names the node.
Status verify(const Graph& g);

// Stable, diffable text: one node a line, attributes sorted, subgraphs indented.
std::string dump_text(const Graph& g);

// JSON form that round-trips (ids, origins, attributes, initializers with data).
std::string to_json(const Graph& g, bool include_constant_data = true);
// The same with only string tensors' data (initializers and tensor attributes alike); numeric
// tensors keep their dtype and shape and read back as zeros (a session file stores their data apart).
std::string to_json_strings_only(const Graph& g);
Expected<Graph> from_json(const std::string& text);

}  // namespace ms::ir

template <> struct std::hash<ms::ir::NodeId> {
  size_t operator()(const ms::ir::NodeId& id) const noexcept { return std::hash<uint64_t>()(id.value); }
};
