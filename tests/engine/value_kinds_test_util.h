// Small builders shared by the tests of sequence, optional and string values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::test {

inline ir::Node value_node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
                           std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  return n;
}

inline void add_graph_input(ir::Graph& g, const std::string& name, ir::ValueType t) {
  g.inputs.push_back(name);
  g.add_value(ir::Value{name, std::move(t), {}, std::nullopt});
}

}  // namespace ms::test
