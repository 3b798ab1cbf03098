// Helpers shared by the profiler tests: a small typed graph, a recorded run of it in either mode (the
// session library's run loop),
// hand-built traces, and structure checks on exported Chrome JSON.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/session/run_loop.h"
#include "engine/backends/select.h"
#include "engine/compiler/options.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "profiler/trace/trace.h"

namespace ms::prof::test {

inline ir::Node make_node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
                          std::string name = "") {
  ir::Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.name = std::move(name);
  return n;
}

// x[2,8] -> Add(b) -> Relu -> Add(x) -> Sigmoid -> y
inline ir::Graph small_net() {
  ir::Graph g;
  g.inputs.push_back("x");
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 8}, {"", ""}}, {}, std::nullopt});
  g.add_initializer("b", Tensor::zeros(DType::F32, {8}));
  g.add_node(make_node("Add", {"x", "b"}, {"t0"}, "add_bias"));
  g.add_node(make_node("Relu", {"t0"}, {"t1"}, "relu"));
  g.add_node(make_node("Add", {"t1", "x"}, {"t2"}, "residual"));
  g.add_node(make_node("Sigmoid", {"t2"}, {"y"}, "sigmoid"));
  g.outputs = {"y"};
  return g;
}

inline runtime::TensorMap small_inputs() { return {{"x", Tensor::zeros(DType::F32, {2, 8})}}; }

inline TracePtr record(runtime::ExecMode mode, int iters = 2, compiler::JitLevel jit = compiler::JitLevel::O1) {
  // Tensors hold their allocator: the backend outlives every trace and output of the tests.
  static std::unique_ptr<runtime::Backend> be = backends::create_cpu_backend(1);
  session::RunRequest po;
  po.mode = mode;
  po.iters = iters;
  po.warmup = 1;
  po.compile.jit_level = jit;
  po.profile = true;
  po.metadata["model"] = "small_net";
  auto run = session::run_model(small_net(), small_inputs(), *be, po);
  EXPECT_TRUE(run) << run.status().message();
  return run ? run->trace : nullptr;
}

// Every event has the fields its phase needs; ts never goes back on a track; flows are paired.
inline void check_chrome_structure(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("traceEvents"));
  std::map<std::pair<int64_t, int64_t>, double> last_ts;
  std::map<uint64_t, int> flow_ends;
  for (size_t i = 0; i < j["traceEvents"].size(); ++i) {
    const auto& e = j["traceEvents"][i];
    SCOPED_TRACE("event " + std::to_string(i) + ": " + e.dump().substr(0, 200));
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string());
    const std::string ph = e["ph"];
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer());
    if (ph == "M") {
      ASSERT_TRUE(e.contains("name") && e.contains("args"));
      continue;
    }
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number());
    if (ph == "X") {
      ASSERT_TRUE(e.contains("name") && e["name"].is_string());
      ASSERT_TRUE(e.contains("tid") && e.contains("dur") && e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
      ASSERT_TRUE(e.contains("args") && e["args"].is_object());
      const auto key = std::make_pair(e["pid"].get<int64_t>(), e["tid"].get<int64_t>());
      auto it = last_ts.find(key);
      if (it != last_ts.end()) {
        EXPECT_GE(e["ts"].get<double>(), it->second) << "ts goes back on a track";
      }
      last_ts[key] = e["ts"].get<double>();
      const std::string kind = e["args"].value("kind", "");
      if (kind == "op" || (kind == "kernel" && e["args"].contains("node_id"))) {
        for (const char* k : {"node_id", "op", "origins", "shapes", "flops", "bytes"}) {
          EXPECT_TRUE(e["args"].contains(k)) << "missing args." << k;
        }
      }
    } else if (ph == "C") {
      ASSERT_TRUE(e.contains("name") && e.contains("args") && e["args"].is_object() && !e["args"].empty());
      for (const auto& [k, v] : e["args"].items()) EXPECT_TRUE(v.is_number()) << k;
    } else if (ph == "s" || ph == "f") {
      ASSERT_TRUE(e.contains("id") && e.contains("tid"));
      flow_ends[e["id"].get<uint64_t>()] += ph == "s" ? 1 : 100;
      if (ph == "f") {
        EXPECT_EQ(e.value("bp", ""), "e");
      }
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  for (const auto& [id, n] : flow_ends) EXPECT_EQ(n, 101) << "flow " << id << " is not one start and one finish";
}

}  // namespace ms::prof::test
