// cond / fori_loop take the right branch in both modes; C++ `if` on a traced value is a clear
// error pointing at cond; ops::print prints in both modes; a symbolic print warns.
#include <gtest/gtest.h>

#include "engine/frontend/nn/trace.h"
#include "tests/engine/nn_api_util.h"

namespace ms::nn {
namespace {

using testing::ModeScope;

// y = x * 2 when sum(x) > 0, else x - 10.
class Branchy : public Module {
 public:
  Var forward(const Var& x) override {
    return cond(F::reduce_sum(x) > 0.0, std::function<Var()>([&] { return F::mul(x, 2.0); }),
                std::function<Var()>([&] { return F::add(x, -10.0); }));
  }
};

// Sum of i * x for i in [1, 4): 6x.
class Looper : public Module {
 public:
  Var forward(const Var& x) override {
    Vars r = fori_loop(
        1, 4, [&](const Var& i, const Vars& c) { return Vars{F::add(c[0], F::mul(x, F::cast(i, DType::F32)))}; },
        {F::mul(x, 0.0)});
    return r[0];
  }
};

class PythonStyleIf : public Module {
 public:
  PythonStyleIf() { inner_ = register_module("block", std::make_shared<Inner>()); }
  Var forward(const Var& x) override { return (*inner_)(x); }

 private:
  struct Inner : Module {
    Var forward(const Var& x) override {
      if (F::reduce_sum(x) > 0.0) return F::relu(x);
      return F::neg(x);
    }
  };
  std::shared_ptr<Module> inner_;
};

TEST(NnControl, CondTakesTheRightBranchInBothModes) {
  Branchy m;
  for (float sign : {1.0f, -1.0f}) {
    Var x(Tensor::from_vector<float>({1 * sign, 2 * sign, 3 * sign}, {3}));
    for (Mode mode : {Mode::PyNative, Mode::Graph}) {
      ModeScope s(mode);
      Var y = m(x);
      ASSERT_TRUE(y.ok()) << y.status().message();
      const float expect0 = sign > 0 ? 2.0f : -11.0f;
      EXPECT_FLOAT_EQ(y.tensor()->data<float>()[0], expect0) << mode_name(mode) << " sign " << sign;
    }
  }
  // Graph mode made one If node with two subgraphs, compiled once for this signature.
  ASSERT_NE(m.graph_cache(), nullptr);
  EXPECT_EQ(m.graph_cache()->traces(), 1);
  const ir::Graph* g = m.graph_cache()->last_graph();
  ASSERT_NE(g, nullptr);
  bool has_if = false;
  for (const auto& n : g->nodes())
    if (n.op_type == "If") has_if = n.attr_graph("then_branch") && n.attr_graph("else_branch");
  EXPECT_TRUE(has_if) << ir::dump_text(*g);
}

TEST(NnControl, ForiLoopInBothModes) {
  Looper m;
  for (float v : {2.0f, -3.0f}) {
    Var x(Tensor::from_vector<float>({v, 1.0f}, {2}));
    for (Mode mode : {Mode::PyNative, Mode::Graph}) {
      ModeScope s(mode);
      Var y = m(x);
      ASSERT_TRUE(y.ok()) << mode_name(mode) << ": " << y.status().message();
      EXPECT_FLOAT_EQ(y.tensor()->data<float>()[0], 6 * v) << mode_name(mode);
      EXPECT_FLOAT_EQ(y.tensor()->data<float>()[1], 6.0f) << mode_name(mode);
    }
  }
  bool has_loop = false;
  for (const auto& n : m.graph_cache()->last_graph()->nodes()) has_loop |= n.op_type == "Loop";
  EXPECT_TRUE(has_loop);
}

TEST(NnControl, CppIfOnTracedValueIsAClearError) {
  PythonStyleIf m;
  Var x(Tensor::from_vector<float>({1, -2, 3}, {3}));
  {
    ModeScope s(Mode::PyNative);  // fine eagerly: the value is known
    Var y = m(x);
    ASSERT_TRUE(y.ok()) << y.status().message();
    EXPECT_FLOAT_EQ(y.tensor()->data<float>()[0], 1.0f);
  }
  ModeScope s(Mode::Graph);
  Var y = m(x);
  ASSERT_FALSE(y.ok());
  const std::string msg = y.status().message();
  EXPECT_NE(msg.find("module 'block'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cond"), std::string::npos) << msg;
}

TEST(NnControl, ItemOfSymbolicTensorFailsTheTrace) {
  auto g = trace_function(
      [](const Vars& in) {
        auto v = in[0].item();
        EXPECT_FALSE(v.has_value());
        return Vars{F::relu(in[0])};
      },
      {static_type(DType::F32, {2})});
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("item()"), std::string::npos) << g.status().message();
}

TEST(NnControl, PrintRunsInBothModesAndSymbolicPrintWarns) {
  struct Printer : Module {
    Var forward(const Var& x) override {
      Var y = F::mul(x, 3.0);
      ops::print("tripled", y);
      return F::add(y, 1.0);
    }
  } m;
  Var x(Tensor::from_vector<float>({1, 2}, {2}));
  for (Mode mode : {Mode::PyNative, Mode::Graph}) {
    ModeScope s(mode);
    ::testing::internal::CaptureStdout();
    Var y = m(x);
    const std::string out = ::testing::internal::GetCapturedStdout();
    ASSERT_TRUE(y.ok()) << y.status().message();
    EXPECT_NE(out.find("tripled"), std::string::npos) << mode_name(mode) << ": '" << out << "'";
    EXPECT_FLOAT_EQ(y.tensor()->data<float>()[1], 7.0f);
  }
  bool has_print = false;
  for (const auto& n : m.graph_cache()->last_graph()->nodes())
    has_print |= n.op_type == "Print" && n.domain == kModescopeDomain;
  EXPECT_TRUE(has_print);
  // Plain printing of a symbolic tensor shows it as symbolic.
  std::string shown;
  auto g = trace_function(
      [&](const Vars& in) {
        shown = in[0].to_string();
        return Vars{F::relu(in[0])};
      },
      {static_type(DType::F32, {2})});
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_NE(shown.find("SymbolicTensor"), std::string::npos) << shown;
}

}  // namespace
}  // namespace ms::nn
