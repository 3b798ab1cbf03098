// GraphExecutor::release_constants_once_packed: the weights whose kernels keep packed copies give
// their bytes back, the results stay exactly what they were, and a constant anything else reads
// keeps its bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/core/mapped_file.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/value_tap.h"

namespace ms::runtime {
namespace {

// Unit-scale values from a fixed stream.
Tensor filled(Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(DType::F32, std::move(shape));
  uint32_t s = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return t;
}

ir::Node node_of(std::string op, std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

void typed_input(ir::Graph& g, const std::string& name, Shape dims) {
  g.inputs.push_back(name);
  g.add_value(
      ir::Value{name, ir::ValueType{DType::F32, dims, std::vector<std::string>(dims.size())}, {}, std::nullopt});
}

// x [1,64,14,14] -> Conv(w1 3x3, b1) -> Relu -> y1;  a [32,64] -> MatMul(w2) -> Add(b2) -> y2. With
// `w2_read_plain`, w2 is also added to the input z (y3), an op that reads its bytes.
ir::Graph conv_and_matmul(bool w2_read_plain) {
  ir::Graph g;
  typed_input(g, "x", {1, 64, 14, 14});
  typed_input(g, "a", {32, 64});
  g.add_initializer("w1", filled({64, 64, 3, 3}, 1));
  g.add_initializer("b1", filled({64}, 2));
  g.add_initializer("w2", filled({64, 128}, 3));
  g.add_initializer("b2", filled({128}, 4));
  ir::Node conv = node_of("Conv", {"x", "w1", "b1"}, {"c"});
  conv.attrs["pads"] = ir::Attribute(std::vector<int64_t>{1, 1, 1, 1});
  g.add_node(conv);
  g.add_node(node_of("Relu", {"c"}, {"y1"}));
  g.add_node(node_of("MatMul", {"a", "w2"}, {"m"}));
  g.add_node(node_of("Add", {"m", "b2"}, {"y2"}));
  g.outputs = {"y1", "y2"};
  if (w2_read_plain) {
    typed_input(g, "z", {64, 128});
    g.add_node(node_of("Add", {"w2", "z"}, {"y3"}));
    g.outputs.push_back("y3");
  }
  return g;
}

TensorMap inputs_of(bool with_z) {
  TensorMap in{{"x", filled({1, 64, 14, 14}, 5)}, {"a", filled({32, 64}, 6)}};
  if (with_z) in["z"] = filled({64, 128}, 7);
  return in;
}

std::map<std::string, ir::ValueType> signature(const TensorMap& in) {
  std::map<std::string, ir::ValueType> s;
  for (const auto& [k, t] : in) s[k] = ir::ValueType{t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())};
  return s;
}

bool same_bytes(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() || std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()) != 0) return false;
  return true;
}

const Buffer& buffer_of(const ir::Graph& g, const std::string& name) { return *g.value(name)->constant->buffer(); }

struct Compiled {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<compiler::CompiledExecutor> ex;
};

Compiled compile_o2(const ir::Graph& g, const TensorMap& in) {
  Compiled c;
  c.backend = backends::create_cpu_backend(2);
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  auto ex = compiler::compile_executor(g, *c.backend, signature(in), o);
  EXPECT_TRUE(ex) << ex.status().message();
  if (ex) c.ex = std::move(*ex);
  return c;
}

// One run, the release armed, two more runs: both give the first one's outputs, byte for byte.
void run_released(Compiled& c, const TensorMap& in, std::vector<Tensor>& before) {
  auto first = c.ex->run(in);
  ASSERT_TRUE(first) << first.status().message();
  before = std::move(*first);
  c.ex->executor().release_constants_once_packed();
  for (int run = 0; run < 2; ++run) {
    auto after = c.ex->run(in);
    ASSERT_TRUE(after) << after.status().message();
    EXPECT_TRUE(same_bytes(*after, before)) << "run " << run << " after the release";
  }
}

TEST(PackedRelease, PackedWeightsGiveTheirBytesBackAndTheResultsStay) {
  const ir::Graph g = conv_and_matmul(false);
  const TensorMap in = inputs_of(false);
  Compiled c = compile_o2(g, in);
  ASSERT_TRUE(c.ex);
  auto before = c.ex->run(in);
  ASSERT_TRUE(before) << before.status().message();
  // Eager, on a graph of its own (the compiled one shares the model's buffers).
  const ir::Graph ref_graph = conv_and_matmul(false);
  EagerExecutor eager(ref_graph, *c.backend);
  auto ref = eager.run(in);
  ASSERT_TRUE(ref) << ref.status().message();

  c.ex->executor().release_constants_once_packed();
  for (int run = 0; run < 3; ++run) {
    auto after = c.ex->run(in);
    ASSERT_TRUE(after) << after.status().message();
    EXPECT_TRUE(same_bytes(*after, *before)) << "run " << run << " after the release";
  }
  for (size_t i = 0; i < ref->size(); ++i)
    for (int64_t k = 0; k < (*ref)[i].numel(); ++k)
      ASSERT_NEAR((*before)[i].data<float>()[k], (*ref)[i].data<float>()[k], 1e-4f) << "output " << i << " at " << k;

  // The weights' bytes went back (the model's constants share them); the biases, which the kernels
  // read at every call, kept theirs.
  EXPECT_TRUE(buffer_of(g, "w1").released()) << "the conv's weights (packed by its kernel)";
  EXPECT_TRUE(buffer_of(g, "w2").released()) << "the matmul's weights (packed for 32 rows)";
  EXPECT_EQ(c.ex->executor().released_bytes(), buffer_of(g, "w1").bytes() + buffer_of(g, "w2").bytes());
  EXPECT_FALSE(buffer_of(g, "b1").released());
  EXPECT_FALSE(buffer_of(g, "b2").released());
}

// Counts the inputs a tap was handed and the ones it was not (a released constant's).
class InputCountingTap final : public ValueTap {
 public:
  Status on_step(const TappedStep& step) override {
    for (const Tensor* t : step.inputs) (t ? shown : hidden)++;
    return Status::ok();
  }
  int shown = 0, hidden = 0;
};

TEST(PackedRelease, ATapIsNotHandedReleasedWeights) {
  const ir::Graph g = conv_and_matmul(false);
  const TensorMap in = inputs_of(false);
  Compiled c = compile_o2(g, in);
  ASSERT_TRUE(c.ex);
  InputCountingTap before_tap;
  RunOptions tapped;
  tapped.tap = &before_tap;
  ASSERT_TRUE(c.ex->run(in, tapped));
  EXPECT_EQ(before_tap.hidden, 0);
  c.ex->executor().release_constants_once_packed();
  ASSERT_TRUE(c.ex->run(in));
  ASSERT_GT(c.ex->executor().released_bytes(), 0u);
  InputCountingTap after_tap;
  tapped.tap = &after_tap;
  auto out = c.ex->run(in, tapped);
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ(after_tap.hidden, 2) << "w1 and w2";
  EXPECT_EQ(after_tap.shown + after_tap.hidden, before_tap.shown);
}

TEST(PackedRelease, AWeightAnotherOpReadsKeepsItsBytes) {
  const ir::Graph g = conv_and_matmul(true);
  const TensorMap in = inputs_of(true);
  Compiled c = compile_o2(g, in);
  ASSERT_TRUE(c.ex);
  std::vector<Tensor> before;
  ASSERT_NO_FATAL_FAILURE(run_released(c, in, before));
  EXPECT_FALSE(buffer_of(g, "w2").released()) << "w2 is read by an Add as well as the MatMul";
  // y3 = w2 + z, read after the runs: the bytes are still w2's.
  const Tensor& y3 = before[2];
  const Tensor& z = in.at("z");
  const Tensor& w2 = *g.value("w2")->constant;
  for (int64_t k = 0; k < y3.numel(); k += 97) EXPECT_EQ(y3.data<float>()[k], w2.data<float>()[k] + z.data<float>()[k]);
}

// a [32,64] u8 -> MatMulInteger(w int8 [64,128], zero points) -> y int32.
ir::Graph int8_matmul() {
  ir::Graph g;
  g.inputs.push_back("a");
  g.add_value(ir::Value{"a", ir::ValueType{DType::U8, Shape{32, 64}, std::vector<std::string>(2)}, {}, std::nullopt});
  std::vector<int8_t> w(64 * 128);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>((i * 37) % 255) - 127);
  g.add_initializer("w", Tensor::from_vector<int8_t>(w, {64, 128}));
  g.add_initializer("za", Tensor::scalar<uint8_t>(3));
  g.add_initializer("zw", Tensor::scalar<int8_t>(-2));
  g.add_node(node_of("MatMulInteger", {"a", "w", "za", "zw"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

TEST(PackedRelease, Int8WeightsSplitOrReorderedKeepTheirResults) {
  const ir::Graph g = int8_matmul();
  std::vector<uint8_t> a(32 * 64);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 53) % 256);
  const TensorMap in{{"a", Tensor::from_vector<uint8_t>(a, {32, 64})}};
  Compiled c = compile_o2(g, in);
  ASSERT_TRUE(c.ex);
  std::vector<Tensor> before;
  ASSERT_NO_FATAL_FAILURE(run_released(c, in, before));
  // The sums against the definition, whatever the kernel kept.
  const Tensor& y = before[0];
  for (int64_t i = 0; i < 32; i += 7)
    for (int64_t j = 0; j < 128; j += 13) {
      int32_t sum = 0;
      for (int64_t k = 0; k < 64; ++k) {
        const int32_t wv = static_cast<int8_t>(static_cast<int>((k * 128 + j) * 37 % 255) - 127);
        sum += (static_cast<int32_t>(a[static_cast<size_t>(i * 64 + k)]) - 3) * (wv + 2);
      }
      ASSERT_EQ(y.data<int32_t>()[i * 128 + j], sum) << i << "," << j;
    }
  EXPECT_EQ(c.ex->executor().released_bytes(), buffer_of(g, "w").released() ? buffer_of(g, "w").bytes() : 0u);
  EXPECT_FALSE(buffer_of(g, "za").released());
}

TEST(PackedRelease, NothingIsReleasedUnlessAsked) {
  const ir::Graph g = conv_and_matmul(false);
  const TensorMap in = inputs_of(false);
  Compiled c = compile_o2(g, in);
  ASSERT_TRUE(c.ex);
  for (int run = 0; run < 3; ++run) ASSERT_TRUE(c.ex->run(in));
  EXPECT_EQ(c.ex->executor().released_bytes(), 0u);
  for (const char* name : {"w1", "b1", "w2", "b2"}) EXPECT_FALSE(buffer_of(g, name).released()) << name;
}

TEST(PackedRelease, BufferReleaseKeepsItsSizeAndHappensOnce) {
  auto owned = Buffer::host(4096);
  EXPECT_FALSE(owned->released());
  EXPECT_TRUE(owned->release_storage());
  EXPECT_TRUE(owned->released());
  EXPECT_EQ(owned->bytes(), 4096u);
  EXPECT_FALSE(owned->release_storage());  // once
  // The pages leave the process at once, whatever the allocator keeps of freed memory.
  auto big = Buffer::host(size_t{64} << 20);
  std::memset(big->data(), 1, big->bytes());
  const int64_t resident = process_memory().resident_bytes;
  ASSERT_TRUE(big->release_storage());
  const int64_t after = process_memory().resident_bytes;
  if (resident >= 0 && after >= 0) EXPECT_LT(after, resident - (int64_t{48} << 20));
  float local[4] = {};
  auto borrowed = Buffer::borrowed(local, sizeof local);
  EXPECT_FALSE(borrowed->release_storage()) << "a borrowed buffer owns no bytes to give back";
  EXPECT_FALSE(borrowed->released());
}

}  // namespace
}  // namespace ms::runtime
