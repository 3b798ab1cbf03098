// narrow-rows: a Gather or Slice of rows climbs above the row-wise ops that made them (a class
// token through the last LayerNorm, MLP and residual Adds; an attention's queries), values equal to
// eager execution; it stops at a value read elsewhere, at a matmul's columns, at a causal attention
// and where a Reshape splits the axis.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;
using pass_test::run_passes;

size_t narrowed_count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::string narrow_only(const std::string& text) {
  std::vector<PassPtr> passes;
  passes.push_back(make_narrow_rows_pass());
  passes.push_back(make_dce_pass());
  return run_passes(text, std::move(passes));
}

// A transformer layer's tail: LayerNorm, an MLP with a residual, the class token taken at the end.
constexpr const char* kClassTokenTail = R"(
    input x: f32[1,5,8]
    init g: f32[8] = 1.1 0.9 1.0 1.2 0.8 1.05 0.95 1.0
    init be: f32[8] = 0.1 -0.1 0.2 -0.2 0.0 0.05 -0.05 0.3
    init w1: f32[8,16] = 0.3 -0.2 0.1 0.05 -0.4 0.25 0.15 -0.1 0.2 -0.3 0.35 0.45 -0.15
    init b1: f32[16] = 0.1 -0.2 0.3 -0.4
    init w2: f32[16,8] = -0.25 0.15 0.3 -0.1 0.2 0.05 -0.35
    init i0: i64[] = 0
    h = LayerNormalization(x, g, be) {axis=2}
    m = MatMul(h, w1)
    a = Add(m, b1)
    r = Relu(a)
    m2 = MatMul(r, w2)
    y = Add(m2, x)
    t = Gather(y, i0) {axis=1}
    output t
)";

TEST(NarrowRowsPass, ClassTokenNarrowsTheLayerAboveIt) {
  const std::string dump = narrow_only(kClassTokenTail);
  // x is read by the LayerNorm and the residual: both narrow, the two Slices merge into one.
  EXPECT_EQ(narrowed_count(dump, "= Slice(%x,"), 1u) << dump;
  EXPECT_EQ(narrowed_count(dump, " : f32[1,5,"), 0u) << dump;  // no node computes all five rows
  EXPECT_EQ(narrowed_count(dump, "= Gather("), 0u) << dump;
  // Each op keeps its id (the pass stepper shows it rewritten); the Gather became a Reshape.
  EXPECT_NE(dump.find("#5 %m2_rows = MatMul(%r_rows, %w2)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("#7 %t = Reshape(%y_rows,"), std::string::npos) << dump;
  EXPECT_NE(dump.find("f32[1,1,16]"), std::string::npos) << dump;  // the hidden layer, one row

  for (JitLevel level : {JitLevel::O1, JitLevel::O2}) {
    Compiled c = compile_and_compare(kClassTokenTail, level, 1e-5);
    ASSERT_TRUE(c.exe);
    EXPECT_EQ(narrowed_count(c.dump, "f32[1,5,16]"), 0u) << c.dump;
  }
}

TEST(NarrowRowsPass, AValueReadElsewhereStaysWhole) {
  std::string text = kClassTokenTail;
  text.replace(text.find("    output t"), 12, "    output t, y");
  const std::string dump = narrow_only(text);
  EXPECT_EQ(narrowed_count(dump, "= Slice("), 0u) << dump;
  EXPECT_NE(dump.find("%t = Gather(%y"), std::string::npos) << dump;
  Compiled c = compile_and_compare(text, JitLevel::O2, 1e-5);
  ASSERT_TRUE(c.exe);
}

TEST(NarrowRowsPass, MatMulColumnsAndSplitAxesStay) {
  // Columns of a matmul: every row of A is needed.
  const std::string cols = narrow_only(R"(
    input x: f32[4,8]
    init w: f32[8,6] = 0.3 -0.2 0.1
    init s0: i64[1] = 0
    init s1: i64[1] = 2
    init ax: i64[1] = 1
    m = MatMul(x, w)
    y = Slice(m, s0, s1, ax)
    output y
  )");
  EXPECT_NE(cols.find("%y = Slice(%m"), std::string::npos) << cols;

  // A Reshape that splits the selected axis ([6,4] -> [2,3,4], rows of the 2) stops the climb; one
  // that keeps it whole ([2,12] -> [2,3,4]) lets it through, and so does the Transpose before it.
  const char* split = R"(
    input x: f32[6,4]
    init shape: i64[3] = 2 3 4
    init s0: i64[1] = 1
    init s1: i64[1] = 2
    init ax: i64[1] = 0
    e = Exp(x)
    r = Reshape(e, shape)
    y = Slice(r, s0, s1, ax)
    output y
  )";
  const std::string stays = narrow_only(split);
  EXPECT_NE(stays.find("%y = Slice(%r"), std::string::npos) << stays;
  std::string kept = split;
  kept.replace(kept.find("f32[6,4]"), 8, "f32[2,12]");
  kept.replace(kept.find("    e = Exp(x)"), 14, "    q = Transpose(x) {perm=[1,0]}\n    e = Exp(q)");
  kept.replace(kept.find("init shape: i64[3] = 2 3 4"), 26, "init shape: i64[3] = 12 1 2");
  kept.replace(kept.find("init s1: i64[1] = 2"), 19, "init s1: i64[1] = 7");
  const std::string moved = narrow_only(kept);
  EXPECT_NE(moved.find("= Slice(%x,"), std::string::npos) << moved;
  EXPECT_NE(moved.find("f32[2,6]"), std::string::npos) << moved;  // x's columns 1..6, as rows of the Transpose
  Compiled c = compile_and_compare(kept, JitLevel::O2, 1e-5);
  ASSERT_TRUE(c.exe);
}

// Attention over 5 positions, 2 heads of 4; the output's first position.
constexpr const char* kNarrowAttention = R"(
    input x: f32[5,2,4]
    init cq: f32[4] = 0.5 -0.25 0.75 1.0
    init ck: f32[4] = -0.5 0.3 0.6 -0.2
    init i0: i64[] = 0
    q = Mul(x, cq)
    k = Mul(x, ck)
    y = ai.modescope.FusedAttention(q, k, x) {q_layout="shd", k_layout="shd", v_layout="shd", y_layout="shd", scale=0.5}
    t = Gather(y, i0) {axis=0}
    output t
)";

TEST(NarrowRowsPass, AttentionComputesOnlyTheSelectedQueries) {
  const std::string dump = narrow_only(kNarrowAttention);
  EXPECT_NE(dump.find("= ai.modescope.FusedAttention(%q_rows, %k, %x)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("%q_rows = Mul(%x_rows, %cq)"), std::string::npos) << dump;
  Compiled c = compile_and_compare(kNarrowAttention, JitLevel::O2, 1e-5);
  ASSERT_TRUE(c.exe);

  // A causal mask ties each query to its position: the attention computes every query.
  std::string causal = kNarrowAttention;
  causal.replace(causal.find("scale=0.5}"), 10, "scale=0.5, is_causal=1}");
  const std::string whole = narrow_only(causal);
  EXPECT_NE(whole.find("%t = Gather(%y"), std::string::npos) << whole;
}

}  // namespace
}  // namespace ms::compiler
