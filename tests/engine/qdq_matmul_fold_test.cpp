// fold-qdq on matmuls: QuantizeLinear(MatMul(DequantizeLinear(xq), DequantizeLinear(wq))) and the Gemm
// form (transB: the weights transposed once into a new constant) become one QLinearMatMul on the
// 8-bit tensors, the compiled graph's output within one quantization step of the eager run of the
// float QDQ graph; a matmul of two activations stays float.
#include <gtest/gtest.h>

#include "engine/compiler/rewrite.h"
#include "tests/engine/compiler/pass_test_util.h"
#include "tests/engine/compiler/quant_graphs.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::run_passes;

// u8 activations, s8 weights [K=16, N=12] with per-column scales and non-zero zero points, the
// output re-quantized to u8 (a transformer projection as ONNX Runtime's quantizer writes it).
const char* kQdqMatMul = R"(
  input x: f32[2,5,16]
  init sx: f32[] = 0.01
  init zx: u8[] = 120
  init wq: i8[16,12] = 17 -5 90 -128 3 64 -33 0 127 8 -71 22 41 -9 100 -57 6
  init sw: f32[12] = 0.004 0.006 0.003 0.005 0.002 0.004 0.007 0.003 0.005 0.004 0.006 0.002
  init zw: i8[12] = 0 3 -2 0 1 0 0 -4 0 2 0 0
  init sy: f32[] = 0.05
  init zy: u8[] = 128
  xq = QuantizeLinear(x, sx, zx)
  xd = DequantizeLinear(xq, sx, zx)
  wd = DequantizeLinear(wq, sw, zw) {axis=1}
  m = MatMul(xd, wd)
  yq = QuantizeLinear(m, sy, zy)
  y = DequantizeLinear(yq, sy, zy)
  output y
)";

// A Gemm with transB and a bias: weights [N=12, K=16] quantized per output row (axis 0), the bias in
// int32 at scale sx * sw, s8 output.
const char* kQdqGemm = R"(
  input x: f32[4,16]
  init sx: f32[] = 0.01
  init zx: u8[] = 128
  init wq: i8[12,16] = 17 -5 90 -128 3 64 -33 0 127 8 -71 22 41 -9 100 -57 6
  init sw: f32[12] = 0.004 0.006 0.003 0.005 0.002 0.004 0.007 0.003 0.005 0.004 0.006 0.002
  init bq: i32[12] = 250 -1200 40 777 -3000 0 12 9000 -77 300 -450 1
  init sb: f32[12] = 0.00004 0.00006 0.00003 0.00005 0.00002 0.00004 0.00007 0.00003 0.00005 0.00004 0.00006 0.00002
  init sy: f32[] = 0.05
  init zy: i8[] = -3
  xq = QuantizeLinear(x, sx, zx)
  xd = DequantizeLinear(xq, sx, zx)
  wd = DequantizeLinear(wq, sw) {axis=0}
  bd = DequantizeLinear(bq, sb) {axis=0}
  m = Gemm(xd, wd, bd) {transB=1}
  yq = QuantizeLinear(m, sy, zy)
  y = DequantizeLinear(yq, sy, zy)
  output y
)";

size_t qdq_count_of(const std::string& dump, const std::string& what) {
  size_t n = 0;
  for (size_t p = dump.find(what); p != std::string::npos; p = dump.find(what, p + 1)) ++n;
  return n;
}

std::vector<PassPtr> qdq_fold_then_dce() {
  std::vector<PassPtr> passes;
  passes.push_back(make_fold_qdq_pass());
  passes.push_back(make_dce_pass());
  return passes;
}

TEST(FoldQdqMatMul, QdqMatMulBecomesOneQLinearMatMul) {
  const std::string dump = run_passes(kQdqMatMul, qdq_fold_then_dce());
  EXPECT_NE(dump.find("QLinearMatMul(%xq, %sx, %zx, %wq, %sw, %zw, %sy, %zy)"), std::string::npos) << dump;
  // Six nodes before: QuantizeLinear x, the two DequantizeLinear, MatMul, QuantizeLinear,
  // DequantizeLinear; three after.
  EXPECT_EQ(qdq_count_of(dump, " = "), 3u) << dump;
  EXPECT_EQ(qdq_count_of(dump, "MatMul("), 1u) << dump;  // QLinearMatMul( only
  EXPECT_EQ(dump.find("DequantizeLinear(%wq"), std::string::npos) << dump;
}

TEST(FoldQdqMatMul, GemmWithTransBAndBiasGetsTransposedWeights) {
  ir::Graph g;
  const std::string dump = run_passes(kQdqGemm, qdq_fold_then_dce(), &g);
  EXPECT_EQ(dump.find("Gemm("), std::string::npos) << dump;
  ASSERT_NE(dump.find("FusedQLinearMatMul(%xq, %sx, %zx, %wq_kn, %sw, %wq_zero_point, %sy, %zy, %bq)"),
            std::string::npos)
      << dump;
  const ir::Graph original = testing::parse_graph(kQdqGemm);
  const Tensor* wq = constant_of(original, "wq");
  const Tensor* kn = constant_of(g, "wq_kn");
  ASSERT_TRUE(wq && kn);
  ASSERT_EQ(kn->shape(), (Shape{16, 12}));
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t c = 0; c < 16; ++c) EXPECT_EQ(kn->data<int8_t>()[c * 12 + r], wq->data<int8_t>()[r * 16 + c]);
}

TEST(FoldQdqMatMul, CompiledMatchesTheFloatGraphWithinOneStep) {
  for (const char* text : {kQdqMatMul, kQdqGemm})
    for (auto level : {JitLevel::O1, JitLevel::O2}) {
      pass_test::Compiled c = compile_and_compare(text, level, 0.05 + 1e-6);
      EXPECT_NE(c.dump.find("QLinearMatMul"), std::string::npos) << c.dump;
      EXPECT_EQ(c.dump.find(" MatMul("), std::string::npos) << c.dump;
    }
}

TEST(FoldQdqMatMul, LeavesFloatWhatItCannotFold) {
  // Attention's scores: both operands are activations.
  std::string text = kQdqMatMul;
  text.replace(text.find("  init wq: i8[16,12]"), 0, "  input wq_in: f32[16,12]\n");
  const std::string from = "wd = DequantizeLinear(wq, sw, zw) {axis=1}";
  text.replace(text.find(from), from.size(),
               "wqq = QuantizeLinear(wq_in, sy, zx)\n  wd = DequantizeLinear(wqq, sy, zx)");
  const std::string dump = run_passes(text, qdq_fold_then_dce());
  EXPECT_EQ(dump.find("QLinearMatMul"), std::string::npos) << dump;
  // The MatMul output read twice (by the QuantizeLinear and a graph output).
  std::string twice = kQdqMatMul;
  twice.replace(twice.find("  output y"), 10, "  output y, m");
  EXPECT_EQ(run_passes(twice, qdq_fold_then_dce()).find("QLinearMatMul"), std::string::npos);
}

TEST(FoldQdqMatMul, DynamicQuantizationBecomesOneStepPerMatMul) {
  const std::string dump = run_passes(kDynamicMatMul, qdq_fold_then_dce());
  EXPECT_NE(dump.find("FusedDynamicQuantMatMul(%x, %wq, %ws, %wz, %bias)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("FusedDynamicQuantMatMul(%x, %wq2, %ws2, %wz2)"), std::string::npos) << dump;
  // Twelve nodes before, two after (the shared DynamicQuantizeLinear is dead once both are folded).
  EXPECT_EQ(qdq_count_of(dump, " = "), 2u) << dump;
  for (auto level : {JitLevel::O1, JitLevel::O2}) {
    pass_test::Compiled c = compile_and_compare(kDynamicMatMul, level, 1e-6);
    EXPECT_EQ(qdq_count_of(c.dump, "FusedDynamicQuantMatMul("), 2u) << c.dump;
  }
}

}  // namespace
}  // namespace ms::compiler
