// OneDnnContext's caches stay bounded in a long-lived process: primitives by shape go least recently
// used first beyond kMaxCached, and what was made from a weights buffer (reordered weights) goes
// once that buffer has gone, so compiling model after model, or meeting ever new shapes, does not
// keep every copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/onednn.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"

namespace ms::cpu {
namespace {

struct Made {
  int id = 0;
};

Tensor full(Shape shape, float v) {
  Tensor t = Tensor::empty(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

TEST(OneDnnCache, PrimitivesByShapeGoLeastRecentlyUsedFirst) {
  OneDnnContext dnn;
  int makes = 0;
  auto get = [&](int key) {
    return dnn.cached<Made>("k" + std::to_string(key), [&] {
      ++makes;
      return std::make_shared<Made>(Made{key});
    });
  };
  const std::shared_ptr<Made> held = get(0);
  for (int k = 1; k < static_cast<int>(OneDnnContext::kMaxCached); ++k) get(k);
  EXPECT_EQ(dnn.cache_size(), OneDnnContext::kMaxCached);
  EXPECT_EQ(get(0)->id, 0);  // used again: now the most recent
  EXPECT_EQ(makes, static_cast<int>(OneDnnContext::kMaxCached));
  for (int k = 0; k < 10; ++k) get(100000 + k);  // ten new keys push out the ten least recent: 1..10
  EXPECT_EQ(dnn.cache_size(), OneDnnContext::kMaxCached);
  const int before = makes;
  EXPECT_EQ(get(0)->id, 0);
  EXPECT_EQ(get(11)->id, 11);
  EXPECT_EQ(makes, before);  // both still cached
  EXPECT_EQ(get(1)->id, 1);
  EXPECT_EQ(makes, before + 1);  // made again
  EXPECT_EQ(held->id, 0);        // what a caller holds stays valid whatever goes
}

TEST(OneDnnCache, WhatWasMadeFromABufferLivesAsLongAsTheBuffer) {
  OneDnnContext dnn;
  int makes = 0;
  auto make = [&] {
    ++makes;
    return std::make_shared<Made>();
  };
  Tensor a = Tensor::zeros(DType::F32, {64});
  Tensor b = Tensor::zeros(DType::F32, {64});
  auto ea = dnn.cached_for<Made>(a.buffer(), "weights|a", make);
  dnn.cached_for<Made>(b.buffer(), "weights|b", make);
  // Far more shape-keyed entries than the cache keeps: the buffers' entries are not among them.
  for (size_t k = 0; k < OneDnnContext::kMaxCached + 50; ++k)
    dnn.cached<Made>("shape" + std::to_string(k), [] { return std::make_shared<Made>(); });
  EXPECT_EQ(dnn.cached_for<Made>(a.buffer(), "weights|a", make), ea);
  EXPECT_EQ(makes, 2);
  EXPECT_EQ(dnn.derived_size(), 2u);
  // b goes: its entry goes with the next new one.
  b = Tensor();
  EXPECT_EQ(dnn.derived_size(), 2u);
  Tensor c = Tensor::zeros(DType::F32, {64});
  dnn.cached_for<Made>(c.buffer(), "weights|c", make);
  EXPECT_EQ(dnn.derived_size(), 2u);  // a and c
  EXPECT_EQ(dnn.cached_for<Made>(a.buffer(), "weights|a", make), ea);
  EXPECT_EQ(makes, 3);
}

// A Graph-mode MatMul of 64 rows reads its weights reordered to oneDNN's blocked layout. Compiling
// and running forty models of new weights on one backend, each dropped after its run, keeps the
// reordered copies of the live model only (each 1 MiB; all forty were kept, 41 entries, before).
TEST(OneDnnCache, ClosedModelsLeaveNoReorderedWeightsBehind) {
  auto backend = backends::create_cpu_backend(1);
  auto* cpu = dynamic_cast<CpuBackend*>(backend.get());
  ASSERT_NE(cpu, nullptr);
  const std::map<std::string, ir::ValueType> sig{
      {"a", ir::ValueType{DType::F32, Shape{64, 512}, std::vector<std::string>{"", ""}}}};
  const runtime::TensorMap in{{"a", full({64, 512}, 0.5f)}};
  size_t most = 0, most_derived = 0;  // entries of any kind; those made from a buffer
  for (int model = 0; model < 40; ++model) {
    ir::Graph g;
    g.inputs.push_back("a");
    g.add_value(ir::Value{"a", sig.at("a"), {}, std::nullopt});
    g.add_initializer("w", full({512, 512}, 0.01f * static_cast<float>(model + 1)));
    ir::Node mm;
    mm.op_type = "MatMul";
    mm.inputs = {"a", "w"};
    mm.outputs = {"y"};
    g.add_node(mm);
    g.outputs = {"y"};
    compiler::CompileOptions o;
    o.jit_level = compiler::JitLevel::O2;
    auto ex = compiler::compile_executor(g, *backend, sig, o);
    ASSERT_TRUE(ex) << ex.status().message();
    auto out = (*ex)->run(in);
    ASSERT_TRUE(out) << out.status().message();
    ASSERT_NEAR(out->front().data<float>()[0], 512 * 0.5 * 0.01 * (model + 1), 1e-3 * (model + 1));
    most = std::max(most, cpu->onednn().cache_size() + cpu->onednn().derived_size());
    most_derived = std::max(most_derived, cpu->onednn().derived_size());
  }
  EXPECT_GE(most_derived, 1u);  // the path reorders (else this test shows nothing)
  EXPECT_LE(most, 4u);          // the primitive, the live model's weights, perhaps the last one's
}

}  // namespace
}  // namespace ms::cpu
