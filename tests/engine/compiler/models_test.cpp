// Compiled graphs against unoptimized execution on real models: every zoo template (small sizes) and
// the PyTorch-exported models in tests/data/torch, at O0, O1 and O2 — fused graphs must match the
// unfused outputs within tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/schedule.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/program.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/tensor_compare.h"

namespace ms::compiler {
namespace {

const std::string kTorchDir = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/torch/";

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  testing_util::expect_tensors_close(got, want, rtol, atol, what);
}

// Random inputs for any graph input (f32 in [-1,1), integers in [0,4)).
runtime::TensorMap make_inputs(const ir::Graph& g) {
  runtime::TensorMap m;
  uint32_t seed = 7;
  for (const auto& in : g.inputs) {
    const ir::Value* v = g.value(in);
    if (!v || v->constant) continue;
    std::vector<int64_t> dims = v->type.dims ? *v->type.dims : std::vector<int64_t>{};
    for (auto& d : dims) d = d < 0 ? 1 : d;
    Tensor t = Tensor::empty(v->type.dtype, dims);
    for (int64_t i = 0; i < t.numel(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      if (t.dtype() == DType::F32)
        t.data<float>()[i] = static_cast<float>(seed >> 8) / float(1 << 24) * 2.f - 1.f;
      else if (t.dtype() == DType::I64)
        t.data<int64_t>()[i] = (seed >> 8) % 4;
      else if (t.dtype() == DType::I32)
        t.data<int32_t>()[i] = static_cast<int32_t>((seed >> 8) % 4);
    }
    m[in] = t;
  }
  return m;
}

std::map<std::string, ir::ValueType> signature(const runtime::TensorMap& in) {
  std::map<std::string, ir::ValueType> s;
  for (const auto& [k, t] : in) s[k] = ir::ValueType{t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())};
  return s;
}

void check_levels(const ir::Graph& g, const runtime::TensorMap& in, const std::vector<Tensor>& want, double rtol,
                  double atol, const std::string& name) {
  auto be = backends::create_cpu_backend(2);
  for (auto level : {compiler::JitLevel::O0, compiler::JitLevel::O1, compiler::JitLevel::O2}) {
    compiler::CompileOptions o;
    o.jit_level = level;
    o.verify_passes = true;
    auto c = compiler::compile_executor(g, *be, signature(in), o);
    ASSERT_TRUE(c) << name << ": " << c.status().message();
    auto got = (*c)->run(in);
    ASSERT_TRUE(got) << name << ": " << got.status().message();
    ASSERT_EQ(got->size(), want.size());
    const std::string what = name + " O" + std::to_string(static_cast<int>(level));
    for (size_t i = 0; i < want.size(); ++i) expect_close((*got)[i], want[i], rtol, atol, what);
    const auto& plan = (*c)->memory_plan();
    EXPECT_LE(plan.arena_bytes, plan.naive_bytes) << what;
    EXPECT_GE(plan.arena_bytes, plan.lower_bound) << what;
  }
}

class ZooTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooTemplate, EveryLevelMatchesEagerExecution) {
  auto g = zoo::build_graph(GetParam());
  ASSERT_TRUE(g) << g.status().message();
  const auto in = make_inputs(*g);
  auto be = backends::create_cpu_backend(2);
  runtime::EagerExecutor eager(*g, *be);
  auto want = eager.run(in);
  ASSERT_TRUE(want) << want.status().message();
  check_levels(*g, in, *want, 1e-3, 1e-4, GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Compiler, ZooTemplate,
    ::testing::Values("zoo:mnist_mlp?batch=2&hidden=64", "zoo:dense_chain?batch=2&size=32&hidden=48&classes=16",
                      "zoo:lenet5?batch=2", "zoo:resnet18?size=32&width=8&classes=10",
                      "zoo:resnet50?size=32&width=8&classes=10", "zoo:mobilenet_v2?size=32&width=8&classes=10",
                      "zoo:vgg11?size=32&width=8&hidden=32&classes=10", "zoo:inception_block?size=16&width=16",
                      "zoo:transformer_encoder?seq=8&layers=2&hidden=32&heads=4&vocab=50", "zoo:dynamic_net?size=16"));

// If branches are compiled too: Gemm + Relu fused inside both branches of dynamic_net (copies: the
// caller's graph keeps its branches), ids unique across the graph, and the If step gets every
// thread (its cost is its branch's, not its own few bytes).
TEST(CompilerSubgraphs, BranchesAreOptimizedAndTheIfStepKeepsTheThreads) {
  auto g = zoo::build_graph("zoo:dynamic_net?size=64&layers=8");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(2);
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.verify_passes = true;
  auto c = compiler::compile_executor(*g, *be, testing::signature_of(*g), o);
  ASSERT_TRUE(c) << c.status().message();
  auto count = [](const ir::Graph& b, const char* op) {
    int k = 0;
    for (const auto& n : b.nodes()) k += n.op_type == op;
    return k;
  };
  const ir::Graph& cg = (*c)->graph();
  const ir::Node* iff = nullptr;
  for (const auto& n : cg.nodes())
    if (n.op_type == "If") iff = &n;
  ASSERT_NE(iff, nullptr);
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto b = iff->attr_graph(branch);
    ASSERT_TRUE(b);
    EXPECT_GT(count(*b, "FusedGemm"), 3) << branch << "\n" << ir::dump_text(*b);
    EXPECT_EQ(count(*b, "Relu"), 0) << branch;
  }
  std::set<uint64_t> ids;
  std::function<void(const ir::Graph&)> collect = [&](const ir::Graph& x) {
    for (const auto& n : x.nodes()) {
      EXPECT_TRUE(ids.insert(n.id.value).second) << "id " << n.id.value << " twice";
      for (const auto& [k, a] : n.attrs)
        if (auto* sub = a.get_if<ir::Attribute::GraphPtr>()) collect(**sub);
    }
  };
  collect(cg);
  for (const auto& n : g->nodes())
    if (n.op_type == "If") {  // the caller's graph
      EXPECT_EQ(count(*n.attr_graph("then_branch"), "FusedGemm"), 0);
    }
  // The pass report counts the fusions inside the branches (8 + 5 Gemm + Relu pairs); the If is not
  // rewritten for its branches' sake.
  bool reported = false;
  for (const auto& r : (*c)->compile_result().reports)
    if (r.pass == "fuse-ops") {
      reported = true;
      EXPECT_EQ(r.fused, 13u);
      EXPECT_EQ(r.rewritten, 0u);
    }
  EXPECT_TRUE(reported);
  auto p = runtime::build_program(cg);
  ASSERT_TRUE(p) << p.status().message();
  const auto single = compiler::single_threaded_steps(*p, cg, compiler::CompileOptions{}.parallel_step_min_cost);
  for (size_t s = 0; s < p->steps.size(); ++s)
    if (p->steps[s].node->op_type == "If") {
      EXPECT_EQ(single[s], 0);
    }
  // Values as eager execution.
  const auto in = make_inputs(*g);
  runtime::EagerExecutor eager(*g, *be);
  auto want = eager.run(in);
  auto got = (*c)->run(in);
  ASSERT_TRUE(want && got);
  expect_close((*got)[0], (*want)[0], 1e-3, 1e-4, "dynamic_net O2");
}

class TorchModelLevels : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchModelLevels, EveryLevelMatchesPyTorch) {
  const std::string name = GetParam();
  auto g = onnx_io::load_model(kTorchDir + name + ".onnx");
  ASSERT_TRUE(g) << g.status().message();
  auto x = load_npy(kTorchDir + name + ".input.npy");
  auto want = load_npy(kTorchDir + name + ".output.npy");
  ASSERT_TRUE(x && want);
  check_levels(*g, {{g->inputs[0], *x}}, {*want}, 1e-3, 1e-4, name);
}

INSTANTIATE_TEST_SUITE_P(Compiler, TorchModelLevels,
                         ::testing::Values("mlp_op11", "resnet_tiny_op13", "mobile_tiny_op12", "encoder_tiny_op14",
                                           "encoder_tiny_op17"));

}  // namespace
}  // namespace ms::compiler
