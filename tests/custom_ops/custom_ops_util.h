// Shared by the custom-op tests: where the plugins are, and a small model of the sample plugin's
// com.example.ScaledTanh (x * 3 -> ScaledTanh{alpha=2, beta=0.5} -> Relu) written as ONNX.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/frontend/onnx/onnx_io.h"
#include "engine/ir/graph.h"
#include "tests/temp_dir.h"

namespace ms::testing {

inline std::string sample_plugin() { return MODESCOPE_SAMPLE_PLUGIN; }
inline std::string test_plugin(const std::string& name) {
  return std::string(MODESCOPE_TEST_PLUGIN_DIR) + "/libtest_plugin_" + name + ".so";
}

inline void add_f32_input(ir::Graph& g, const std::string& name, const std::vector<int64_t>& dims) {
  ir::ValueType t;
  t.dtype = DType::F32;
  t.dims = dims;
  t.dim_params.assign(dims.size(), "");
  g.inputs.push_back(name);
  g.add_value(ir::Value{name, t, {}, std::nullopt});
}

inline void add_node(ir::Graph& g, const std::string& op, const std::string& domain, const std::string& name,
                     std::vector<std::string> inputs, const std::string& output,
                     std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  n.attrs = std::move(attrs);
  g.add_node(n);
}

inline ir::Graph scaled_tanh_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["com.example"] = 1;
  add_f32_input(g, "x", {2, 3});
  g.add_initializer("three", Tensor::from_vector<float>({3.f}, {}));
  add_node(g, "Mul", "", "scale", {"x", "three"}, "m");
  add_node(g, "ScaledTanh", "com.example", "squash", {"m"}, "s",
           {{"alpha", ir::Attribute(2.0f)}, {"beta", ir::Attribute(0.5f)}});
  add_node(g, "Relu", "", "relu", {"s"}, "y");
  g.outputs.push_back("y");
  return g;
}

// The model above as a file in `dir` (a TempDir the test removes), or "" when it could not be written.
inline std::string write_scaled_tanh_model(const TempDir& dir, const std::string& file_name) {
  const std::string path = dir.file(file_name);
  const Status st = onnx_io::save_model(scaled_tanh_graph(), path);
  return st.is_ok() ? path : std::string();
}

inline float scaled_tanh_reference(float x) { return std::max(0.f, 2.f * std::tanh(0.5f * (3.f * x))); }

}  // namespace ms::testing
