// Malformed-input sweep for the tensor/shape ops: random shapes, attributes and index values. Every
// run must end in a result or an error, never a crash (run it under ASan/UBSan).
#include <gtest/gtest.h>

#include <random>

#include "tests/engine/tensor_test_util.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;

struct Gen {
  std::mt19937 rng{1234};
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  Shape shape(int max_rank = 4) {
    Shape s(static_cast<size_t>(uniform(0, max_rank)));
    for (auto& d : s) d = uniform(0, 3) == 0 ? uniform(0, 1) : uniform(1, 4);
    return s;
  }
  Tensor data(Shape s) {
    std::vector<float> v(static_cast<size_t>(numel(s)));
    for (auto& x : v) x = static_cast<float>(uniform(-3, 3));
    return test::T<float>(v, std::move(s));
  }
  Tensor data() { return data(shape()); }
  std::vector<int64_t> ints(int64_t max_len, int64_t lo, int64_t hi) {
    std::vector<int64_t> v(static_cast<size_t>(uniform(0, max_len)));
    for (auto& x : v) x = uniform(0, 9) == 0 ? (uniform(0, 1) ? INT64_MAX : INT64_MIN) : uniform(lo, hi);
    return v;
  }
  Tensor ints_tensor(int64_t max_len = 5, int64_t lo = -3, int64_t hi = 5) {
    auto v = ints(max_len, lo, hi);
    const auto n = static_cast<int64_t>(v.size());
    return test::T<int64_t>(v, {n});
  }
  Tensor index(Shape s, int64_t lo = -5, int64_t hi = 5) {
    std::vector<int64_t> v(static_cast<size_t>(numel(s)));
    for (auto& x : v) x = uniform(lo, hi);
    return test::T<int64_t>(v, std::move(s));
  }
  Tensor scalar_i64(int64_t lo, int64_t hi) { return test::T<int64_t>({uniform(lo, hi)}, {}); }
};

void run_both(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset) {
  auto a = test::run_kernel(n, in, opset);
  if (a.has_value()) {
    for (const Tensor& t : *a) EXPECT_TRUE(t.defined()) << n.op_type;
  }
  auto b = test::run_unallocated(n, in, opset);
  EXPECT_EQ(a.has_value(), b.has_value()) << n.op_type << ": " << (a ? b.status().message() : a.status().message());
}

TEST(TensorRobust, RandomInputsGiveResultsOrErrors) {
  Gen g;
  for (int iter = 0; iter < 150; ++iter) {
    const Attrs axis{{"axis", g.uniform(-5, 5)}};
    const Tensor x = g.data();
    const int64_t opset = g.uniform(0, 1) ? 13 : 11;
    run_both(test::make_node("Reshape", 2), {x, g.ints_tensor(5, -2, 6)}, 14);
    run_both(test::make_node("Flatten", 1, 1, axis), {x}, 13);
    run_both(test::make_node("Transpose", 1, 1, Attrs{{"perm", g.ints(4, -1, 4)}}), {x}, 13);
    run_both(test::make_node("Concat", 2, 1, axis), {x, g.data()}, 13);
    run_both(test::make_node("Split", 2, static_cast<size_t>(g.uniform(1, 3)), axis), {x, g.ints_tensor(3, 0, 4)}, 13);
    run_both(test::make_node("Split", 1, static_cast<size_t>(g.uniform(1, 3)), axis), {x}, 13);
    run_both(test::make_node("Slice", 5),
             {x, g.ints_tensor(3), g.ints_tensor(3), g.ints_tensor(3, -4, 4), g.ints_tensor(3, -2, 2)}, 13);
    run_both(test::make_node("Squeeze", 2), {x, g.ints_tensor(3, -4, 4)}, 13);
    run_both(test::make_node("Unsqueeze", 2), {x, g.ints_tensor(3, -6, 6)}, 13);
    run_both(test::make_node("Gather", 2, 1, axis), {x, g.index(g.shape(2))}, 13);
    run_both(test::make_node("GatherElements", 2, 1, axis), {x, g.index(g.shape())}, 13);
    run_both(test::make_node("GatherND", 2, 1, Attrs{{"batch_dims", g.uniform(0, 2)}}), {x, g.index(g.shape(3), -3, 3)},
             13);
    run_both(test::make_node("Shape", 1, 1, Attrs{{"start", g.uniform(-6, 6)}, {"end", g.uniform(-6, 6)}}), {x}, 15);
    run_both(test::make_node("Expand", 2), {x, g.ints_tensor(5, 0, 4)}, 13);
    run_both(test::make_node("Tile", 2), {x, g.ints_tensor(4, -1, 3)}, 13);
    static const char* modes[] = {"constant", "reflect", "edge"};
    run_both(test::make_node("Pad", 2, 1, Attrs{{"mode", std::string(modes[g.uniform(0, 2)])}}),
             {x, g.ints_tensor(8, -3, 4)}, 13);
    run_both(test::make_node("ConstantOfShape", 1), {g.ints_tensor(4, -1, 4)}, 13);
    run_both(test::make_node("Range", 3), {g.scalar_i64(-9, 9), g.scalar_i64(-9, 9), g.scalar_i64(-3, 3)}, 13);
    std::vector<float> sv{1.f, 1.5f, 0.5f, 2.f};
    sv.resize(static_cast<size_t>(g.uniform(0, 4)));
    const Tensor scales = test::T<float>(sv, {static_cast<int64_t>(sv.size())});
    static const char* rmodes[] = {"nearest", "linear", "cubic"};
    run_both(test::make_node("Resize", 3, 1, Attrs{{"mode", std::string(rmodes[g.uniform(0, 2)])}}, {1}),
             {x, Tensor(), scales}, opset);
    run_both(test::make_node("Trilu", 2, 1, Attrs{{"upper", g.uniform(0, 1)}}), {x, g.scalar_i64(INT64_MIN, INT64_MAX)},
             14);
    run_both(test::make_node("OneHot", 3, 1, axis), {g.index(g.shape(3)), g.scalar_i64(-1, 4), g.data({2})}, 11);
    run_both(test::make_node("EyeLike", 1, 1, Attrs{{"k", g.uniform(INT64_MIN, INT64_MAX)}}), {x}, 9);
    run_both(test::make_node("DepthToSpace", 1, 1, Attrs{{"blocksize", g.uniform(0, 2)}}), {x}, 13);
    run_both(test::make_node("SpaceToDepth", 1, 1, Attrs{{"blocksize", g.uniform(0, 2)}}), {x}, 13);
    const Tensor idx = g.index(g.shape());
    run_both(test::make_node("ScatterElements", 3, 1, axis), {x, idx, g.data(idx.shape())}, 16);
    run_both(test::make_node("ScatterND", 3), {x, g.index(g.shape(3), -3, 3), g.data()}, 16);
    const Shape cs{g.uniform(0, 5)};
    std::vector<bool> cond(static_cast<size_t>(cs[0]));
    for (size_t i = 0; i < cond.size(); ++i) cond[i] = g.uniform(0, 1) != 0;
    run_both(test::make_node("Compress", 2, 1, g.uniform(0, 1) ? axis : Attrs{}), {x, test::T<bool>(cond, cs)}, 11);
    run_both(test::make_node("NonZero", 1), {x}, 13);
    run_both(test::make_node("ReverseSequence", 2), {x, g.ints_tensor(4, -1, 5)}, 10);
  }
}

}  // namespace
}  // namespace ms
