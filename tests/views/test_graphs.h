// Small graphs for the views tests, built in code (no files).
#pragma once

#include <QApplication>

#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::views::test {

inline QApplication& qt_app() {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "views_tests";
  static char* argv[] = {name, nullptr};
  // Never destroyed: a QApplication torn down by exit handlers after Qt's own globals crashes.
  static QApplication* app = new QApplication(argc, argv);
  return *app;
}

inline ir::ValueType f32(std::vector<int64_t> dims) {
  ir::ValueType t;
  t.dtype = DType::F32;
  t.dim_params.assign(dims.size(), "");
  t.dims = std::move(dims);
  return t;
}

// Appends op `op` named `name` reading `inputs`, writing one value `name + ":0"` of type `type`.
inline std::string add(ir::Graph& g, const std::string& op, const std::string& name, std::vector<std::string> inputs,
                       const ir::ValueType& type) {
  ir::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {name + ":0"};
  ir::Node& added = g.add_node(std::move(n));
  ir::Value v{name + ":0", type, added.id, {}};
  g.add_value(v);
  return name + ":0";
}

// x -> /stem/conv/Conv(W) -> /layer1/layer1.0/{conv1/Conv, relu/Relu} -> /layer1/layer1.1/{...}
//   -> /head/fc/Gemm -> y
inline std::shared_ptr<ir::Graph> scoped_graph() {
  auto g = std::make_shared<ir::Graph>();
  g->name = "scoped";
  const auto t = f32({1, 8, 4, 4});
  g->add_value({"x", t, {}, {}});
  g->inputs = {"x"};
  g->add_initializer("W", Tensor::zeros(DType::F32, {8, 8, 3, 3}));
  std::string cur = add(*g, "Conv", "/stem/conv/Conv", {"x", "W"}, t);
  g->find_node_by_name("/stem/conv/Conv");
  for (const char* block : {"layer1.0", "layer1.1"}) {
    const std::string scope = std::string("/layer1/") + block;
    cur = add(*g, "Conv", scope + "/conv1/Conv", {cur, "W"}, t);
    cur = add(*g, "Relu", scope + "/relu/Relu", {cur}, t);
  }
  cur = add(*g, "Flatten", "/head/Flatten", {cur}, f32({1, 128}));
  g->add_initializer("fc.weight", Tensor::zeros(DType::F32, {10, 128}));
  cur = add(*g, "Gemm", "/head/fc/Gemm", {cur, "fc.weight"}, f32({1, 10}));
  g->outputs = {cur};
  return g;
}

// A chain of `blocks` scoped blocks of 4 ops: "/stage<s>/block<b>/<op>".
inline std::shared_ptr<ir::Graph> big_graph(int blocks) {
  auto g = std::make_shared<ir::Graph>();
  g->name = "big";
  const auto t = f32({1, 4});
  g->add_value({"x", t, {}, {}});
  g->inputs = {"x"};
  std::string cur = "x";
  for (int b = 0; b < blocks; ++b) {
    const std::string scope = "/stage" + std::to_string(b / 10) + "/block" + std::to_string(b % 10) + "/";
    const std::string skip = cur;
    cur = add(*g, "Relu", scope + "Relu_a", {cur}, t);
    cur = add(*g, "Sigmoid", scope + "Sigmoid", {cur}, t);
    cur = add(*g, "Relu", scope + "Relu_b", {cur}, t);
    cur = add(*g, "Add", scope + "Add", {cur, skip}, t);
  }
  g->outputs = {cur};
  return g;
}

}  // namespace ms::views::test
