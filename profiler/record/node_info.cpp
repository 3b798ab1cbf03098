#include "profiler/record/node_info.h"

#include "engine/ops/schema.h"

namespace ms::prof {

NodeInfo node_info(const ir::Graph& g, const ir::Node& n) {
  NodeInfo info;
  info.id = n.id.value;
  info.name = n.name;
  info.op = n.domain.empty() || n.domain == "ai.onnx" ? n.op_type : n.domain + "." + n.op_type;
  for (ir::NodeId o : n.origins) info.origins.push_back(o.value);
  if (info.origins.empty()) info.origins.push_back(n.id.value);
  std::vector<ir::ValueType> in, out;
  auto type_of = [&](const std::string& name) {
    const ir::Value* v = name.empty() ? nullptr : g.resolve(name);
    return v ? v->type : ir::ValueType{};
  };
  for (const auto& s : n.inputs) in.push_back(type_of(s));
  for (const auto& s : n.outputs) out.push_back(type_of(s));
  auto join = [](const std::vector<ir::ValueType>& ts) {
    std::string s;
    for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].to_string();
    return s;
  };
  info.shapes = join(in) + " -> " + join(out);
  // Cost functions trust what inference checked (arity, ranks): ask only for nodes whose every
  // value has a static type and whose arity fits the schema.
  const ops::OpSchema* schema = ops::Registry::instance().find(n.op_type, n.domain);
  bool typed = schema && static_cast<int>(in.size()) >= schema->min_inputs &&
               static_cast<int>(out.size()) >= schema->min_outputs;
  for (size_t i = 0; i < in.size() && typed; ++i)
    typed = n.inputs[i].empty() || (in[i].is_static() && in[i].dtype != DType::Undefined);
  for (const auto& t : out) typed = typed && t.is_static() && t.dtype != DType::Undefined;
  if (typed) {
    const ops::Cost c = ops::node_cost(n, in, out);
    info.flops = c.flops;
    info.bytes = c.bytes;
  }
  return info;
}

static void collect(const ir::Graph& g, std::vector<NodeInfo>& out) {
  for (const ir::Node& n : g.nodes()) {
    out.push_back(node_info(g, n));
    for (const auto& [key, attr] : n.attrs) {
      if (const auto* sub = attr.get_if<ir::Attribute::GraphPtr>(); sub && *sub) collect(**sub, out);
      if (const auto* subs = attr.get_if<std::vector<ir::Attribute::GraphPtr>>())
        for (const auto& s : *subs)
          if (s) collect(*s, out);
    }
  }
}

std::vector<NodeInfo> collect_node_info(const ir::Graph& g) {
  std::vector<NodeInfo> out;
  collect(g, out);
  return out;
}

}  // namespace ms::prof
