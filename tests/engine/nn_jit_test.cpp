// jit: one trace per input signature (cached), every jit level and both exec modes agree with
// eager execution; a jitted submodule runs compiled while the rest stays eager (hybrid).
#include <gtest/gtest.h>

#include "engine/compiler/options.h"
#include "tests/engine/nn_api_util.h"

namespace ms::nn {
namespace {

using testing::max_rel_diff;
using testing::random_tensor;

TEST(NnJit, FunctionIsTracedOncePerSignature) {
  JitFunction f = jit([](const Vars& in) { return Vars{F::relu(F::add(F::mul(in[0], 2.0), in[1]))}; });
  Var a(random_tensor({2, 3}, 1)), b(random_tensor({2, 3}, 2));
  Var y1 = f(Vars{a, b})[0];
  Var y2 = f(Vars{b, a})[0];
  ASSERT_TRUE(y1.ok() && y2.ok()) << y1.status().message();
  EXPECT_EQ(f.cache().traces(), 1);
  Var c(random_tensor({4, 3}, 3));
  Var y3 = f(Vars{c, c})[0];
  ASSERT_TRUE(y3.ok());
  EXPECT_EQ(f.cache().traces(), 2);
  EXPECT_EQ(f.cache().size(), 2u);
  Var ref = F::relu(F::add(F::mul(a, 2.0), b));
  EXPECT_LE(max_rel_diff(*y1.tensor(), *ref.tensor()), 1e-6);
}

TEST(NnJit, EveryLevelAndExecModeAgreeWithEager) {
  manual_seed(3);
  auto s = std::make_shared<Sequential>();
  s->add(std::make_shared<Conv2d>(3, 4, 3, 1, 1)).add(std::make_shared<BatchNorm2d>(4)).add(std::make_shared<ReLU>());
  s->add(std::make_shared<AdaptiveAvgPool2d>()).add(std::make_shared<Flatten>()).add(std::make_shared<Dense>(4, 2));
  Var x(random_tensor({2, 3, 6, 6}, 9));
  const Tensor ref = *(*s)(x).tensor();
  for (auto level : {compiler::JitLevel::O0, compiler::JitLevel::O1, compiler::JitLevel::O2})
    for (auto exec : {runtime::ExecMode::Graph, runtime::ExecMode::PyNative}) {
      jit(*s, JitConfig{level, exec});
      Var y = (*s)(x);
      ASSERT_TRUE(y.ok()) << y.status().message();
      EXPECT_LE(max_rel_diff(*y.tensor(), ref), 1e-4);
    }
  s->clear_jit();
}

TEST(NnJit, HybridJitsOneSubmoduleOnly) {
  manual_seed(5);
  struct Net : Module {
    Net() {
      body = register_module("body", std::make_shared<Sequential>());
      body->add(std::make_shared<Dense>(6, 6)).add(std::make_shared<GELU>());
      head = register_module("head", std::make_shared<Dense>(6, 3));
    }
    Var forward(const Var& x) override { return (*head)((*body)(x)); }
    std::shared_ptr<Sequential> body;
    std::shared_ptr<Module> head;
  } net;
  Var x(random_tensor({2, 6}, 4));
  const Tensor ref = *net(x).tensor();
  jit(*net.body);
  Var y = net(x);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_LE(max_rel_diff(*y.tensor(), ref), 1e-5);
  ASSERT_NE(net.body->graph_cache(), nullptr);
  EXPECT_EQ(net.graph_cache(), nullptr);  // the parent ran eagerly
  // The compiled part keeps its module path in node and parameter names.
  const ir::Graph* g = net.body->graph_cache()->last_graph();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->nodes()[0].name, "body.0");
  EXPECT_TRUE(g->value("body.0.weight"));
}

TEST(NnJit, JittedFunctionNamesParametersByModulePath) {
  manual_seed(1);
  struct Net : Module {
    Net() { fc = register_module("fc", std::make_shared<Dense>(3, 2)); }
    Var forward(const Var& x) override { return (*fc)(x); }
    std::shared_ptr<Module> fc;
  } net;
  JitFunction f = jit([&net](const Vars& in) { return Vars{net(in[0])}; });
  Var y = f(Var(random_tensor({1, 3}, 1)));
  ASSERT_TRUE(y.ok()) << y.status().message();
  const ir::Graph* g = f.cache().last_graph();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->value("fc.weight") && g->value("fc.weight")->is_initializer());
  EXPECT_TRUE(g->value("fc.bias"));
  EXPECT_EQ(g->nodes()[0].name, "fc");
}

TEST(NnJit, GlobalModeSwitch) {
  manual_seed(2);
  Dense d(4, 2);
  Var x(random_tensor({1, 4}, 1));
  set_context(Mode::PyNative);
  const Tensor a = *d(x).tensor();
  EXPECT_EQ(d.graph_cache(), nullptr);
  set_context(Mode::Graph);
  EXPECT_EQ(get_mode(), Mode::Graph);
  const Tensor b = *d(x).tensor();
  set_context(Mode::PyNative);
  ASSERT_NE(d.graph_cache(), nullptr);
  EXPECT_LE(max_rel_diff(b, a), 1e-6);
}

}  // namespace
}  // namespace ms::nn
