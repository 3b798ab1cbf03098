#include "engine/ir/graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace ms::ir {

bool ValueType::is_static() const {
  if (kind != ValueKind::Tensor || !dims) return false;
  return std::all_of(dims->begin(), dims->end(), [](int64_t d) { return d >= 0; });
}

namespace {
std::string tensor_type_string(const ValueType& t) {
  std::string s(dtype_name(t.dtype));
  if (!t.dims) return s + "[*]";
  s += '[';
  for (size_t i = 0; i < t.dims->size(); ++i) {
    if (i) s += ',';
    const int64_t d = (*t.dims)[i];
    if (d >= 0)
      s += std::to_string(d);
    else if (i < t.dim_params.size() && !t.dim_params[i].empty())
      s += t.dim_params[i];
    else
      s += '?';
  }
  return s + ']';
}
}  // namespace

std::string ValueType::to_string() const {
  switch (kind) {
    case ValueKind::Sequence: return "seq(" + tensor_type_string(*this) + ")";
    case ValueKind::Optional: return "optional(" + element().to_string() + ")";
    case ValueKind::Tensor: break;
  }
  return tensor_type_string(*this);
}

ValueType ValueType::element() const {
  ValueType e = *this;
  e.kind = kind == ValueKind::Optional ? elem_kind : ValueKind::Tensor;
  e.elem_kind = ValueKind::Tensor;
  return e;
}

ValueType ValueType::sequence_of(const ValueType& elem) {
  ValueType t = elem;
  t.kind = ValueKind::Sequence;
  t.elem_kind = ValueKind::Tensor;
  return t;
}

ValueType ValueType::optional_of(const ValueType& elem) {
  ValueType t = elem;
  t.kind = ValueKind::Optional;
  t.elem_kind = elem.kind == ValueKind::Sequence ? ValueKind::Sequence : ValueKind::Tensor;
  return t;
}

namespace {
// Dims every tensor of `items` shares (-1 where they differ); nullopt when the ranks differ or none.
std::optional<std::vector<int64_t>> common_dims(const std::vector<Tensor>& items) {
  std::optional<std::vector<int64_t>> dims;
  for (const Tensor& e : items) {
    if (!e.is_tensor()) return std::nullopt;
    if (!dims) {
      dims = std::vector<int64_t>(e.shape().begin(), e.shape().end());
      continue;
    }
    if (dims->size() != e.shape().size()) return std::nullopt;
    for (size_t i = 0; i < dims->size(); ++i)
      if ((*dims)[i] != e.shape()[i]) (*dims)[i] = -1;
  }
  return dims;
}
}  // namespace

ValueType type_of(const Tensor& t) {
  ValueType vt;
  const ValueList* list = t.list();
  if (!list) {
    vt.dtype = t.dtype();
    vt.dims = std::vector<int64_t>(t.shape().begin(), t.shape().end());
    vt.dim_params.assign(t.shape().size(), "");
    return vt;
  }
  vt.dtype = list->elem_dtype;
  vt.kind = list->kind;
  vt.elem_kind = list->elem_kind;
  if (list->kind == ValueKind::Optional && list->elem_kind == ValueKind::Sequence && !list->items.empty())
    vt.dims = common_dims(list->items.front().items());
  else
    vt.dims = common_dims(list->items);
  if (vt.dims) vt.dim_params.assign(vt.dims->size(), "");
  return vt;
}

std::optional<ValueType> parse_value_type(std::string_view text) {
  auto wrapped = [&](std::string_view prefix) {
    return text.size() > prefix.size() + 1 && text.substr(0, prefix.size()) == prefix && text.back() == ')';
  };
  if (wrapped("seq(") || wrapped("optional(")) {
    const bool seq = text[0] == 's';
    const size_t open = text.find('(');
    auto inner = parse_value_type(text.substr(open + 1, text.size() - open - 2));
    if (!inner || (seq && !inner->is_tensor()) || inner->kind == ValueKind::Optional) return std::nullopt;
    return seq ? ValueType::sequence_of(*inner) : ValueType::optional_of(*inner);
  }
  const size_t lb = text.find('[');
  if (lb == std::string_view::npos || text.back() != ']') return std::nullopt;
  auto dt = dtype_from_name(text.substr(0, lb));
  if (!dt) return std::nullopt;
  ValueType t;
  t.dtype = *dt;
  const std::string_view body = text.substr(lb + 1, text.size() - lb - 2);
  if (body == "*") return t;
  t.dims.emplace();
  size_t pos = 0;
  while (!body.empty() && pos <= body.size()) {
    size_t comma = body.find(',', pos);
    if (comma == std::string_view::npos) comma = body.size();
    const std::string_view d = body.substr(pos, comma - pos);
    if (d.empty()) return std::nullopt;
    const bool number = std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    t.dims->push_back(number && d.size() < 18 ? std::stoll(std::string(d)) : -1);
    t.dim_params.push_back(number || d == "?" ? std::string() : std::string(d));
    pos = comma + 1;
  }
  return t;
}

const char* Attribute::kind_name(Kind k) {
  static const char* names[] = {"int", "float", "string", "ints", "floats", "strings", "tensor", "graph", "graphs"};
  return names[static_cast<int>(k)];
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = it->second.get_if<int64_t>()) return *v;
  if (auto* f = it->second.get_if<float>()) {
    // A float where an int belongs (a model file's mistake): NaN is no value, and one past int64's
    // range saturates, so the op's own checks see it as the absurd size it is.
    if (std::isnan(*f)) return fallback;
    if (*f >= 0x1p63f) return std::numeric_limits<int64_t>::max();
    if (*f <= -0x1p63f) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(*f);
  }
  return fallback;
}

float Node::attr_float(const std::string& key, float fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = it->second.get_if<float>()) return *v;
  if (auto* i = it->second.get_if<int64_t>()) return static_cast<float>(*i);
  return fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = it->second.get_if<std::string>()) return *v;
  return fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string& key, std::vector<int64_t> fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = it->second.get_if<std::vector<int64_t>>()) return *v;
  if (auto* i = it->second.get_if<int64_t>()) return {*i};
  return fallback;
}

std::vector<float> Node::attr_floats(const std::string& key, std::vector<float> fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = it->second.get_if<std::vector<float>>()) return *v;
  if (auto* f = it->second.get_if<float>()) return {*f};
  return fallback;
}

const Tensor* Node::attr_tensor(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : it->second.get_if<Tensor>();
}

std::shared_ptr<Graph> Node::attr_graph(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return nullptr;
  auto* g = it->second.get_if<Attribute::GraphPtr>();
  return g ? *g : nullptr;
}

bool Node::has_subgraph() const {
  for (const auto& [key, a] : attrs)
    if (a.is_graph()) return true;
  return false;
}

std::vector<std::shared_ptr<Graph>> Node::subgraphs() const {
  std::vector<std::shared_ptr<Graph>> out;
  for (const auto& [key, a] : attrs) {
    if (auto* g = a.get_if<Attribute::GraphPtr>()) {
      if (*g) out.push_back(*g);
    } else if (auto* gs = a.get_if<std::vector<Attribute::GraphPtr>>()) {
      for (const auto& x : *gs)
        if (x) out.push_back(x);
    }
  }
  return out;
}

std::string Node::label() const {
  std::string s = "node '" + (name.empty() ? (outputs.empty() ? std::string("?") : outputs[0]) : name) + "' (" +
                  op_type + " #" + std::to_string(id.value) + ")";
  return s;
}

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain);
  if (it != opsets.end()) return it->second;
  if (parent_) return parent_->opset(domain);
  return domain.empty() ? 17 : 1;
}

const Node* Graph::find_node(NodeId id) const {
  for (const auto& n : nodes_)
    if (n.id == id) return &n;
  return nullptr;
}

Node* Graph::find_node(NodeId id) {
  for (auto& n : nodes_)
    if (n.id == id) return &n;
  return nullptr;
}

const Node* Graph::find_node_by_name(const std::string& nm) const {
  for (const auto& n : nodes_)
    if (n.name == nm) return &n;
  return nullptr;
}

Node& Graph::add_node(Node node) {
  if (!node.id.valid())
    node.id = ids_->next();
  else
    ids_->observe(node.id);
  if (node.origins.empty()) node.origins.push_back(node.id);
  for (const auto& out : node.outputs) {
    if (out.empty()) continue;
    auto it = values_.find(out);
    if (it == values_.end())
      values_.emplace(out, Value{out, {}, node.id, std::nullopt});
    else
      it->second.producer = node.id;
  }
  nodes_.push_back(std::move(node));
  return nodes_.back();
}

Value* Graph::value(const std::string& nm) {
  auto it = values_.find(nm);
  return it == values_.end() ? nullptr : &it->second;
}

const Value* Graph::value(const std::string& nm) const {
  auto it = values_.find(nm);
  return it == values_.end() ? nullptr : &it->second;
}

Value& Graph::add_value(Value v) {
  std::string key = v.name;
  return values_.insert_or_assign(std::move(key), std::move(v)).first->second;
}

void Graph::add_initializer(const std::string& nm, Tensor t) {
  Value v;
  v.name = nm;
  v.type.dtype = t.dtype();
  v.type.dims = t.shape();
  v.type.dim_params.assign(t.shape().size(), "");
  v.constant = std::move(t);
  add_value(std::move(v));
}

std::vector<std::string> Graph::initializer_names() const {
  std::vector<std::string> names;
  for (const auto& [k, v] : values_)
    if (v.is_initializer()) names.push_back(k);
  std::sort(names.begin(), names.end());
  return names;
}

const Value* Graph::resolve(const std::string& nm) const {
  for (const Graph* g = this; g; g = g->parent_)
    if (const Value* v = g->value(nm)) return v;
  return nullptr;
}

Graph Graph::deep_copy() const {
  Graph g = *this;
  for (auto& n : g.nodes_) {
    for (auto& [k, a] : n.attrs) {
      if (auto* sub = a.get_if<Attribute::GraphPtr>()) {
        auto copy = std::make_shared<Graph>((*sub)->deep_copy());
        a = Attribute(copy);
      } else if (auto* subs = a.get_if<std::vector<Attribute::GraphPtr>>()) {
        std::vector<Attribute::GraphPtr> copies;
        for (const auto& s : *subs) copies.push_back(std::make_shared<Graph>(s->deep_copy()));
        a = Attribute(std::move(copies));
      }
    }
  }
  // Re-link parents of the copied subgraphs to the copy happens on demand by executors (set_parent).
  return g;
}

size_t Graph::node_count_recursive() const {
  size_t n = nodes_.size();
  for (const auto& node : nodes_)
    for (const auto& [k, a] : node.attrs) {
      if (auto* sub = a.get_if<Attribute::GraphPtr>()) n += (*sub)->node_count_recursive();
      if (auto* subs = a.get_if<std::vector<Attribute::GraphPtr>>())
        for (const auto& s : *subs) n += s->node_count_recursive();
    }
  return n;
}

}  // namespace ms::ir
