// Layout propagation at O2: activations between convolutions stay in oneDNN's blocked layout (no
// reorder between two convs), and the outputs equal the eager run's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/value_capture.h"
#include "tests/engine/compiler_test_util.h"

namespace ms {
namespace {

// The graph's first input filled with values in [-1, 1).
runtime::TensorMap layout_test_inputs(const ir::Graph& g, uint32_t seed) {
  const ir::ValueType& t = g.value(g.inputs[0])->type;
  std::vector<float> x(static_cast<size_t>(numel(*t.dims)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = u(rng);
  return {{g.inputs[0], Tensor::from_vector<float>(x, *t.dims)}};
}

TEST(CompilerLayout, ResNetKeepsActivationsBlockedBetweenConvs) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  const ir::ValueType t = g->value(in)->type;
  std::map<std::string, ir::ValueType> sig{{in, t}};
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(*g, *be, sig, o2);
  ASSERT_TRUE(c) << c.status().message();
  int dst_blocked = 0, src_blocked = 0, residual_blocked = 0;
  for (const auto& n : (*c)->graph().nodes()) {
    dst_blocked += n.attr_int("dst_blocked", 0) != 0;
    src_blocked += n.attr_int("src_blocked", 0) != 0;
    residual_blocked += n.attr_int("residual_blocked", 0) != 0;
    for (const auto& o : n.outputs)  // graph outputs are never left blocked
      if (n.attr_int("dst_blocked", 0)) {
        EXPECT_EQ(std::count(g->outputs.begin(), g->outputs.end(), o), 0) << o;
      }
  }
  EXPECT_GT(dst_blocked, 10);
  EXPECT_GT(src_blocked, 10);
  EXPECT_GT(residual_blocked, 2);

  const auto [a, b] = testing::eager_and_compiled(*g, *be, **c, layout_test_inputs(*g, 3));
  ASSERT_TRUE(a.defined() && b.defined());
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-3f + 1e-3f * std::abs(a.data<float>()[i])) << i;
  }
}

// Channels not a multiple of the block (16 with AVX-512, 8 below; 20 is neither) between convs stay
// blocked too, padded to the block, as MobileNetV2's 24 do with AVX-512: the activation, a residual
// and a conv's input. Such a value takes the padded bytes in the arena, the outputs equal the eager
// run's with and without the memory plan, and a tap sees the value itself (kept, or as statistics
// only) as the eager run does.
TEST(CompilerLayout, ChannelsNotAMultipleOfTheBlockStayBlockedPadded) {
  const ir::Graph graph = testing::parse_graph(R"(
    input x: f32[1,16,12,12]
    init w1: f32[20,16,1,1] = 0.1 -0.2 0.05 0.3 -0.15
    init b1: f32[20] = 0.1 -0.1 0.2
    init w2: f32[20,20,3,3] = 0.05 -0.1 0.02 0.07 -0.03
    init w3: f32[20,20,1,1] = 0.2 -0.1 0.15
    init w4: f32[16,20,1,1] = 0.1 0.2 -0.3
    a = Conv(x, w1, b1)
    ar = Relu(a)
    c = Conv(ar, w2) {pads=[1,1,1,1]}
    s = Add(c, ar)
    sr = Relu(s)
    d = Conv(sr, w3)
    e = Conv(d, w4)
    output e
  )");
  const ir::Graph* g = &graph;
  auto be = backends::create_cpu_backend(1);
  const runtime::TensorMap inputs = testing::inputs_of(graph, 5);
  const std::string in = g->inputs[0];
  const ir::ValueType t = g->value(in)->type;
  runtime::EagerExecutor eager(*g, *be);
  runtime::ValueCapture eager_values;
  runtime::RunOptions eager_opts;
  eager_opts.tap = &eager_values;
  auto want = eager.run(inputs, eager_opts);
  ASSERT_TRUE(want) << want.status().message();
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-3 + 1e-3 * std::abs(a); };
  for (bool plan : {true, false}) {
    SCOPED_TRACE(plan ? "memory plan" : "no memory plan");
    compiler::CompileOptions o2;
    o2.jit_level = compiler::JitLevel::O2;
    if (!plan) o2.disabled_passes = {"plan-memory"};
    auto c = compiler::compile_executor(*g, *be, {{in, t}}, o2);
    ASSERT_TRUE(c) << c.status().message();
    std::string padded;  // a value left blocked with padded channels, read blocked by a conv
    int64_t block = 0;
    int padded_values = 0, padded_residuals = 0;
    for (const auto& n : (*c)->graph().nodes()) {
      const int64_t b = n.attr_int("layout_block", 16);
      if (n.attr_int("residual_blocked", 0) && (*(*c)->graph().value(n.inputs[3])->type.dims)[1] % b != 0)
        ++padded_residuals;
      const ir::Value* v = n.outputs.empty() ? nullptr : (*c)->graph().value(n.outputs[0]);
      if (!n.attr_int("dst_blocked", 0) || !v || (*v->type.dims)[1] % b == 0) continue;
      padded = n.outputs[0];
      block = b;
      ++padded_values;
    }
    ASSERT_FALSE(padded.empty()) << "no value blocked with padded channels";
    EXPECT_EQ(padded_values, 3);  // ar (a conv's input and a residual), sr, d
    EXPECT_EQ(padded_residuals, 1);
    const std::vector<int64_t> dims = *(*c)->graph().value(padded)->type.dims;
    if (plan) {
      const auto& slots = (*c)->memory_plan().slots;
      auto slot = std::find_if(slots.begin(), slots.end(), [&](const auto& sl) { return sl.value == padded; });
      ASSERT_NE(slot, slots.end());
      EXPECT_EQ(slot->bytes,
                static_cast<uint64_t>(numel(dims) / dims[1] * ((dims[1] + block - 1) / block * block) * 4));
    }
    for (size_t budget : {size_t{0}, size_t{1}}) {  // 1 byte: statistics only
      runtime::CaptureOptions co;
      co.budget_bytes = budget;
      runtime::ValueCapture values(co);
      runtime::RunOptions opts;
      opts.tap = &values;
      auto got = (*c)->run(inputs, opts);
      ASSERT_TRUE(got) << got.status().message();
      for (int64_t i = 0; i < (*want)[0].numel(); ++i) {
        ASSERT_TRUE(near((*want)[0].data<float>()[i], (*got)[0].data<float>()[i])) << i;
      }
      const runtime::CapturedValue* a = eager_values.find(padded);
      const runtime::CapturedValue* b = values.find(padded);
      ASSERT_TRUE(a && b) << padded;
      EXPECT_TRUE(near(a->stats.min, b->stats.min) && near(a->stats.max, b->stats.max) &&
                  near(a->stats.mean, b->stats.mean))
          << a->stats.to_string() << " against " << b->stats.to_string();
      EXPECT_EQ(a->stats.count, b->stats.count);
      if (budget == 0) {
        ASSERT_EQ(b->value.numel(), a->value.numel());
        for (int64_t i = 0; i < a->value.numel(); ++i) {
          ASSERT_TRUE(near(a->value.data<float>()[i], b->value.data<float>()[i])) << padded << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ms
