// split-matmul: a matmul read only through column Slices (a packed QKV projection) becomes one matmul
// per Slice over those columns of its weights and bias; values against eager execution. Not when any
// reader is something else, nor with a residual input, nor where the column copies would outweigh
// the output (fewer rows than the weights have).
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/compiler/pass_test_util.h"

namespace ms::compiler {
namespace {

using pass_test::compile_and_compare;
using pass_test::Compiled;

size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

constexpr const char* kPackedProjection = R"(
    input x: f32[9,1,8]
    init w: f32[8,12] = 0.3 -0.2 0.1 0.05 -0.4 0.25 0.15 -0.1 0.2 -0.3 0.35 0.45
    init b: f32[12] = 0.1 -0.2 0.3 -0.4 0.5 -0.6 0.7 -0.8 0.9 -1.0 1.1 -1.2
    init s0: i64[1] = 0
    init s1: i64[1] = 4
    init s2: i64[1] = 8
    init s3: i64[1] = 12
    init ax: i64[1] = -1
    m = MatMul(x, w)
    y = Add(m, b)
    q = Slice(y, s0, s1, ax)
    k = Slice(y, s1, s2, ax)
    v = Slice(y, s2, s3, ax)
    qk = Mul(q, k)
    o = Add(qk, v)
    output o
)";

TEST(SplitMatMulPass, PackedProjectionBecomesOneMatMulPerSlice) {
  Compiled c = compile_and_compare(kPackedProjection, JitLevel::O1, 1e-5);
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(occurrences(c.dump, "= Slice("), 0u) << c.dump;
  EXPECT_EQ(occurrences(c.dump, "FusedMatMul(%x, %w_cols"), 3u) << c.dump;
}

// 5 rows against weights of 8: copying the weights' columns would take more than the Slices copy.
TEST(SplitMatMulPass, StaysWhereTheColumnCopiesWouldOutweighTheOutput) {
  std::string few_rows = kPackedProjection;
  few_rows.replace(few_rows.find("f32[9,1,8]"), 10, "f32[5,1,8]");
  Compiled c = compile_and_compare(few_rows, JitLevel::O1, 1e-5);
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(occurrences(c.dump, "= Slice("), 3u) << c.dump;
  EXPECT_EQ(occurrences(c.dump, "_cols"), 0u) << c.dump;
}

TEST(SplitMatMulPass, StaysWhenAReaderIsNotAColumnSliceOrThereIsAResidual) {
  std::string other = kPackedProjection;
  other.replace(other.find("    output o"), 12, "    r = Relu(y)\n    output o, r");
  Compiled c = compile_and_compare(other, JitLevel::O1, 1e-5);
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(occurrences(c.dump, "= Slice("), 3u) << c.dump;

  Compiled res = compile_and_compare(R"(
    input x: f32[5,8]
    input z: f32[5,12]
    init w: f32[8,12] = 0.3 -0.2 0.1 0.05
    init s0: i64[1] = 0
    init s1: i64[1] = 4
    init ax: i64[1] = 1
    m = MatMul(x, w)
    y = Add(m, z)
    q = Slice(y, s0, s1, ax)
    output q
  )",
                                     JitLevel::O1, 1e-5);
  ASSERT_TRUE(res.exe);
  EXPECT_EQ(occurrences(res.dump, "= Slice("), 1u) << res.dump;
}

}  // namespace
}  // namespace ms::compiler
