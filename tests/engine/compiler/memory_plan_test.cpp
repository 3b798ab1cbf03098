// The memory planner: Concat inputs planned inside the output, in-place chains, placement orders;
// and the branch schedule. Values against eager execution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/memory_plan.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/schedule.h"
#include "engine/compiler/views.h"
#include "engine/runtime/backend.h"
#include "tests/engine/compiler/pass_test_util.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/plan_checks.h"

namespace ms::compiler {
namespace {

// A slot of `bytes` at offset 0, defined at step `first` and last read at `last`.
runtime::MemorySlot slot(std::string value, uint64_t bytes, int first, int last) {
  runtime::MemorySlot s;
  s.value = std::move(value);
  s.bytes = bytes;
  s.first_step = first;
  s.last_step = last;
  return s;
}

using pass_test::compile_and_compare;
using pass_test::Compiled;

// A Concat along an axis with only 1s before it: its inputs are planned inside its output (the
// producers write there, the Concat copies nothing); with batch 2 the pieces are not contiguous
// and each input keeps its own block. Values against eager execution either way.
TEST(MemoryPlanner, ConcatInputsArePlannedInsideTheOutput) {
  for (int batch : {1, 2}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    Compiled c = compile_and_compare(std::string(R"(
      input x: f32[)") + std::to_string(batch) +
                                         R"(,16,8,8]
      init w: f32[8,16,1,1] = 0.3 -0.2 0.1
      a = Conv(x, w)
      b = Sigmoid(x)
      c = Concat(a, b) {axis=1}
      y = Neg(c)
      output y
    )",
                                     compiler::JitLevel::O1);
    ASSERT_TRUE(c.exe);
    const auto& slots = c.exe->memory_plan().slots;
    auto find = [&](const std::string& v) {
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].value == v) return static_cast<int>(i);
      return -1;
    };
    const int a = find("a"), b = find("b"), cc = find("c");
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    ASSERT_GE(cc, 0);
    if (batch == 1) {
      EXPECT_EQ(slots[a].within, cc);
      EXPECT_EQ(slots[b].within, cc);
      EXPECT_EQ(slots[a].offset, slots[cc].offset);
      EXPECT_EQ(slots[b].offset, slots[cc].offset + 8 * 64 * 4);
    } else {
      EXPECT_EQ(slots[a].within, -1);
      EXPECT_EQ(slots[b].within, -1);
    }
  }
  // The planner alone: two pieces inside an outer slot share its block; a value live beside them
  // goes elsewhere.
  std::vector<runtime::MemorySlot> s{slot("p", 1024, 0, 2), slot("q", 512, 1, 2), slot("cat", 1536, 2, 3),
                                     slot("other", 256, 0, 3)};
  s[0].within = 2;
  s[1].within = 2;
  s[1].within_offset = 1024;
  const auto plan = compiler::plan_memory(s);
  EXPECT_EQ(plan.slots[0].offset, plan.slots[2].offset);
  EXPECT_EQ(plan.slots[1].offset, plan.slots[2].offset + 1024);
  EXPECT_TRUE(plan.slots[3].offset >= plan.slots[2].offset + 1536 ||
              plan.slots[3].offset + 256 <= plan.slots[2].offset);
  EXPECT_EQ(plan.lower_bound, 1536u + 256u);
  EXPECT_EQ(plan.arena_bytes, plan.lower_bound);
}

// A Reshape between planned values views its input: the output lies at the input's offset and the
// kernel copies nothing. The input is read again after the Reshape by an op that could write its
// output over it in place (Neg, the input's last direct reader); the view is read later still, so
// that in-place pair must be refused. Values against eager execution; without views (the option
// off) the output gets a block of its own.
TEST(MemoryPlanner, ReshapeOutputViewsItsInputAndKeepsItFromInPlaceReuse) {
  const std::string text = R"(
    input x: f32[1,4,8]
    init s: i64[2] = 1 32
    a = Sigmoid(x)
    b = Reshape(a, s)
    n = Neg(a)
    t = Transpose(n) {perm=[0,2,1]}
    r = Reshape(t, s)
    y = Add(b, r)
    output y
  )";
  Compiled c = compile_and_compare(text, compiler::JitLevel::O1, 0);
  ASSERT_TRUE(c.exe);
  const auto& slots = c.exe->memory_plan().slots;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < slots.size(); ++i) at[slots[i].value] = i;
  ASSERT_TRUE(at.count("a") && at.count("b") && at.count("n"));
  const auto& a = slots[at["a"]];
  const auto& b = slots[at["b"]];
  EXPECT_TRUE(b.view);
  EXPECT_EQ(b.within, static_cast<int>(at["a"]));
  EXPECT_EQ(b.offset, a.offset);
  EXPECT_TRUE(slots[at["n"]].reuses.empty()) << "n was written over a while its view b is still read";
  const bool t_in_a = slots[at["n"]].offset < a.offset + a.bytes && a.offset < slots[at["n"]].offset + 128;
  EXPECT_FALSE(t_in_a);

  auto be = backends::create_cpu_backend(2);
  const ir::Graph g = testing::parse_graph(text);
  compiler::CompileOptions off;
  off.jit_level = compiler::JitLevel::O1;
  off.view_aliases = false;
  auto plain = compiler::compile_executor(g, *be, testing::signature_of(g), off);
  ASSERT_TRUE(plain);
  for (const auto& sl : (*plain)->memory_plan().slots) EXPECT_FALSE(sl.view) << sl.value;
}

// Where an op's output is a contiguous piece of its input, and where it is not.
TEST(ContiguousViews, OffsetsOfSlicesGathersPadsAndTransposes) {
  ir::Graph g;
  pass_test::run_passes(R"(
    input x: f32[1,4,16,8]
    input w: f32[3,2,16]
    init s1: i64[1] = 1
    init e3: i64[1] = 3
    init ax1: i64[1] = 1
    init ax2: i64[1] = 2
    init two: i64[1] = 2
    init i2: i64[] = 2
    init i1: i64[] = 1
    init zeros: i64[8] = 0 0 0 0 0 0 0 0
    init ones: i64[8] = 0 0 1 0 0 0 1 0
    a = Slice(x, s1, e3, ax1)
    b = Slice(x, s1, e3, ax2)
    c = Slice(x, s1, e3, ax1, two)
    d = Gather(w, i2) {axis=0}
    e = Gather(w, i1) {axis=1}
    f = Pad(x, zeros) {mode="constant"}
    h = Pad(x, ones) {mode="constant"}
    t1 = Transpose(x) {perm=[1,0,2,3]}
    t2 = Transpose(x) {perm=[0,2,1,3]}
    output a, b, c, d, e, f, h, t1, t2
  )",
                        {}, &g);
  std::map<std::string, std::optional<uint64_t>> got;
  for (const auto& n : g.nodes()) got[n.outputs[0]] = contiguous_view_offset(g, n);
  EXPECT_EQ(got["a"], std::optional<uint64_t>(16 * 8 * 4));  // rows 1..2 of axis 1: one run
  EXPECT_EQ(got["b"], std::nullopt);                         // axis 2 inside axis 1: strided
  EXPECT_EQ(got["c"], std::optional<uint64_t>(16 * 8 * 4));  // one row taken: the step does not matter
  EXPECT_EQ(got["d"], std::optional<uint64_t>(2 * 2 * 16 * 4));
  EXPECT_EQ(got["e"], std::nullopt);  // axis 1 after a dim of 3
  EXPECT_EQ(got["f"], std::optional<uint64_t>(0));
  EXPECT_EQ(got["h"], std::nullopt);
  EXPECT_EQ(got["t1"], std::optional<uint64_t>(0));  // only the dim of size 1 moves
  EXPECT_EQ(got["t2"], std::nullopt);
}

// Compiled, each contiguous Slice/Gather/Transpose output lies in its input's bytes at that offset and
// values match eager execution; a strided Slice keeps a block of its own.
TEST(ContiguousViews, PlannedInsideTheirInputAndEqualToEager) {
  Compiled c = compile_and_compare(R"(
    input x: f32[1,4,16,8]
    init s1: i64[1] = 1
    init e3: i64[1] = 3
    init ax1: i64[1] = 1
    init ax2: i64[1] = 2
    init i0: i64[] = 1
    p = Sigmoid(x)
    a = Slice(p, s1, e3, ax1)
    b = Slice(p, s1, e3, ax2)
    g = Gather(p, i0) {axis=1}
    t = Transpose(p) {perm=[1,0,2,3]}
    rt = Softmax(t) {axis=1}
    ra = Neg(a)
    rb = Neg(b)
    rg = Neg(g)
    output ra, rb, rg, rt
  )",
                                   compiler::JitLevel::O1, 0);
  ASSERT_TRUE(c.exe);
  const auto& slots = c.exe->memory_plan().slots;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < slots.size(); ++i) at[slots[i].value] = i;
  ASSERT_TRUE(at.count("p") && at.count("a") && at.count("b") && at.count("g"));
  const uint64_t base = slots[at["p"]].offset;
  EXPECT_TRUE(slots[at["a"]].view);
  EXPECT_EQ(slots[at["a"]].offset, base + 16 * 8 * 4);
  EXPECT_FALSE(slots[at["b"]].view);
  EXPECT_TRUE(slots[at["g"]].view);
  EXPECT_EQ(slots[at["g"]].offset, base + 16 * 8 * 4);
  ASSERT_TRUE(at.count("t"));
  EXPECT_TRUE(slots[at["t"]].view);
  EXPECT_EQ(slots[at["t"]].offset, base);
}

TEST(MemoryPlanner, InPlaceChainsShareOneBlockAndStayAtTheLowerBound) {
  // a -> b (in place over a) -> c (in place over b); d overlaps all of them.
  std::vector<runtime::MemorySlot> slots{slot("a", 1000, 0, 1), slot("b", 1000, 1, 2), slot("c", 1000, 2, 4),
                                         slot("d", 500, 0, 4)};
  const auto p = compiler::plan_memory(slots, {{0, 1}, {1, 2}});
  EXPECT_EQ(p.slots[1].reuses, "a");
  EXPECT_EQ(p.slots[2].reuses, "b");
  EXPECT_EQ(p.slots[0].offset, p.slots[2].offset);
  EXPECT_EQ(p.arena_bytes, runtime::align_up(1000, 64) + runtime::align_up(500, 64));
  EXPECT_EQ(p.lower_bound, p.arena_bytes);
  EXPECT_EQ(p.naive_bytes, 3 * runtime::align_up(1000, 64) + runtime::align_up(500, 64));
}

// Greedy by size alone leaves these four blocks at 768 bytes; placing by size x lifetime reaches
// the lower bound, and the planner keeps the smaller arena. The per-step live bytes peak at it.
TEST(MemoryPlanner, TriesSeveralPlacementOrdersAndKeepsTheSmallestArena) {
  std::vector<runtime::MemorySlot> slots{slot("a", 320, 4, 5), slot("b", 256, 3, 5), slot("c", 192, 0, 3),
                                         slot("d", 256, 1, 3)};
  const auto p = compiler::plan_memory(slots);
  EXPECT_EQ(p.lower_bound, 704u);
  EXPECT_EQ(p.arena_bytes, 704u);
  testing::expect_no_overlap(p);
  ASSERT_EQ(p.live.size(), 6u);
  EXPECT_EQ(p.live[0], 192u);
  EXPECT_EQ(p.live[3], 704u);
  EXPECT_EQ(p.live[5], 576u);
  EXPECT_EQ(*std::max_element(p.live.begin(), p.live.end()), p.lower_bound);
}

TEST(BranchScheduler, IndependentBranchesGetDifferentThreads) {
  auto be = backends::create_cpu_backend(4);
  ir::Graph g = testing::parse_graph(R"(
    input x: f32[1,8,16,16]
    init w: f32[8,8,3,3] = 0.1 -0.1 0.05
    a1 = Conv(x, w) {pads=[1,1,1,1]}
    a2 = Conv(a1, w) {pads=[1,1,1,1]}
    b1 = Conv(x, w) {pads=[1,1,1,1]}
    b2 = Conv(b1, w) {pads=[1,1,1,1]}
    y = Add(a2, b2)
    output y
  )");
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.disabled_passes = {"cse"};  // keep the two identical branches apart
  auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
  ASSERT_TRUE(c) << c.status().message();
  const auto& th = (*c)->step_threads();
  ASSERT_EQ(th.size(), (*c)->num_steps());
  std::set<int> used(th.begin(), th.end());
  EXPECT_EQ(used.size(), 2u) << "the two conv branches run on two threads";
}

}  // namespace
}  // namespace ms::compiler
