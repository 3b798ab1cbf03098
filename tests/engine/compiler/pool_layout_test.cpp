// O2 layout propagation through pools: a MaxPool or GlobalAveragePool between blocked convs becomes
// a FusedPool reading and writing the blocked layout (no reorder, no reorder scratch outside the
// arena), outputs equal the eager run's; a pool with nothing blocked around it stays the plain op.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/ops/fused.h"
#include "engine/runtime/executor.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

runtime::TensorMap random_inputs(const ir::Graph& g) {
  const std::string in = g.inputs[0];
  const ir::ValueType t = g.value(in)->type;
  std::vector<float> x(static_cast<size_t>(numel(*t.dims)));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = u(rng);
  return {{in, Tensor::from_vector<float>(x, *t.dims)}};
}

TEST(CompilerPoolLayout, ResNetPoolsStayInTheBlockedRegion) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  std::map<std::string, ir::ValueType> sig{{in, g->value(in)->type}};
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(*g, *be, sig, o2);
  ASSERT_TRUE(c) << c.status().message();
  int max_pools = 0, avg_pools = 0, plain_pools = 0;
  for (const auto& n : (*c)->graph().nodes()) {
    if (n.op_type == "MaxPool" || n.op_type == "GlobalAveragePool") ++plain_pools;
    if (n.op_type != "FusedPool") continue;
    if (n.attr_string("pool", "") == "MaxPool") {
      ++max_pools;  // the stem conv writes blocked, the first block's convs read blocked
      EXPECT_EQ(n.attr_int("src_blocked", 0), 1);
      EXPECT_EQ(n.attr_int("dst_blocked", 0), 1);
    }
    if (n.attr_string("pool", "") == "GlobalAveragePool") {
      ++avg_pools;  // reads the last block blocked; Flatten reads its output
      EXPECT_EQ(n.attr_int("src_blocked", 0), 1);
      EXPECT_EQ(n.attr_int("dst_blocked", 0), 0);
    }
  }
  EXPECT_EQ(max_pools, 1);
  EXPECT_EQ(avg_pools, 1);
  EXPECT_EQ(plain_pools, 0);
  // The stem conv now writes its output blocked (read only by the pool).
  for (const auto& n : (*c)->graph().nodes()) {
    if (n.name != "conv1") continue;
    EXPECT_EQ(n.attr_int("dst_blocked", 0), 1);
  }

  const auto [a, b] = testing::eager_and_compiled(*g, *be, **c, random_inputs(*g));
  ASSERT_TRUE(a.defined() && b.defined());
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-3f + 1e-3f * std::abs(a.data<float>()[i])) << i;
  }
}

// Kernel scratch (reorders at region boundaries, oneDNN scratchpads) is learned on the first run and
// planned in the arena from the second on: then the only memory outside the arena is the output.
TEST(CompilerPoolLayout, ScratchMovesIntoTheArena) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(*g, *be, {{in, g->value(in)->type}}, o2);
  ASSERT_TRUE(c) << c.status().message();
  const runtime::TensorMap inputs = random_inputs(*g);
  auto first = (*c)->run(inputs);
  ASSERT_TRUE(first) << first.status().message();
  const uint64_t arena_before = (*c)->memory_plan().arena_bytes;
  auto second = (*c)->run(inputs);
  ASSERT_TRUE(second) << second.status().message();
  const auto& plan = (*c)->memory_plan();
  int scratch_slots = 0;
  for (const auto& s : plan.slots) {
    if (s.value.size() < 8 || s.value.compare(s.value.size() - 8, 8, " scratch") != 0) continue;
    ++scratch_slots;
    EXPECT_LE(s.last_step - s.first_step, 0) << s.value << ": scratch lives during its step only";
  }
  EXPECT_GT(scratch_slots, 0);
  EXPECT_GE(plan.arena_bytes, arena_before);
  EXPECT_GE(plan.arena_bytes, plan.lower_bound);
  // Outside the arena: the graph output (5 floats, one 64-byte size class).
  EXPECT_LE((*c)->last_stats().peak_bytes, plan.arena_bytes + 64);
  const Tensor& a = (*first)[0];
  const Tensor& b = (*second)[0];
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "scratch in the arena changes no result";
  const uint64_t arena_after = plan.arena_bytes;
  auto third = (*c)->run(inputs);  // the plan is final after the second run
  ASSERT_TRUE(third) << third.status().message();
  EXPECT_EQ((*c)->memory_plan().arena_bytes, arena_after);
}

// nchw <-> nChw<block>c by hand (C a multiple of the block), for feeding and reading blocked kernels.
template <class T> Tensor pool_test_block(const Tensor& t, bool to_blocked, int64_t block = 16) {
  const int64_t c = t.dim(1), hw = t.dim(2) * t.dim(3);
  Tensor o = Tensor::empty(t.dtype(), t.shape());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < hw; ++i) {
      const int64_t plain = ch * hw + i, blocked = ((ch / block) * hw + i) * block + ch % block;
      o.data<T>()[to_blocked ? blocked : plain] = t.data<T>()[to_blocked ? plain : blocked];
    }
  return o;
}

// MaxPool from a blocked input into a blocked output runs our loop (a vector of a block's channels
// per output pixel): equal to the plain op exactly, over strides, asymmetric pads, dilations and
// ceil_mode, with 16- and 8-channel blocks, in f32 and bf16, on a plane small enough for one thread
// and on a ResNet stem's (threaded).
TEST(CompilerPoolLayout, MaxPoolsOverBlockedInputsEqualThePlainOp) {
  struct Case {
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil, side;
  };
  const std::vector<Case> cases = {{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 56},
                                   {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 9},
                                   {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, 9},
                                   {{3, 2}, {1, 2}, {1, 0, 2, 1}, {1, 1}, 0, 10},
                                   {{2, 3}, {1, 1}, {0, 1, 1, 0}, {2, 1}, 1, 11}};
  for (const int64_t block : {int64_t{16}, int64_t{8}})
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& cs = cases[k];
      SCOPED_TRACE("case " + std::to_string(k) + " block " + std::to_string(block));
      const std::map<std::string, ir::Attribute> attrs{{"kernel_shape", ir::Attribute(cs.kernel)},
                                                       {"strides", ir::Attribute(cs.strides)},
                                                       {"pads", ir::Attribute(cs.pads)},
                                                       {"dilations", ir::Attribute(cs.dilations)},
                                                       {"ceil_mode", ir::Attribute(cs.ceil)}};
      const Tensor x = test::random_f32({1, 32, cs.side, cs.side}, 13 + static_cast<uint32_t>(k));
      auto plain = test::run_kernel(test::make_node("MaxPool", 1, 1, attrs), {x});
      ASSERT_TRUE(plain) << plain.status().message();
      auto fused_attrs = attrs;
      fused_attrs.emplace("pool", ir::Attribute(std::string("MaxPool")));
      fused_attrs.emplace("src_blocked", ir::Attribute(int64_t{1}));
      fused_attrs.emplace("dst_blocked", ir::Attribute(int64_t{1}));
      fused_attrs.emplace("layout_block", ir::Attribute(block));
      ir::Node node = test::make_node("FusedPool", 1, 1, fused_attrs);
      node.domain = ops::kFusedDomain;
      auto got = test::run_kernel_full(node, {pool_test_block<float>(x, true, block)});
      ASSERT_TRUE(got) << got.status().message();
      EXPECT_EQ(got->impl, "fused:max_pool_blocked");
      const Tensor& a = (*plain)[0];
      ASSERT_EQ(a.shape(), got->outputs[0].shape());
      const Tensor b = pool_test_block<float>(got->outputs[0], false, block);
      for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
      // A bf16 graph's: the maxima of the bf16 values, exactly.
      const Tensor xh = test::to_bf16(x);
      Tensor xr = Tensor::empty(DType::F32, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) xr.data<float>()[i] = static_cast<float>(xh.data<bf16>()[i]);
      auto plain_r = test::run_kernel(test::make_node("MaxPool", 1, 1, attrs), {xr});
      ASSERT_TRUE(plain_r) << plain_r.status().message();
      auto got_h = test::run_kernel_full(node, {pool_test_block<bf16>(xh, true, block)});
      ASSERT_TRUE(got_h) << got_h.status().message();
      EXPECT_EQ(got_h->impl, "fused:max_pool_blocked");
      ASSERT_EQ(got_h->outputs[0].dtype(), DType::BF16);
      const Tensor bh = pool_test_block<bf16>(got_h->outputs[0], false, block);
      for (int64_t i = 0; i < bh.numel(); ++i) {
        ASSERT_EQ((*plain_r)[0].data<float>()[i], static_cast<float>(bh.data<bf16>()[i])) << i;
      }
    }
}

// Global pools over a blocked f32 input run our loop (a vector of a block's channels over the plane):
// equal to the plain ops (max exactly, NaN included; mean within rounding), with 16- and 8-channel
// blocks, at one and at many samples (the loop's threaded form).
TEST(CompilerPoolLayout, GlobalPoolsOverBlockedInputsEqualThePlainOps) {
  for (const int64_t n : {int64_t{1}, int64_t{40}})
    for (const int64_t block : {int64_t{16}, int64_t{8}})
      for (const std::string pool : {"GlobalAveragePool", "GlobalMaxPool"}) {
        SCOPED_TRACE(pool + " block " + std::to_string(block) + " n " + std::to_string(n));
        Tensor x = test::random_f32({n, 32, 7, 7}, 11);
        x.data<float>()[5 * 49 + 3] = std::nanf("");  // channel 5 of sample 0
        auto plain = test::run_kernel(test::make_node(pool, 1, 1), {x});
        ASSERT_TRUE(plain) << plain.status().message();
        ir::Node node = test::make_node("FusedPool", 1, 1,
                                        {{"pool", ir::Attribute(pool)},
                                         {"src_blocked", ir::Attribute(int64_t{1})},
                                         {"dst_blocked", ir::Attribute(int64_t{1})},
                                         {"layout_block", ir::Attribute(block)}});
        node.domain = ops::kFusedDomain;
        Tensor xb = Tensor::empty(DType::F32, x.shape());
        for (int64_t s = 0; s < n; ++s) {
          const Tensor one = pool_test_block<float>(
              Tensor::from_vector<float>(
                  std::vector<float>(x.data<float>() + s * 32 * 49, x.data<float>() + (s + 1) * 32 * 49),
                  {1, 32, 7, 7}),
              true, block);
          std::memcpy(xb.data<float>() + s * 32 * 49, one.raw(), one.nbytes());
        }
        auto got = test::run_kernel_full(node, {xb});
        ASSERT_TRUE(got) << got.status().message();
        EXPECT_EQ(got->impl, "fused:global_pool_blocked");
        const Tensor& a = (*plain)[0];
        const Tensor& b = got->outputs[0];
        ASSERT_EQ(a.numel(), b.numel());
        for (int64_t i = 0; i < a.numel(); ++i) {
          const float u = a.data<float>()[i], v = b.data<float>()[i];
          if (std::isnan(u)) {
            EXPECT_TRUE(std::isnan(v)) << i;
          } else {
            EXPECT_NEAR(u, v, pool == "GlobalMaxPool" ? 0.f : 1e-6f) << i;
          }
        }
      }
}

// The same loop over a bf16 graph's blocked bf16 input: the maximum exactly, the mean summed in f32
// and rounded once (within one bf16 step of the mean of the bf16 values taken in double).
TEST(CompilerPoolLayout, GlobalPoolsOverBlockedBf16InputsSumInF32) {
  for (const int64_t n : {int64_t{1}, int64_t{40}})
    for (const std::string pool : {"GlobalAveragePool", "GlobalMaxPool"}) {
      SCOPED_TRACE(pool + " n " + std::to_string(n));
      const Tensor xf = test::random_f32({n, 32, 7, 7}, 12);
      const Tensor x = test::to_bf16(xf);
      ir::Node node = test::make_node("FusedPool", 1, 1,
                                      {{"pool", ir::Attribute(pool)},
                                       {"src_blocked", ir::Attribute(int64_t{1})},
                                       {"dst_blocked", ir::Attribute(int64_t{1})},
                                       {"layout_block", ir::Attribute(int64_t{16})}});
      node.domain = ops::kFusedDomain;
      Tensor xb = Tensor::empty(DType::BF16, x.shape());
      for (int64_t s = 0; s < n; ++s) {
        Tensor one = Tensor::empty(DType::BF16, {1, 32, 7, 7});
        std::memcpy(one.raw(), x.data<bf16>() + s * 32 * 49, one.nbytes());
        const Tensor blocked = pool_test_block<bf16>(one, true);
        std::memcpy(xb.data<bf16>() + s * 32 * 49, blocked.raw(), blocked.nbytes());
      }
      auto got = test::run_kernel_full(node, {xb});
      ASSERT_TRUE(got) << got.status().message();
      EXPECT_EQ(got->impl, "fused:global_pool_blocked");
      const Tensor& y = got->outputs[0];
      ASSERT_EQ(y.dtype(), DType::BF16);
      ASSERT_EQ(y.numel(), n * 32);
      for (int64_t s = 0; s < n; ++s)
        for (int64_t c = 0; c < 32; ++c) {
          double want = pool == "GlobalMaxPool" ? -INFINITY : 0.0;
          for (int64_t i = 0; i < 49; ++i) {
            const double v = static_cast<float>(x.data<bf16>()[(s * 32 + c) * 49 + i]);
            want = pool == "GlobalMaxPool" ? std::max(want, v) : want + v / 49;
          }
          const double v = static_cast<float>(y.data<bf16>()[s * 32 + c]);  // [N, C, 1, 1]: plain and blocked alike
          EXPECT_NEAR(v, want, pool == "GlobalMaxPool" ? 0.0 : std::abs(want) / 128 + 1e-6) << s << " " << c;
        }
    }
}

// FusedPool with `to` (a bf16 graph's Cast folded into the pool): the f32 max pool rounded to bf16,
// bit for bit what the Cast after the plain pool gave, with plain and blocked operands.
TEST(CompilerPoolLayout, PoolRoundingToBf16EqualsTheCastAfterThePool) {
  std::map<std::string, ir::Attribute> attrs{{"kernel_shape", ir::Attribute(std::vector<int64_t>{3, 3})},
                                             {"strides", ir::Attribute(std::vector<int64_t>{2, 2})},
                                             {"pads", ir::Attribute(std::vector<int64_t>{1, 1, 1, 1})}};
  const Tensor x = test::random_f32({1, 32, 9, 9}, 3);
  auto plain = test::run_kernel(test::make_node("MaxPool", 1, 1, attrs), {x});
  ASSERT_TRUE(plain) << plain.status().message();
  const Tensor want = test::to_bf16((*plain)[0]);
  for (const bool blocked : {false, true}) {
    SCOPED_TRACE(blocked ? "blocked" : "plain");
    auto a = attrs;
    a["pool"] = ir::Attribute(std::string("MaxPool"));
    a["to"] = ir::Attribute(static_cast<int64_t>(dtype_to_onnx(DType::BF16)));
    if (blocked) {
      for (const char* k : {"src_blocked", "dst_blocked"}) a[k] = ir::Attribute(int64_t{1});
      a["layout_block"] = ir::Attribute(int64_t{16});
    }
    ir::Node n = test::make_node("FusedPool", 1, 1, a);
    n.domain = ops::kFusedDomain;
    auto got = test::run_kernel(n, {blocked ? pool_test_block<float>(x, true) : x});
    ASSERT_TRUE(got) << got.status().message();
    ASSERT_EQ((*got)[0].dtype(), DType::BF16);
    const Tensor y = blocked ? pool_test_block<bf16>((*got)[0], false) : (*got)[0];
    ASSERT_EQ(y.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(y.raw(), want.raw(), want.nbytes()), 0);
  }
  // Only bf16 from f32.
  auto bad = attrs;
  bad["pool"] = ir::Attribute(std::string("MaxPool"));
  bad["to"] = ir::Attribute(int64_t{10});
  ir::Node n = test::make_node("FusedPool", 1, 1, bad);
  n.domain = ops::kFusedDomain;
  auto refused = test::run_kernel(n, {x});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("to must be bf16"), std::string::npos) << refused.status().message();
}

// --precision bf16 on a ResNet: the stem conv and its MaxPool stay f32 (the layer reading the input),
// and the Cast to bf16 folds into the pool, which writes the blocked bf16 the first block's convs
// read (where oneDNN computes bf16): no Cast, no reorder between the stem and the first block; the
// global pool reads the last block's bf16 result blocked.
TEST(CompilerPoolLayout, Bf16ResNetStemPoolWritesTheFirstBlocksBf16) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.amp = compiler::AmpLevel::O2;
  o.amp_input_layers_f32 = true;
  auto c = compiler::compile_executor(*g, *be, {{in, g->value(in)->type}}, o);
  ASSERT_TRUE(c) << c.status().message();
  const ir::Graph& cg = (*c)->graph();
  const ir::Node* pool = nullptr;
  for (const auto& n : cg.nodes())
    if (n.op_type == "FusedPool" && n.attr_string("pool", "") == "MaxPool") pool = &n;
  ASSERT_NE(pool, nullptr) << ir::dump_text(cg);
  EXPECT_EQ(pool->attr_int("to", 0), dtype_to_onnx(DType::BF16));
  EXPECT_EQ(cg.value(pool->inputs[0])->type.dtype, DType::F32);
  EXPECT_EQ(cg.value(pool->outputs[0])->type.dtype, DType::BF16);
  // Where the CPU lacks native bf16 the bf16 convs stay plain, and the small stem conv, alone in its
  // blocked region, runs plain too (unblock_small_lone): the pool reads it plain.
  EXPECT_EQ(pool->attr_int("src_blocked", 0), be->native_bf16() ? 1 : 0) << ir::dump_text(cg);
  EXPECT_EQ(pool->attr_int("dst_blocked", 0), be->native_bf16() ? 1 : 0);
  for (const auto& n : cg.nodes())
    for (const auto& i : n.inputs) EXPECT_FALSE(n.op_type == "Cast" && i == pool->outputs[0]) << ir::dump_text(cg);
  // The global pool after the last block pools bf16 where it is, blocked, where oneDNN computes bf16.
  int bf16_global_pools = 0;
  for (const auto& n : cg.nodes()) {
    if (n.op_type != (be->native_bf16() ? "FusedPool" : "GlobalAveragePool")) continue;
    if (n.op_type == "FusedPool" && n.attr_string("pool", "") != "GlobalAveragePool") continue;
    bf16_global_pools += cg.value(n.inputs[0])->type.dtype == DType::BF16;
    if (be->native_bf16()) {
      EXPECT_EQ(n.attr_int("src_blocked", 0), 1);
    }
  }
  EXPECT_EQ(bf16_global_pools, 1) << ir::dump_text(cg);

  const auto [a, b] = testing::eager_and_compiled(*g, *be, **c, random_inputs(*g));
  ASSERT_TRUE(a.defined() && b.defined());
  double max_abs = 0;
  for (int64_t i = 0; i < a.numel(); ++i) max_abs = std::max(max_abs, std::abs(double{a.data<float>()[i]}));
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 0.05 * max_abs) << i;
}

// Only a Cast that rounds to nearest folds into the pool (the pool's reorder rounds so): one with
// round_mode "nearest", or any from opset 19 on; before it ONNX's f32 -> bf16 Cast drops the low
// bits, and such a Cast stays, its result as before.
TEST(CompilerPoolLayout, OnlyACastRoundingToNearestFoldsIntoThePool) {
  for (const auto& [mode, opset, folds] : {std::tuple{std::string(), int64_t{17}, false},
                                           std::tuple{std::string(", round_mode=\"nearest\""), int64_t{17}, true},
                                           std::tuple{std::string(), int64_t{19}, true}}) {
    SCOPED_TRACE(mode + " opset " + std::to_string(opset));
    ir::Graph g = testing::parse_graph(R"(
      input x: f32[1,32,32,32]
      init w: f32[64,32,3,3] = 0.02 -0.01 0.03 -0.02 0.01
      init w2: f32[64,64,3,3] = 0.05 -0.02 0.01
      a = Conv(x, w) {pads=[1,1,1,1]}
      p = MaxPool(a) {kernel_shape=[2,2], strides=[2,2]}
      c = Cast(p) {to=16)" + mode + R"(}
      f = Cast(c) {to=1}
      y = Conv(f, w2) {pads=[1,1,1,1]}
      output y
    )");
    g.opsets[""] = opset;
    auto be = backends::create_cpu_backend(1);
    compiler::CompileOptions o;
    o.jit_level = compiler::JitLevel::O2;
    auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
    ASSERT_TRUE(c) << c.status().message();
    bool folded = false, cast_to_bf16 = false;
    for (const auto& n : (*c)->graph().nodes()) {
      folded |= n.op_type == "FusedPool" && n.attr_int("to", 0) == dtype_to_onnx(DType::BF16);
      cast_to_bf16 |= n.op_type == "Cast" && n.attr_int("to", 0) == dtype_to_onnx(DType::BF16);
    }
    EXPECT_EQ(folded, folds) << ir::dump_text((*c)->graph());
    EXPECT_EQ(cast_to_bf16, !folds) << ir::dump_text((*c)->graph());
    const auto [want, got] = testing::eager_and_compiled(g, *be, **c, random_inputs(g));
    ASSERT_TRUE(want.defined() && got.defined());
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_NEAR(want.data<float>()[i], got.data<float>()[i], 1e-3f + 1e-3f * std::abs(want.data<float>()[i])) << i;
    }
  }
}

TEST(CompilerPoolLayout, LonePoolStaysPlain) {
  ir::Graph g;
  g.name = "pool";
  g.inputs = {"x"};
  g.add_value(
      ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{1, 16, 8, 8}, {"", "", "", ""}}, {}, std::nullopt});
  ir::Node n;
  n.op_type = "MaxPool";
  n.name = "pool";
  n.inputs = {"x"};
  n.outputs = {"y"};
  n.attrs["kernel_shape"] = ir::Attribute(std::vector<int64_t>{2, 2});
  n.attrs["strides"] = ir::Attribute(std::vector<int64_t>{2, 2});
  g.add_node(n);
  g.outputs = {"y"};
  auto be = backends::create_cpu_backend(1);
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(g, *be, {{"x", g.value("x")->type}}, o2);
  ASSERT_TRUE(c) << c.status().message();
  ASSERT_EQ((*c)->graph().nodes().size(), 1u);
  EXPECT_EQ((*c)->graph().nodes()[0].op_type, "MaxPool");
  EXPECT_TRUE((*c)->graph().nodes()[0].domain.empty());
  EXPECT_EQ((*c)->graph().nodes()[0].attrs.count("pool"), 0u);
}

}  // namespace
}  // namespace ms
