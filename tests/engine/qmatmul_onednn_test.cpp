// MatMulInteger and QLinearMatMul with 2-D weights run oneDNN's int8 matmul (weights split so no
// pair of products saturates int16, zero points applied as row/column sums): every output equals the
// reference loops' (the same op with B as a batch of one, [1, K, N], which the loops run), on
// worst-case values (255 x -128 everywhere saturates vpmaddubsw), uint8 and int8 activations and
// weights, per-column weights zero points and scales, batched A, and odd K.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "engine/backends/cpu/qmatmul_onednn.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

constexpr int64_t kInt8MatMulOpset = 21;

// Deterministic 8-bit values; `extreme` of them (out of 8) at the type's ends.
Tensor int8mm_values(DType t, const Shape& s, uint32_t seed, int extreme) {
  Tensor out = Tensor::empty(t, s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    const uint32_t r = seed >> 8;
    int v = static_cast<int>(r % 256);
    if (static_cast<int>((r >> 8) % 8) < extreme) v = (r >> 16) % 2 ? 255 : 0;
    if (t == DType::I8)
      out.data<int8_t>()[i] = static_cast<int8_t>(v - 128);
    else
      out.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  return out;
}

test::KernelResult int8mm_run(const std::string& op, const std::vector<Tensor>& in) {
  const ir::Node node = test::make_node(op, in.size(), 1);
  auto r = test::run_kernel_full(node, in, kInt8MatMulOpset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r ? *r : test::KernelResult{};
}

// B as [1, K, N]: the batched case the reference loops run.
Tensor int8mm_batch_of_one(const Tensor& b) { return b.reshaped({1, b.dim(0), b.dim(1)}); }

// Output of `fast` (2-D B) equals that of `ref` (B [1, K, N]) element for element, after dropping the
// leading batch of one the reference adds when A is 2-D.
void int8mm_expect_same(const test::KernelResult& fast, const test::KernelResult& ref) {
  ASSERT_EQ(fast.outputs.size(), 1u);
  ASSERT_EQ(fast.outputs[0].numel(), ref.outputs[0].numel());
  EXPECT_TRUE(fast.impl.find("int8-split") != std::string::npos || fast.impl.find("int8-whole") != std::string::npos)
      << fast.impl;
  EXPECT_EQ(ref.impl, "loop");
  EXPECT_EQ(test::values_of(fast.outputs[0]), test::values_of(ref.outputs[0]));
}

struct Int8MatMulCase {
  DType a, b;
  Shape a_shape;
  int64_t n;
  int extreme;
};

TEST(Int8MatMulOneDnn, MatMulIntegerEqualsTheLoops) {
  const Int8MatMulCase cases[] = {{DType::U8, DType::I8, {7, 37}, 19, 8},   {DType::U8, DType::I8, {2, 5, 64}, 48, 6},
                                  {DType::I8, DType::I8, {33, 130}, 17, 8}, {DType::U8, DType::U8, {4, 9}, 5, 4},
                                  {DType::I8, DType::U8, {1, 300}, 70, 8},  {DType::U8, DType::I8, {64}, 9, 8}};
  uint32_t seed = 1;
  for (const Int8MatMulCase& c : cases) {
    const int64_t k = c.a_shape.back();
    const Tensor a = int8mm_values(c.a, c.a_shape, seed++, c.extreme);
    const Tensor b = int8mm_values(c.b, {k, c.n}, seed++, c.extreme);
    // Scalar zero points, then a per-column b_zero_point.
    const Tensor za = int8mm_values(c.a, {}, seed++, 0);
    for (const Tensor& zb : {int8mm_values(c.b, {}, seed++, 0), int8mm_values(c.b, {c.n}, seed++, 4)}) {
      SCOPED_TRACE(std::string(dtype_name(c.a)) + " x " + std::string(dtype_name(c.b)) + " " +
                   shape_to_string(c.a_shape) + " N=" + std::to_string(c.n) + " zb " + shape_to_string(zb.shape()));
      int8mm_expect_same(int8mm_run("MatMulInteger", {a, b, za, zb}),
                         int8mm_run("MatMulInteger", {a, int8mm_batch_of_one(b), za, zb}));
    }
    // No zero points at all: only the saturation split matters.
    int8mm_expect_same(int8mm_run("MatMulInteger", {a, b}), int8mm_run("MatMulInteger", {a, int8mm_batch_of_one(b)}));
  }
}

TEST(Int8MatMulOneDnn, QLinearMatMulEqualsTheLoops) {
  const Tensor a = int8mm_values(DType::U8, {3, 8, 96}, 11, 3);
  const Tensor b = int8mm_values(DType::I8, {96, 40}, 12, 3);
  std::vector<float> col_scales(40);
  for (size_t j = 0; j < col_scales.size(); ++j) col_scales[j] = 0.001f * static_cast<float>(j + 1);
  for (const Tensor& sb : {Tensor::scalar(0.004f), Tensor::from_vector<float>(col_scales, {40})}) {
    const Tensor zb = Tensor::zeros(DType::I8, sb.shape());
    for (DType yt : {DType::U8, DType::I8}) {
      const Tensor zy = yt == DType::U8 ? Tensor::scalar(uint8_t{121}) : Tensor::scalar(int8_t{-7});
      const std::vector<Tensor> in = {
          a, Tensor::scalar(0.02f), Tensor::scalar(uint8_t{131}), b, sb, zb, Tensor::scalar(0.9f), zy};
      std::vector<Tensor> ref_in = in;
      ref_in[3] = int8mm_batch_of_one(b);
      const test::KernelResult fast = int8mm_run("QLinearMatMul", in);
      int8mm_expect_same(fast, int8mm_run("QLinearMatMul", ref_in));
      // Not all clipped: the comparison sees real values.
      const auto v = test::values_of(fast.outputs[0]);
      EXPECT_GT(std::count_if(v.begin(), v.end(), [](double x) { return x != 0 && x != 255 && x != -128 && x != 127; }),
                static_cast<long>(v.size() / 2));
    }
  }
}

// Bell-shaped weights (trained ones) leave a few pairs over the limit: those run as a per-row loop
// ("int8-split"); evenly spread ones, half the pairs: a second int8 matmul ("int8-split2").
TEST(Int8MatMulOneDnn, SparseAndDenseExcessBothExact) {
  cpu::quant::force_int8_weight_split(true);  // the split also where the CPU has VNNI
  const Tensor a = int8mm_values(DType::U8, {9, 96}, 31, 4);
  Tensor b = Tensor::empty(DType::I8, {96, 64});
  for (int64_t i = 0; i < b.numel(); ++i) b.data<int8_t>()[i] = static_cast<int8_t>((i * 37) % 41 - 20);
  for (int64_t i : {5, 700, 701, 3001, 6000}) b.data<int8_t>()[i] = i % 2 ? -128 : 127;
  const Tensor za = Tensor::scalar(uint8_t{129});
  const auto sparse = int8mm_run("MatMulInteger", {a, b, za});
  int8mm_expect_same(sparse, int8mm_run("MatMulInteger", {a, int8mm_batch_of_one(b), za}));
  EXPECT_EQ(sparse.impl.substr(sparse.impl.size() - 10), "int8-split") << sparse.impl;
  const Tensor even = int8mm_values(DType::I8, {96, 64}, 32, 0);
  const auto dense = int8mm_run("MatMulInteger", {a, even, za});
  int8mm_expect_same(dense, int8mm_run("MatMulInteger", {a, int8mm_batch_of_one(even), za}));
  EXPECT_EQ(dense.impl.substr(dense.impl.size() - 11), "int8-split2") << dense.impl;
  cpu::quant::force_int8_weight_split(std::nullopt);
}

// With VNNI (or AMX) the products cannot saturate: the weights run whole, one int8 matmul, and the
// worst case (255 x -128 in every pair, uint8 and int8 weights) still equals the loops.
TEST(Int8MatMulOneDnn, VnniRunsTheWeightsWholeAndExact) {
  const Tensor a = int8mm_values(DType::U8, {7, 96}, 41, 8);
  for (DType bt : {DType::I8, DType::U8}) {
    const Tensor b = int8mm_values(bt, {96, 40}, 42, 8);
    const Tensor za = Tensor::scalar(uint8_t{3});
    const Tensor zb = bt == DType::U8 ? Tensor::scalar(uint8_t{250}) : Tensor::scalar(int8_t{-7});
    const auto got = int8mm_run("MatMulInteger", {a, b, za, zb});
    if (got.impl.find("vnni") == std::string::npos && got.impl.find("amx") == std::string::npos)
      GTEST_SKIP() << "this CPU's int8 matmul has no VNNI or AMX (" << got.impl << "): the weights are split";
    EXPECT_EQ(got.impl.substr(got.impl.size() - 10), "int8-whole") << got.impl;
    int8mm_expect_same(got, int8mm_run("MatMulInteger", {a, int8mm_batch_of_one(b), za, zb}));
  }
}

// A /proc/self/status figure in KiB (VmRSS, VmHWM), or 0 where there is none.
size_t int8mm_status_kib(const std::string& field) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(field.size()));
  return 0;
}

// Whole int8 weights are packed straight from their own bytes: running them adds the packed copy
// (16 MiB here) and no second plain copy beside it, which made it at least 32 (37 measured; under
// AddressSanitizer the packed copy alone takes about 27 with its shadow).
TEST(Int8MatMulOneDnn, WholeWeightsAreNotCopiedBesideTheirPackedForm) {
  const Tensor a = int8mm_values(DType::U8, {8, 2048}, 51, 0);
  Tensor b = Tensor::empty(DType::I8, {2048, 8192});
  for (int64_t i = 0; i < b.numel(); ++i) b.data<int8_t>()[i] = static_cast<int8_t>(i * 7919 % 255 - 127);
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak (VmHWM) restarts from here
  const size_t before = int8mm_status_kib("VmRSS:");
  if (int8mm_status_kib("VmHWM:") > before + 1024)
    GTEST_SKIP() << "this kernel does not reset the peak resident size (/proc/self/clear_refs)";
  const auto got = int8mm_run("MatMulInteger", {a, b});
  if (got.impl.find("int8-whole") == std::string::npos)
    GTEST_SKIP() << "this CPU's int8 matmul splits the weights (" << got.impl << "), which takes a copy";
  const size_t grew = (int8mm_status_kib("VmHWM:") - before) * 1024;
  EXPECT_LT(grew, b.nbytes() * 15 / 8) << "16 MiB of weights took " << grew << " bytes more at the peak";
}

// The weights are split once per buffer: new values in the same buffer (PyNative, a non-frozen
// tensor) are seen, not the cached split of the old ones.
TEST(Int8MatMulOneDnn, ChangedWeightsAreSplitAgain) {
  const Tensor a = int8mm_values(DType::U8, {5, 16}, 21, 8);
  Tensor b = int8mm_values(DType::I8, {16, 6}, 22, 8);
  const auto first = int8mm_run("MatMulInteger", {a, b});
  for (int64_t i = 0; i < b.numel(); ++i) b.data<int8_t>()[i] = static_cast<int8_t>(-b.data<int8_t>()[i] / 2);
  const auto second = int8mm_run("MatMulInteger", {a, b});
  int8mm_expect_same(second, int8mm_run("MatMulInteger", {a, int8mm_batch_of_one(b)}));
  EXPECT_NE(test::values_of(first.outputs[0]), test::values_of(second.outputs[0]));
}

}  // namespace
}  // namespace ms
