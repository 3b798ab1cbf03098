// fold-qdq: a QDQ-quantized Conv (DequantizeLinear on the 8-bit activations, weights and int32 bias,
// QuantizeLinear after) becomes one QLinearConv, and the compiled graph's output matches the eager run
// of the float QDQ graph to within one quantization step (the integer requantization and the float
// conv may round a value sitting on a .5 boundary differently). Cases the pass must leave float:
// weights with a non-zero zero point, a Conv output read by more than the QuantizeLinear.
#include <gtest/gtest.h>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::run_passes;

// Per-channel s8 weights (scale per output channel), u8 activations with zero points, a bias in
// int32 at scale sx * sw[m], and the output re-quantized to u8.
const char* kQdqConv = R"(
  input x: f32[1,3,6,6]
  init sx: f32[] = 0.02
  init zx: u8[] = 128
  init wq: i8[4,3,3,3] = 17 -5 90 -128 3 64 -33 0 127 8 -71 22 41 -9 100 -57
  init sw: f32[4] = 0.004 0.006 0.003 0.005
  init zw: i8[4] = 0
  init bq: i32[4] = 250 -1200 40 777
  init sb: f32[4] = 0.00008 0.00012 0.00006 0.0001
  init sy: f32[] = 0.03
  init zy: u8[] = 10
  xq = QuantizeLinear(x, sx, zx)
  xd = DequantizeLinear(xq, sx, zx)
  wd = DequantizeLinear(wq, sw, zw) {axis=0}
  bd = DequantizeLinear(bq, sb) {axis=0}
  c = Conv(xd, wd, bd) {pads=[1,1,1,1]}
  yq = QuantizeLinear(c, sy, zy)
  y = DequantizeLinear(yq, sy, zy)
  output y
)";

// The graph after fold-qdq and dead-code elimination.
std::string folded_and_cleaned(const char* text) {
  std::vector<PassPtr> passes;
  passes.push_back(make_fold_qdq_pass());
  passes.push_back(make_dce_pass());
  return run_passes(text, std::move(passes));
}

TEST(FoldQdq, QdqConvBecomesOneQLinearConv) {
  const std::string dump = folded_and_cleaned(kQdqConv);
  EXPECT_NE(dump.find("QLinearConv(%xq, %sx, %zx, %wq, %sw, %zw, %sy, %zy, %bq)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find(" Conv("), std::string::npos) << dump;
  EXPECT_EQ(dump.find("DequantizeLinear(%wq"), std::string::npos) << dump;  // dead once folded
}

TEST(FoldQdq, CompiledMatchesTheFloatGraphWithinOneStep) {
  for (auto level : {JitLevel::O1, JitLevel::O2}) {
    pass_test::Compiled c = compile_and_compare(kQdqConv, level, 0.03 + 1e-6);
    EXPECT_NE(c.dump.find("QLinearConv"), std::string::npos) << c.dump;
  }
}

TEST(FoldQdq, LeavesFloatWhatItCannotFold) {
  std::string text = kQdqConv;
  // Weights with a non-zero zero point: no int8 kernel takes them.
  const std::string nonzero = std::string(text).replace(text.find("init zw: i8[4] = 0"), 18, "init zw: i8[4] = 3");
  const std::string dump = run_passes(nonzero, [] {
    std::vector<PassPtr> p;
    p.push_back(make_fold_qdq_pass());
    return p;
  }());
  EXPECT_EQ(dump.find("QLinearConv"), std::string::npos) << dump;
  // The Conv output read twice (by the QuantizeLinear and a graph output).
  const std::string twice = std::string(text).replace(text.find("  output y"), 10, "  output y, c");
  const std::string dump2 = run_passes(twice, [] {
    std::vector<PassPtr> p;
    p.push_back(make_fold_qdq_pass());
    return p;
  }());
  EXPECT_EQ(dump2.find("QLinearConv"), std::string::npos) << dump2;
}

// Attention heads as ONNX Runtime's quantizer writes them: each Reshape and Transpose between a
// DequantizeLinear and a QuantizeLinear of the same scale and zero point. fold-qdq moves the 8-bit
// tensor instead (exact: the values are the same bits), so only the last DequantizeLinear is left; a
// pair with another scale, or a move read twice, stays.
const char* kQdqMoves = R"(
  input x: f32[2,6,8]
  init s: f32[] = 0.05
  init z: u8[] = 120
  init s2: f32[] = 0.04
  init shape: i64[4] = 2 6 2 4
  xq = QuantizeLinear(x, s, z)
  xd = DequantizeLinear(xq, s, z)
  r = Reshape(xd, shape)
  rq = QuantizeLinear(r, s, z)
  rd = DequantizeLinear(rq, s, z)
  t = Transpose(rd) {perm=[0,2,1,3]}
  tq = QuantizeLinear(t, s, z)
  td = DequantizeLinear(tq, s, z)
  u = Transpose(td) {perm=[0,1,3,2]}
  uq = QuantizeLinear(u, s2, z)
  y = DequantizeLinear(uq, s2, z)
  output y
)";

TEST(FoldQdq, MovesBetweenPairsOfOneScaleRunOnTheEightBitTensor) {
  const std::string dump = folded_and_cleaned(kQdqMoves);
  EXPECT_NE(dump.find("Reshape(%xq, %shape)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("Transpose(%rq)"), std::string::npos) << dump;
  // The last pair changes scale (0.05 to 0.04): it stays float.
  EXPECT_NE(dump.find("Transpose(%td)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("DequantizeLinear(%xq"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("DequantizeLinear(%rq"), std::string::npos) << dump;
  for (auto level : {JitLevel::O1, JitLevel::O2}) {
    pass_test::Compiled c = compile_and_compare(kQdqMoves, level, 1e-6);  // the same bits
    EXPECT_NE(c.dump.find("Reshape(%xq"), std::string::npos) << c.dump;
  }
}

TEST(FoldQdq, LeavesAMoveReadTwice) {
  std::string text = kQdqMoves;
  const std::string twice = text.replace(text.find("  output y"), 10, "  output y, r");
  std::vector<PassPtr> passes;
  passes.push_back(make_fold_qdq_pass());
  const std::string dump = run_passes(twice, std::move(passes));
  EXPECT_NE(dump.find("Reshape(%xd, %shape)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("Transpose(%rq)"), std::string::npos) << dump;  // the next pair still folds
}

// ResNet's stem pool as the quantizer writes it: DequantizeLinear, MaxPool (padded, stride 2),
// QuantizeLinear of the same scale. fold-qdq pools the 8-bit tensor (the same bits: dequantizing is
// increasing for a positive scale); with a negative scale the pair stays.
const char* kQdqMaxPool = R"(
  input x: f32[1,16,9,9]
  init s: f32[] = 0.05
  init z: u8[] = 7
  xq = QuantizeLinear(x, s, z)
  xd = DequantizeLinear(xq, s, z)
  p = MaxPool(xd) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}
  pq = QuantizeLinear(p, s, z)
  y = DequantizeLinear(pq, s, z)
  output y
)";

TEST(FoldQdq, MaxPoolBetweenAPairOfOneScaleRunsOnTheEightBitTensor) {
  const std::string dump = folded_and_cleaned(kQdqMaxPool);
  EXPECT_NE(dump.find("MaxPool(%xq)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("DequantizeLinear(%xq"), std::string::npos) << dump;
  for (auto level : {JitLevel::O1, JitLevel::O2}) {
    pass_test::Compiled c = compile_and_compare(kQdqMaxPool, level, 1e-6);  // the same bits
    EXPECT_NE(c.dump.find("MaxPool(%xq"), std::string::npos) << c.dump;
  }
  std::string negative = kQdqMaxPool;
  negative.replace(negative.find("= 0.05"), 6, "= -0.05");
  const std::string kept = folded_and_cleaned(negative.c_str());
  EXPECT_NE(kept.find("MaxPool(%xd)"), std::string::npos) << kept;
}

// An embedding as the quantizer writes it: DequantizeLinear of the 8-bit table, Gather, then a
// QuantizeLinear of the same scale. fold-qdq gathers the rows of bytes instead of dequantizing the
// whole table on every run.
const char* kQdqGather = R"(
  input ids: i64[2,3]
  init table: u8[5,4] = 0 9 18 27 36 45 54 63 72 81 90 99 108 117 126 135 144 153 162 171
  init s: f32[] = 0.02
  init z: u8[] = 100
  td = DequantizeLinear(table, s, z)
  e = Gather(td, ids)
  eq = QuantizeLinear(e, s, z)
  y = DequantizeLinear(eq, s, z)
  output y
)";

TEST(FoldQdq, GatherBetweenAPairOfOneScaleReadsTheEightBitTable) {
  const std::string dump = folded_and_cleaned(kQdqGather);
  EXPECT_NE(dump.find("Gather(%table, %ids)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("DequantizeLinear(%table"), std::string::npos) << dump;
}

// A QDQ residual as the quantizer writes it (the Relu folded into the output's zero point of 0):
// both sides dequantized, added in float and quantized. fold-qdq makes one FusedQLinearAdd over the
// bytes whose float32 steps give the same bytes; the int8 flavour too. A broadcast Add stays float.
const char* kQdqAdd = R"(
  input x: f32[1,8,5,5]
  input r: f32[1,8,5,5]
  init sx: f32[] = 0.031
  init zx: u8[] = 131
  init sr: f32[] = 0.047
  init zr: u8[] = 0
  init sy: f32[] = 0.05
  init zy: u8[] = 0
  xq = QuantizeLinear(x, sx, zx)
  rq = QuantizeLinear(r, sr, zr)
  xd = DequantizeLinear(xq, sx, zx)
  rd = DequantizeLinear(rq, sr, zr)
  s = Add(xd, rd)
  sq = QuantizeLinear(s, sy, zy)
  y = DequantizeLinear(sq, sy, zy)
  output y
)";

TEST(FoldQdq, QdqAddBecomesOneFusedQLinearAddWithTheSameBytes) {
  std::string int8 = kQdqAdd;
  for (const char* from : {"zx: u8[] = 131", "zr: u8[] = 0", "zy: u8[] = 0"}) {
    std::string to = from;
    to.replace(to.find("u8"), 2, "i8");
    if (to.find("131") != std::string::npos) to.replace(to.find("131"), 3, "-9");
    int8.replace(int8.find(from), std::string(from).size(), to);
  }
  for (const std::string& text : {std::string(kQdqAdd), int8}) {
    const std::string dump = folded_and_cleaned(text.c_str());
    EXPECT_NE(dump.find("FusedQLinearAdd(%xq, %sx, %zx, %rq, %sr, %zr, %sy, %zy)"), std::string::npos) << dump;
    EXPECT_EQ(dump.find(" Add("), std::string::npos) << dump;
    for (auto level : {JitLevel::O1, JitLevel::O2}) {
      pass_test::Compiled c = compile_and_compare(text.c_str(), level, 1e-6);  // the same bytes
      EXPECT_NE(c.dump.find("FusedQLinearAdd"), std::string::npos) << c.dump;
    }
  }
  std::string broadcast = kQdqAdd;
  broadcast.replace(broadcast.find("r: f32[1,8,5,5]"), 15, "r: f32[1,8,1,1]");
  const std::string kept = folded_and_cleaned(broadcast.c_str());
  EXPECT_NE(kept.find(" Add("), std::string::npos) << kept;
}

}  // namespace
}  // namespace ms::compiler
