#include <gtest/gtest.h>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/memory_plan.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/value_capture.h"
#include "tests/engine/plan_checks.h"

namespace ms::runtime {
namespace {

using backends::create_backend;
using backends::create_cpu_backend;
using compiler::CompileOptions;
using compiler::JitLevel;
using compiler::plan_memory;

ir::Node make(std::string op, std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

void add_input(ir::Graph& g, const std::string& name, DType dt, std::vector<int64_t> dims) {
  g.inputs.push_back(name);
  g.add_value(ir::Value{name, ir::ValueType{dt, dims, std::vector<std::string>(dims.size())}, {}, std::nullopt});
}

std::map<std::string, ir::ValueType> signature_of(const TensorMap& in) {
  std::map<std::string, ir::ValueType> s;
  for (const auto& [k, t] : in) s[k] = ir::ValueType{t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())};
  return s;
}

// x -> Add(x, b) -> Relu -> Add(.., x) -> y
ir::Graph small_net() {
  ir::Graph g;
  add_input(g, "x", DType::F32, {2, 3});
  g.add_initializer("b", Tensor::from_vector<float>({-1, 0, 1}, {3}));
  g.add_node(make("Add", {"x", "b"}, {"t0"}));
  g.add_node(make("Relu", {"t0"}, {"t1"}));
  g.add_node(make("Add", {"t1", "x"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

class CountingObserver : public RunObserver {
 public:
  void on_op_begin(const ir::Node&) override { ++ops; }
  void on_alloc(const MemoryEvent&) override { ++allocs; }
  void on_free(const MemoryEvent&) override { ++frees; }
  int ops = 0, allocs = 0, frees = 0;
};

TEST(Executor, BothModesGiveTheSameOutputs) {
  auto be = create_cpu_backend(1);
  ir::Graph g = small_net();
  TensorMap in{{"x", Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3})}};
  EagerExecutor eager(g, *be);
  auto a = eager.run(in);
  ASSERT_TRUE(a) << a.status().message();
  CompileOptions o0;  // O0: no fusion, one kernel per node as in eager mode
  o0.jit_level = JitLevel::O0;
  auto c = compiler::compile_executor(g, *be, signature_of(in), o0);
  ASSERT_TRUE(c) << c.status().message();
  auto b = (*c)->run(in);
  ASSERT_TRUE(b) << b.status().message();
  // relu(x + b) + x
  const std::vector<float> want{1, -2, 7, -4, 10, -6};
  for (int i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ((*a)[0].data<float>()[i], want[static_cast<size_t>(i)]);
    EXPECT_FLOAT_EQ((*b)[0].data<float>()[i], want[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(eager.last_stats().kernels, 3);
  EXPECT_EQ((*c)->last_stats().kernels, 3);
}

TEST(Executor, EagerHandsEveryValueToATap) {
  auto be = create_cpu_backend(1);
  EagerExecutor eager(small_net(), *be);
  ValueCapture capture;
  RunOptions opts;
  opts.tap = &capture;
  ASSERT_TRUE(eager.run({{"x", Tensor::zeros(DType::F32, {2, 3})}}, opts));
  const CapturedValue* t0 = capture.find("t0");
  ASSERT_NE(t0, nullptr);
  EXPECT_FLOAT_EQ(t0->value.data<float>()[0], -1.0f);
}

TEST(Executor, ObserverSeesEveryOpAndBalancedMemory) {
  auto be = create_cpu_backend(1);
  EagerExecutor eager(small_net(), *be);
  CountingObserver obs;
  RunOptions opts;
  opts.observer = &obs;
  {
    auto r = eager.run({{"x", Tensor::zeros(DType::F32, {2, 3})}}, opts);
    ASSERT_TRUE(r);
  }
  EXPECT_EQ(obs.ops, 3);
  EXPECT_EQ(obs.allocs, 3);
  EXPECT_EQ(obs.frees, 3);  // the output's block is freed when the result dies
}

TEST(Executor, MissingInputIsAnError) {
  auto be = create_cpu_backend(1);
  EagerExecutor eager(small_net(), *be);
  auto r = eager.run({});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos);
}

TEST(Executor, GraphModeRejectsAnotherSignature) {
  auto be = create_cpu_backend(1);
  TensorMap in{{"x", Tensor::zeros(DType::F32, {2, 3})}};
  auto c = compiler::compile_executor(small_net(), *be, signature_of(in));
  ASSERT_TRUE(c);
  auto r = (*c)->run({{"x", Tensor::zeros(DType::F32, {4, 3})}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("compiled for"), std::string::npos);
}

TEST(MemoryPlan, ReusesMemoryOfDeadValues) {
  // a: steps 0-1, b: 1-2, c: 2-3 -- a and c never overlap in time and can share.
  std::vector<MemorySlot> slots(3);
  for (int i = 0; i < 3; ++i) {
    slots[i].value = std::string(1, static_cast<char>('a' + i));
    slots[i].bytes = 1000;
    slots[i].first_step = i;
    slots[i].last_step = i + 1;
  }
  MemoryPlan p = plan_memory(slots);
  EXPECT_EQ(p.arena_bytes, 2 * align_up(1000, 64));
  EXPECT_EQ(p.lower_bound, 2 * align_up(1000, 64));
  testing::expect_no_overlap(p);
}

TEST(Executor, GraphModePlansIntermediatesInOneArena) {
  auto be = create_cpu_backend(1);
  TensorMap in{{"x", Tensor::zeros(DType::F32, {2, 3})}};
  CompileOptions o0;  // O0: the three nodes stay (O1 fuses them into one loop)
  o0.jit_level = JitLevel::O0;
  auto c = compiler::compile_executor(small_net(), *be, signature_of(in), o0);
  ASSERT_TRUE(c);
  const MemoryPlan& p = (*c)->memory_plan();
  EXPECT_EQ(p.slots.size(), 2u);  // t0, t1 (y is a graph output)
  EXPECT_GE(p.arena_bytes, p.lower_bound);
}

// If with outer-scope values in both branches.
ir::Graph if_net() {
  ir::Graph g;
  add_input(g, "c", DType::Bool, {});
  add_input(g, "x", DType::F32, {3});
  auto then_g = std::make_shared<ir::Graph>(g.ids());
  then_g->name = "then";
  then_g->add_node(make("Relu", {"x"}, {"r"}));
  then_g->outputs = {"r"};
  auto else_g = std::make_shared<ir::Graph>(g.ids());
  else_g->name = "else";
  else_g->add_node(make("Neg", {"x"}, {"n"}));
  else_g->outputs = {"n"};
  ir::Node n = make("If", {"c"}, {"y"});
  n.attrs["then_branch"] = ir::Attribute(then_g);
  n.attrs["else_branch"] = ir::Attribute(else_g);
  g.add_node(n);
  g.outputs = {"y"};
  return g;
}

TEST(ControlFlow, IfRunsTheChosenBranchInBothModes) {
  auto be = create_cpu_backend(1);
  ir::Graph g = if_net();
  ASSERT_TRUE(ir::verify(g).is_ok()) << ir::verify(g).message();
  for (bool cond : {true, false}) {
    TensorMap in{{"c", Tensor::scalar<bool>(cond)}, {"x", Tensor::from_vector<float>({-1, 2, -3}, {3})}};
    EagerExecutor eager(g, *be);
    auto a = eager.run(in);
    ASSERT_TRUE(a) << a.status().message();
    auto c = compiler::compile_executor(g, *be, signature_of(in));
    ASSERT_TRUE(c) << c.status().message();
    auto b = (*c)->run(in);
    ASSERT_TRUE(b) << b.status().message();
    const float want0 = cond ? 0.0f : 1.0f;
    EXPECT_FLOAT_EQ((*a)[0].data<float>()[0], want0);
    EXPECT_FLOAT_EQ((*b)[0].data<float>()[0], want0);
  }
}

// Loop: 4 trips, carried sum += x, scan output = sum at each step.
ir::Graph loop_net() {
  ir::Graph g;
  add_input(g, "x", DType::F32, {2});
  g.add_initializer("trips", Tensor::scalar<int64_t>(4));
  g.add_initializer("cond", Tensor::scalar<bool>(true));
  g.add_initializer("zero", Tensor::from_vector<float>({0, 0}, {2}));
  auto body = std::make_shared<ir::Graph>(g.ids());
  body->name = "body";
  for (const auto& [name, dt] :
       std::vector<std::pair<std::string, DType>>{{"i", DType::I64}, {"cin", DType::Bool}, {"s", DType::F32}}) {
    body->inputs.push_back(name);
    body->add_value(ir::Value{name, ir::ValueType{dt, std::nullopt, {}}, {}, std::nullopt});
  }
  body->add_node(make("Identity", {"cin"}, {"cout"}));
  body->add_node(make("Add", {"s", "x"}, {"s2"}));
  body->add_node(make("Identity", {"s2"}, {"scan"}));
  body->outputs = {"cout", "s2", "scan"};
  ir::Node n = make("Loop", {"trips", "cond", "zero"}, {"sum", "history"});
  n.attrs["body"] = ir::Attribute(body);
  g.add_node(n);
  g.outputs = {"sum", "history"};
  return g;
}

TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  auto be = create_cpu_backend(1);
  ir::Graph g = loop_net();
  ASSERT_TRUE(ir::verify(g).is_ok()) << ir::verify(g).message();
  TensorMap in{{"x", Tensor::from_vector<float>({1, 2}, {2})}};
  EagerExecutor eager(g, *be);
  auto a = eager.run(in);
  ASSERT_TRUE(a) << a.status().message();
  CompileOptions o0;  // O0: no fusion, one kernel per node as in eager mode
  o0.jit_level = JitLevel::O0;
  auto c = compiler::compile_executor(g, *be, signature_of(in), o0);
  ASSERT_TRUE(c) << c.status().message();
  auto b = (*c)->run(in);
  ASSERT_TRUE(b) << b.status().message();
  for (auto* r : {&*a, &*b}) {
    EXPECT_FLOAT_EQ((*r)[0].data<float>()[1], 8.0f);
    ASSERT_EQ((*r)[1].shape(), (Shape{4, 2}));
    EXPECT_FLOAT_EQ((*r)[1].data<float>()[2 * 2 + 0], 3.0f);
  }
}

}  // namespace
}  // namespace ms::runtime

namespace ms::runtime {
namespace {

// A Reshape whose target shape is only known at run time must not hand out a view of an arena slot
// that later steps reuse.
TEST(Executor, GraphModeViewsNeverAliasReusedArenaSlots) {
  ir::Graph g;
  add_input(g, "x", DType::F32, {4});
  add_input(g, "shape", DType::I64, {2});
  g.add_node(make("Relu", {"x"}, {"t"}));
  g.add_node(make("Reshape", {"t", "shape"}, {"y"}));
  g.add_node(make("Neg", {"x"}, {"u"}));
  g.add_node(make("Add", {"u", "u"}, {"z"}));
  g.outputs = {"y", "z"};
  auto be = create_cpu_backend(1);
  TensorMap in{{"x", Tensor::from_vector<float>({1, -2, 3, -4}, {4})},
               {"shape", Tensor::from_vector<int64_t>({2, 2}, {2})}};
  auto c = compiler::compile_executor(g, *be, signature_of(in));
  ASSERT_TRUE(c) << c.status().message();
  auto r = (*c)->run(in);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ((*r)[0].shape(), (Shape{2, 2}));
  const std::vector<float> want{1, 0, 3, 0};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ((*r)[0].data<float>()[i], want[static_cast<size_t>(i)]);
}

}  // namespace
}  // namespace ms::runtime
