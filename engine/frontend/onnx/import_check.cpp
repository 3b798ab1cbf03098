// Import-time checks: attribute kinds that ops rely on, topological order, supported ops.
#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/frontend/onnx/import_internal.h"
#include "engine/ops/schema.h"

namespace ms::onnx_io::detail {
namespace {

using Kind = ir::Attribute::Kind;

struct AttrRule {
  const char* op;
  const char* attr;
  Kind kind;
  bool required;
};

// Attributes whose kind a schema or kernel reads without asking: a wrong kind here would otherwise
// be silently replaced by a default (attr_int falls back), which hides a broken model.
constexpr AttrRule kRules[] = {
    {"If", "then_branch", Kind::Graph, true},
    {"If", "else_branch", Kind::Graph, true},
    {"Loop", "body", Kind::Graph, true},
    {"Scan", "body", Kind::Graph, true},
    {"Scan", "num_scan_inputs", Kind::Int, true},
    {"Cast", "to", Kind::Int, true},
    {"CastLike", "saturate", Kind::Int, false},
    {"Concat", "axis", Kind::Int, true},
    {"Conv", "kernel_shape", Kind::Ints, false},
    {"Conv", "strides", Kind::Ints, false},
    {"Conv", "pads", Kind::Ints, false},
    {"Conv", "dilations", Kind::Ints, false},
    {"Conv", "group", Kind::Int, false},
    {"Conv", "auto_pad", Kind::String, false},
    {"ConvTranspose", "kernel_shape", Kind::Ints, false},
    {"ConvTranspose", "strides", Kind::Ints, false},
    {"ConvTranspose", "pads", Kind::Ints, false},
    {"ConvTranspose", "dilations", Kind::Ints, false},
    {"ConvTranspose", "output_padding", Kind::Ints, false},
    {"ConvTranspose", "output_shape", Kind::Ints, false},
    {"ConvTranspose", "group", Kind::Int, false},
    {"MaxPool", "kernel_shape", Kind::Ints, true},
    {"MaxPool", "strides", Kind::Ints, false},
    {"MaxPool", "pads", Kind::Ints, false},
    {"MaxPool", "dilations", Kind::Ints, false},
    {"MaxPool", "ceil_mode", Kind::Int, false},
    {"MaxPool", "storage_order", Kind::Int, false},
    {"AveragePool", "kernel_shape", Kind::Ints, true},
    {"AveragePool", "strides", Kind::Ints, false},
    {"AveragePool", "pads", Kind::Ints, false},
    {"AveragePool", "ceil_mode", Kind::Int, false},
    {"AveragePool", "count_include_pad", Kind::Int, false},
    {"Gemm", "alpha", Kind::Float, false},
    {"Gemm", "beta", Kind::Float, false},
    {"Gemm", "transA", Kind::Int, false},
    {"Gemm", "transB", Kind::Int, false},
    {"Transpose", "perm", Kind::Ints, false},
    {"Gather", "axis", Kind::Int, false},
    {"GatherElements", "axis", Kind::Int, false},
    {"Softmax", "axis", Kind::Int, false},
    {"LogSoftmax", "axis", Kind::Int, false},
    {"Flatten", "axis", Kind::Int, false},
    {"Split", "axis", Kind::Int, false},
    {"Split", "split", Kind::Ints, false},
    {"Squeeze", "axes", Kind::Ints, false},
    {"Unsqueeze", "axes", Kind::Ints, false},
    {"Reshape", "allowzero", Kind::Int, false},
    {"LeakyRelu", "alpha", Kind::Float, false},
    {"Elu", "alpha", Kind::Float, false},
    {"HardSigmoid", "alpha", Kind::Float, false},
    {"HardSigmoid", "beta", Kind::Float, false},
    {"Clip", "min", Kind::Float, false},
    {"Clip", "max", Kind::Float, false},
    {"BatchNormalization", "epsilon", Kind::Float, false},
    {"BatchNormalization", "momentum", Kind::Float, false},
    {"LayerNormalization", "axis", Kind::Int, false},
    {"LayerNormalization", "epsilon", Kind::Float, false},
    {"InstanceNormalization", "epsilon", Kind::Float, false},
    {"ArgMax", "axis", Kind::Int, false},
    {"ArgMax", "keepdims", Kind::Int, false},
    {"ArgMin", "axis", Kind::Int, false},
    {"ArgMin", "keepdims", Kind::Int, false},
    {"CumSum", "exclusive", Kind::Int, false},
    {"CumSum", "reverse", Kind::Int, false},
    {"Resize", "mode", Kind::String, false},
    {"Pad", "mode", Kind::String, false},
    {"ConstantOfShape", "value", Kind::Tensor, false},
};

constexpr const char* kReduceOps[] = {"ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
                                      "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

constexpr const char* kConstantValueAttrs[] = {"value",      "value_float",  "value_floats",  "value_int",
                                               "value_ints", "value_string", "value_strings", "sparse_value"};

Status check_kind(const ir::Node& n, const std::string& key, Kind want, bool required, const ImportContext& ctx) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) {
    if (!required) return Status::ok();
    return ctx
        .invalid(n.label() + ": missing required attribute '" + key + "' (" + ir::Attribute::kind_name(want) + ")")
        .with_node(n.id.value);
  }
  if (it->second.kind() != want)
    return ctx
        .invalid(n.label() + ": attribute '" + key + "' must be " + ir::Attribute::kind_name(want) + ", got " +
                 ir::Attribute::kind_name(it->second.kind()))
        .with_node(n.id.value);
  return Status::ok();
}

void free_names_into(const ir::Graph& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, v] : g.values())
    if (v.is_initializer() || v.producer.valid()) defined.insert(name);
  auto use = [&](const std::string& nm) {
    if (!nm.empty() && !defined.count(nm)) out.insert(nm);
  };
  for (const auto& n : g.nodes()) {
    for (const auto& in : n.inputs) use(in);
    for (const auto& [k, a] : n.attrs) {
      std::set<std::string> inner;
      if (auto* sub = a.get_if<ir::Attribute::GraphPtr>()) free_names_into(**sub, inner);
      if (auto* subs = a.get_if<std::vector<ir::Attribute::GraphPtr>>())
        for (const auto& s : *subs) free_names_into(*s, inner);
      for (const auto& nm : inner) use(nm);
    }
  }
  for (const auto& o : g.outputs) use(o);
}

}  // namespace

Status check_node_attributes(const ir::Node& n, const ImportContext& ctx) {
  if (!n.domain.empty()) return Status::ok();
  for (const auto& r : kRules)
    if (n.op_type == r.op) MS_RETURN_IF_ERROR(check_kind(n, r.attr, r.kind, r.required, ctx));
  for (const char* op : kReduceOps)
    if (n.op_type == op) {
      MS_RETURN_IF_ERROR(check_kind(n, "axes", Kind::Ints, false, ctx));
      MS_RETURN_IF_ERROR(check_kind(n, "keepdims", Kind::Int, false, ctx));
    }
  if (n.op_type == "Constant") {
    int count = 0;
    for (const char* key : kConstantValueAttrs) count += n.has_attr(key) ? 1 : 0;
    if (count != 1)
      return ctx.invalid(n.label() + ": Constant needs exactly one value attribute, has " + std::to_string(count))
          .with_node(n.id.value);
    MS_RETURN_IF_ERROR(check_kind(n, "value", Kind::Tensor, false, ctx));
    MS_RETURN_IF_ERROR(check_kind(n, "value_float", Kind::Float, false, ctx));
    MS_RETURN_IF_ERROR(check_kind(n, "value_floats", Kind::Floats, false, ctx));
    MS_RETURN_IF_ERROR(check_kind(n, "value_int", Kind::Int, false, ctx));
    MS_RETURN_IF_ERROR(check_kind(n, "value_ints", Kind::Ints, false, ctx));
  }
  return Status::ok();
}

void free_names(const ir::Graph& g, std::vector<std::string>& out) {
  std::set<std::string> names;
  free_names_into(g, names);
  out.assign(names.begin(), names.end());
}

Status topo_sort(std::vector<ir::Node>& nodes, const ImportContext& ctx, const std::string& graph_name) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& out : nodes[i].outputs)
      if (!out.empty()) producer.emplace(out, i);

  // Dependencies: explicit inputs plus names the node's subgraphs read from this scope.
  std::vector<std::vector<size_t>> deps(nodes.size());
  bool sorted = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::string> names(nodes[i].inputs.begin(), nodes[i].inputs.end());
    for (const auto& [k, a] : nodes[i].attrs) {
      std::vector<std::string> inner;
      if (auto* sub = a.get_if<ir::Attribute::GraphPtr>()) free_names(**sub, inner);
      if (auto* subs = a.get_if<std::vector<ir::Attribute::GraphPtr>>())
        for (const auto& s : *subs) {
          std::vector<std::string> more;
          free_names(*s, more);
          inner.insert(inner.end(), more.begin(), more.end());
        }
      names.insert(names.end(), inner.begin(), inner.end());
    }
    for (const auto& nm : names) {
      auto it = producer.find(nm);
      if (it == producer.end()) continue;  // graph input, initializer, outer scope or dangling (verify says)
      deps[i].push_back(it->second);
      if (it->second >= i) sorted = false;
    }
  }
  if (sorted) return Status::ok();

  // Kahn's algorithm, always taking the earliest node in file order that is ready.
  std::vector<std::vector<size_t>> users(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
    pending[i] = deps[i].size();
    for (size_t d : deps[i]) users[d].push_back(i);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != nodes.size()) {
    std::string names;
    int listed = 0;
    for (size_t i = 0; i < nodes.size() && listed < 5; ++i)
      if (pending[i] != 0) names += std::string(listed++ ? ", " : "") + nodes[i].label();
    return ctx.invalid(graph_name + ": nodes form a cycle (" + names + ")");
  }
  std::vector<ir::Node> out;
  out.reserve(nodes.size());
  for (size_t i : order) out.push_back(std::move(nodes[i]));
  nodes = std::move(out);
  return Status::ok();
}

Status check_supported_ops(const ir::Graph& g, const ImportContext& ctx) {
  struct Missing {
    std::string op, node;
    int64_t opset;
  };
  std::vector<Missing> missing;
  std::set<std::string> seen;
  for_each_node_preorder(g, [&](const ir::Graph& owner, const ir::Node& n) {
    const auto* schema = ops::Registry::instance().find(n.op_type, n.domain);
    const int64_t opset = owner.opset(n.domain);
    if (schema && opset >= schema->since_version) return;
    const std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    if (!seen.insert(op).second) return;
    const std::string who =
        !n.name.empty() ? n.name : (n.outputs.empty() ? "#" + std::to_string(n.id.value) : n.outputs[0]);
    missing.push_back({op, who, opset});
  });
  if (missing.empty()) return Status::ok();
  std::string msg = "unsupported ops: ";
  for (size_t i = 0; i < missing.size(); ++i)
    msg += (i ? ", " : "") + missing[i].op + " (node '" + missing[i].node + "', opset " +
           std::to_string(missing[i].opset) + ")";
  return ctx.error(ErrorCode::Unsupported, msg);
}

}  // namespace ms::onnx_io::detail
