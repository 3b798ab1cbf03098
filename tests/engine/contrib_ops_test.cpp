// ONNX Runtime's contrib ops: each model of tests/data/contrib (made by its make_*.py: single ops,
// tiny_llm.onnx in GenAI's form, a CNN quantized to the QOperator ops, a BERT fused by the
// transformer optimizer and its int8 form by quantize_dynamic) in both modes against the outputs
// ONNX Runtime 1.32 gave for the same inputs; then the refusals.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"
#include "tests/engine/kernel_harness.h"
#include "tests/engine/tensor_compare.h"

namespace ms {
namespace {

const std::string kDir = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/contrib/";

nlohmann::json cases() {
  std::ifstream f(kDir + "cases.json");
  EXPECT_TRUE(f.good());
  return f.good() ? nlohmann::json::parse(f) : nlohmann::json::array();
}

class ContribOp : public ::testing::TestWithParam<int> {};

TEST_P(ContribOp, BothModesMatchOnnxRuntime) {
  const nlohmann::json all = cases();
  ASSERT_LT(static_cast<size_t>(GetParam()), all.size());
  const nlohmann::json& c = all[static_cast<size_t>(GetParam())];
  const std::string model = c["model"];
  const std::string name = c.contains("name") ? c["name"].get<std::string>() : model.substr(0, model.size() - 5);
  SCOPED_TRACE(name);
  auto g = onnx_io::load_model(kDir + model);
  ASSERT_TRUE(g) << g.status().message();
  runtime::TensorMap inputs;
  compiler::Signature sig;
  for (const std::string in : c["inputs"]) {
    auto t = load_npy(kDir + name + ".in." + in + ".npy");
    ASSERT_TRUE(t) << t.status().message();
    sig[in] = ir::ValueType{t->dtype(), t->shape(), std::vector<std::string>(t->shape().size())};
    inputs[in] = *t;
  }
  auto backend = backends::create_cpu_backend(0);
  runtime::EagerExecutor eager(*g, *backend);
  auto a = eager.run(inputs);
  ASSERT_TRUE(a) << "pynative: " << a.status().message();
  compiler::CompileOptions options;
  options.jit_level = compiler::JitLevel::O2;
  auto compiled = compiler::compile_executor(*g, *backend, sig, options);
  ASSERT_TRUE(compiled) << "graph: " << compiled.status().message();
  auto b = (*compiled)->run(inputs);
  ASSERT_TRUE(b) << "graph: " << b.status().message();
  size_t i = 0;
  for (const std::string out : c["outputs"]) {
    auto want = load_npy(kDir + name + ".out." + out + ".npy");
    ASSERT_TRUE(want) << want.status().message();
    ASSERT_LT(i, a->size());
    // 8-bit outputs within one step: ONNX Runtime's fixed-point kernels round their own way.
    const double atol = c.value("atol", 1e-4), rtol = c.contains("atol") && atol >= 1 ? 0 : 1e-4;
    testing_util::expect_tensors_close((*a)[i], *want, rtol, atol, name + " pynative " + out, "ONNX Runtime gives");
    testing_util::expect_tensors_close((*b)[i], *want, rtol, atol, name + " graph " + out, "ONNX Runtime gives");
    ++i;
  }
}

INSTANTIATE_TEST_SUITE_P(OnnxRuntime, ContribOp, ::testing::Range(0, 72));

// The MatMulNBits and GroupQueryAttention cases again with the vector kernels held to 8 and 4 floats:
// the AVX2 and SSE paths (int8 compute in plain C++, the one-row f32 kernel, oneDNN's sgemm for more
// rows, attention's dot products and sums per key) on a CPU that has AVX-512.
class ContribNarrowSimd : public ::testing::TestWithParam<int> {};

TEST_P(ContribNarrowSimd, VectorKernelsMatchOnnxRuntime) {
  const nlohmann::json all = cases();
  int checked = 0;
  for (const auto& c : all) {
    const std::string model = c["model"];
    if (model.rfind("matmul_", 0) != 0 && model.rfind("gqa_", 0) != 0) continue;
    const std::string name = model.substr(0, model.size() - 5);
    SCOPED_TRACE(name + " at width " + std::to_string(GetParam()));
    auto g = onnx_io::load_model(kDir + model);
    ASSERT_TRUE(g) << g.status().message();
    runtime::TensorMap inputs;
    for (const std::string in : c["inputs"]) {
      auto t = load_npy(kDir + name + ".in." + in + ".npy");
      ASSERT_TRUE(t) << t.status().message();
      inputs[in] = *t;
    }
    const int old = cpu::simd_width_cap().exchange(GetParam());
    auto backend = backends::create_cpu_backend(0);
    runtime::EagerExecutor eager(*g, *backend);
    auto y = eager.run(inputs);
    cpu::simd_width_cap().store(old);
    ASSERT_TRUE(y) << y.status().message();
    size_t i = 0;
    for (const std::string out : c["outputs"]) {
      auto want = load_npy(kDir + name + ".out." + out + ".npy");
      ASSERT_TRUE(want) << want.status().message();
      ASSERT_LT(i, y->size());
      testing_util::expect_tensors_close((*y)[i++], *want, 1e-4, 1e-4, name + " " + out, "ONNX Runtime gives");
    }
    ++checked;
  }
  EXPECT_EQ(checked, 24);
}

INSTANTIATE_TEST_SUITE_P(Widths, ContribNarrowSimd, ::testing::Values(8, 4));

TEST(ContribOp, EveryCaseOfTheFolderRuns) { EXPECT_EQ(cases().size(), 72u); }

using Attrs = std::map<std::string, ir::Attribute>;

std::string error_of(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs,
                     const std::string& domain = "com.microsoft") {
  std::vector<size_t> omitted;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) omitted.push_back(i);
  ir::Node node = test::make_node(op, inputs.size(), 1, std::move(attrs), omitted);
  node.domain = domain;
  auto r = test::run_kernel(node, inputs, 17);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

TEST(ContribOp, MatMulNBitsRefusals) {
  const Tensor a = Tensor::zeros(DType::F32, {2, 64});
  const Tensor b = Tensor::zeros(DType::U8, {8, 2, 16});
  const Tensor scales = Tensor::zeros(DType::F32, {16});
  const Attrs ok = {{"K", int64_t{64}}, {"N", int64_t{8}}, {"bits", int64_t{4}}, {"block_size", int64_t{32}}};
  EXPECT_EQ(error_of("MatMulNBits", {a, b, scales}, ok), "(no error)");
  Attrs bits3 = ok;
  bits3["bits"] = int64_t{3};
  EXPECT_NE(error_of("MatMulNBits", {a, b, scales}, bits3).find("'bits' = 3 is not 4 or 8"), std::string::npos)
      << error_of("MatMulNBits", {a, b, scales}, bits3);
  EXPECT_NE(error_of("MatMulNBits", {a, Tensor::zeros(DType::U8, {8, 2, 8}), scales}, ok).find("input 1 (B) must be"),
            std::string::npos);
  EXPECT_NE(error_of("MatMulNBits", {Tensor::zeros(DType::F32, {2, 63}), b, scales}, ok).find("must end in K = 64"),
            std::string::npos);
  EXPECT_NE(error_of("MatMulNBits", {a, b, Tensor::zeros(DType::F32, {15})}, ok).find("scales"), std::string::npos);
  Attrs no_k = ok;
  no_k.erase("K");
  EXPECT_NE(error_of("MatMulNBits", {a, b, scales}, no_k).find("'K', 'N' and 'block_size' are required"),
            std::string::npos);
}

TEST(ContribOp, NormRefusals) {
  const Tensor x = Tensor::zeros(DType::F32, {2, 3, 16});
  EXPECT_NE(error_of("SkipLayerNormalization", {x, x, Tensor::zeros(DType::F32, {15})}, {}).find("gamma"),
            std::string::npos);
  EXPECT_NE(
      error_of("SkipLayerNormalization", {x, Tensor::zeros(DType::F32, {3, 8}), Tensor::zeros(DType::F32, {16})}, {})
          .find("skip"),
      std::string::npos);
  EXPECT_NE(
      error_of("SkipSimplifiedLayerNormalization",
               {Tensor::zeros(DType::F32, {16}), Tensor::zeros(DType::F32, {16}), Tensor::zeros(DType::F32, {16})}, {})
          .find("2-D or 3-D"),
      std::string::npos);
}

TEST(ContribOp, GroupQueryAttentionRefusals) {
  const Tensor q = Tensor::zeros(DType::F32, {1, 2, 64}), k = Tensor::zeros(DType::F32, {1, 2, 32});
  const Tensor lens = Tensor::from_vector<int32_t>({1}, {1}), total = Tensor::from_vector<int32_t>({2}, {});
  const Attrs heads = {{"num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}};
  EXPECT_EQ(error_of("GroupQueryAttention", {q, k, k, Tensor(), Tensor(), lens, total}, heads), "(no error)");
  EXPECT_NE(error_of("GroupQueryAttention", {q, k, k, Tensor(), Tensor(), lens, total},
                     {{"num_heads", int64_t{3}}, {"kv_num_heads", int64_t{2}}})
                .find("num_heads a multiple of kv_num_heads"),
            std::string::npos);
  // A total shorter than the step, one far past the cache's room (it sized the present cache before),
  // and a batch length past the cache.
  EXPECT_NE(
      error_of("GroupQueryAttention", {q, k, k, Tensor(), Tensor(), lens, Tensor::from_vector<int32_t>({1}, {})}, heads)
          .find("is not between the sequence length 2 and the past's length + the sequence length (2)"),
      std::string::npos);
  EXPECT_NE(error_of("GroupQueryAttention",
                     {q, k, k, Tensor(), Tensor(), lens, Tensor::from_vector<int32_t>({1 << 30}, {})}, heads)
                .find("is not between"),
            std::string::npos);
  EXPECT_NE(error_of("GroupQueryAttention",
                     {q, k, k, Tensor(), Tensor(), Tensor::from_vector<int32_t>({9}, {1}), total}, heads)
                .find("seqlens_k[0] = 9"),
            std::string::npos);
  // do_rotary without caches.
  Attrs rot = heads;
  rot["do_rotary"] = int64_t{1};
  EXPECT_NE(error_of("GroupQueryAttention", {q, k, k, Tensor(), Tensor(), lens, total}, rot).find("cos_cache"),
            std::string::npos);
  // position_ids, attention_bias and head_sink of the wrong shapes; the inputs and modes not taken, by name.
  const Tensor none;
  const std::vector<Tensor> base = {q, k, k, none, none, lens, total, none, none};
  auto with = [&](size_t i, const Tensor& t) {
    std::vector<Tensor> in = base;
    in.resize(std::max(in.size(), i + 1));
    in[i] = t;
    return in;
  };
  EXPECT_EQ(error_of("GroupQueryAttention", with(11, Tensor::zeros(DType::F32, {4})), heads), "(no error)");
  EXPECT_NE(error_of("GroupQueryAttention", with(9, Tensor::zeros(DType::I64, {1, 3})), heads)
                .find("position_ids must be int64 [batch, sequence] = [1, 2]"),
            std::string::npos);
  EXPECT_NE(error_of("GroupQueryAttention", with(10, Tensor::zeros(DType::F32, {1, 4, 2, 3})), heads)
                .find("attention_bias must be [batch or 1, num_heads or 1, sequence, total_sequence_length]"),
            std::string::npos);
  // A batch whose keys reach past the bias's columns: a past buffer longer than the total.
  const Tensor past = Tensor::zeros(DType::F32, {1, 2, 4, 16});
  EXPECT_NE(error_of("GroupQueryAttention",
                     {q, k, k, past, past, Tensor::from_vector<int32_t>({3}, {1}),
                      Tensor::from_vector<int32_t>({3}, {}), none, none, none, Tensor::zeros(DType::F32, {1, 4, 2, 3})},
                     heads)
                .find("reaches past attention_bias's total_sequence_length 3 columns"),
            std::string::npos);
  EXPECT_NE(error_of("GroupQueryAttention", with(11, Tensor::zeros(DType::F32, {3})), heads)
                .find("head_sink must hold num_heads = 4 values"),
            std::string::npos);
  EXPECT_NE(error_of("GroupQueryAttention", with(12, Tensor::zeros(DType::F32, {1})), heads).find("(k_scale"),
            std::string::npos);
  EXPECT_NE(error_of("GroupQueryAttention", with(16, Tensor::zeros(DType::I32, {1})), heads).find("(query_seqlens"),
            std::string::npos);
  for (const char* attr : {"qk_output", "sliding_window_cache"}) {
    Attrs a = heads;
    a[attr] = int64_t{1};
    EXPECT_NE(error_of("GroupQueryAttention", base, a).find(attr), std::string::npos) << attr;
  }
  Attrs bidirectional = heads;
  bidirectional["causal"] = int64_t{0};
  EXPECT_NE(error_of("GroupQueryAttention", base, bidirectional).find("causal = 0"), std::string::npos);
}

TEST(ContribOp, GatherBlockQuantizedRefusals) {
  const Tensor data = Tensor::zeros(DType::U8, {4, 16}), scales = Tensor::zeros(DType::F32, {4, 1});
  const Attrs ok = {{"bits", int64_t{4}}, {"block_size", int64_t{32}}};
  EXPECT_EQ(error_of("GatherBlockQuantized", {data, Tensor::from_vector<int64_t>({1, -4}, {2}), scales}, ok),
            "(no error)");
  EXPECT_NE(error_of("GatherBlockQuantized", {data, Tensor::from_vector<int64_t>({4}, {1}), scales}, ok)
                .find("index 4 is out of range for 4 rows"),
            std::string::npos);
  Attrs axis = ok;
  axis["gather_axis"] = int64_t{1};
  EXPECT_NE(error_of("GatherBlockQuantized", {data, Tensor::from_vector<int64_t>({0}, {1}), scales}, axis)
                .find("only a 2-D table gathered on axis 0"),
            std::string::npos);
  EXPECT_NE(error_of("GatherBlockQuantized",
                     {Tensor::zeros(DType::F32, {4, 16}), Tensor::from_vector<int64_t>({0}, {1}), scales}, ok)
                .find("(data) of type f32 is not supported"),
            std::string::npos);
}

TEST(ContribOp, AttentionFamilyRefusals) {
  const Tensor x = Tensor::zeros(DType::F32, {1, 3, 8}), w = Tensor::zeros(DType::F32, {8, 24});
  const Attrs heads = {{"num_heads", int64_t{2}}};
  EXPECT_EQ(error_of("Attention", {x, w}, heads), "(no error)");
  Attrs rotary = heads;
  rotary["do_rotary"] = int64_t{1};
  EXPECT_NE(error_of("Attention", {x, w}, rotary).find("'do_rotary' and 'past_present_share_buffer' are not supported"),
            std::string::npos);
  EXPECT_NE(error_of("Attention", {x, Tensor::zeros(DType::F32, {8, 25})}, heads).find("not three equal parts"),
            std::string::npos);
  EXPECT_NE(error_of("Attention", {x, w, Tensor(), Tensor::zeros(DType::I32, {1, 2})}, heads)
                .find("mask [1,2] is not [batch], [2 x batch], [batch, 3] or [batch, 3, 3]"),
            std::string::npos)
      << error_of("Attention", {x, w, Tensor(), Tensor::zeros(DType::I32, {1, 2})}, heads);
  EXPECT_NE(error_of("Attention", {x, w, Tensor(), Tensor(), Tensor(), Tensor::zeros(DType::F32, {1, 2, 3, 4})}, heads)
                .find("attention_bias [1,2,3,4] must be [batch or 1, heads or 1, 3, 3]"),
            std::string::npos);
  // MultiHeadAttention: a key without its value; a packed query with a bias.
  EXPECT_NE(error_of("MultiHeadAttention", {x, x}, heads).find("value is required"), std::string::npos);
  EXPECT_NE(
      error_of("MultiHeadAttention",
               {Tensor::zeros(DType::F32, {1, 3, 2, 3, 4}), Tensor(), Tensor(), Tensor::zeros(DType::F32, {24})}, heads)
          .find("bias with a packed query"),
      std::string::npos);
  // RotaryEmbedding: a position past the caches; EmbedLayerNormalization: a word id past the table.
  const Tensor cache = Tensor::zeros(DType::F32, {4, 2});
  EXPECT_NE(error_of("RotaryEmbedding", {x, Tensor::from_vector<int64_t>({3}, {1}), cache, cache}, heads)
                .find("position 4 is outside the caches' 4 positions"),
            std::string::npos)
      << error_of("RotaryEmbedding", {x, Tensor::from_vector<int64_t>({3}, {1}), cache, cache}, heads);
  const Tensor table = Tensor::zeros(DType::F32, {5, 4}), vec = Tensor::zeros(DType::F32, {4});
  EXPECT_NE(error_of("EmbedLayerNormalization",
                     {Tensor::from_vector<int32_t>({1, 7}, {1, 2}), Tensor(), table, table, Tensor(), vec, vec}, {})
                .find("input_ids id 7 is outside the table's 5 rows"),
            std::string::npos);
  EXPECT_NE(error_of("EmbedLayerNormalization", {Tensor::from_vector<int32_t>({1}, {1, 1}), Tensor(), table}, {})
                .find("input 3 is required"),
            std::string::npos);
}

}  // namespace
}  // namespace ms
