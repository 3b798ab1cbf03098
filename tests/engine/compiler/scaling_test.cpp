// Compile work against graph size, counted (compiler/work.h) rather than timed: 4x the nodes may
// cost at most 6x the work, for the whole compile and for each pass. Graphs are small enough to run
// in a few seconds under AddressSanitizer; a quadratic pass shows as a 16x ratio.
#include <gtest/gtest.h>

#include <cctype>
#include <map>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/work.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"

namespace ms {
namespace {

using compiler::WorkCounters;

Tensor filled(std::vector<int64_t> shape, float v) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor::from_vector<float>(std::vector<float>(static_cast<size_t>(n), v), shape);
}

// Appends a node; returns its output.
std::string add(ir::Graph& g, const std::string& op, std::vector<std::string> inputs, const std::string& out,
                std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.id = g.ids()->next();
  n.origins = {n.id};
  n.op_type = op;
  n.name = out;
  n.inputs = std::move(inputs);
  n.outputs = {out};
  for (auto& [k, v] : attrs) n.attrs[k] = v;
  g.add_node(std::move(n));
  return out;
}

ir::Graph with_input(const std::vector<int64_t>& dims) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, dims, std::vector<std::string>(dims.size())}, {}, std::nullopt});
  g.inputs = {"x"};
  return g;
}

// The graph: (MatMul 16x16, Add bias, Relu) layers, `nodes` nodes in all.
ir::Graph dense_chain(int nodes) {
  ir::Graph g = with_input({1, 16});
  std::string cur = "x";
  for (int l = 0; l < nodes / 3; ++l) {
    const std::string s = "l" + std::to_string(l) + ".";
    g.add_initializer(s + "w", filled({16, 16}, 0.01f));
    g.add_initializer(s + "b", filled({16}, 0.1f));
    cur = add(g, "MatMul", {cur, s + "w"}, s + "mm");
    cur = add(g, "Add", {cur, s + "b"}, s + "add");
    cur = add(g, "Relu", {cur}, s + "relu");
  }
  g.outputs = {cur};
  return g;
}

// Blocks that give every O2 pass something to do: Identity and Dropout (simplify), Reshape and
// Transpose pairs (merged), two identical Sigmoids (cse), a Conv + BatchNorm (fold-batchnorm, then
// fuse-ops and conv-layout), MatMul + Add + residual Add (fuse-ops), Mul/Exp chains (fuse-elementwise)
// and a ReduceSum of one (fuse-reduce), a Shape (constant-folding) and an unread Neg (dce).
ir::Graph mixed_blocks(int blocks) {
  ir::Graph g = with_input({1, 16, 4, 4});
  g.add_initializer("shape_flat", Tensor::from_vector<int64_t>({1, 256}, {2}));
  g.add_initializer("shape_img", Tensor::from_vector<int64_t>({1, 16, 4, 4}, {4}));
  g.add_initializer("shape_2d", Tensor::from_vector<int64_t>({16, 16}, {2}));
  g.add_initializer("axes", Tensor::from_vector<int64_t>({1}, {1}));
  std::string cur = "x";
  for (int b = 0; b < blocks; ++b) {
    const std::string s = "b" + std::to_string(b) + ".";
    g.add_initializer(s + "cw", filled({16, 16, 1, 1}, 0.02f));
    for (const char* p : {"scale", "bias", "mean", "var"}) g.add_initializer(s + p, filled({16}, 1.0f));
    g.add_initializer(s + "mw", filled({256, 256}, 0.001f));
    g.add_initializer(s + "mb", filled({256}, 0.1f));
    g.add_initializer(s + "k", filled({1}, 0.5f));
    std::string v = add(g, "Identity", {cur}, s + "id");
    v = add(g, "Conv", {v, s + "cw"}, s + "conv", {{"kernel_shape", ir::Attribute(std::vector<int64_t>{1, 1})}});
    v = add(g, "BatchNormalization", {v, s + "scale", s + "bias", s + "mean", s + "var"}, s + "bn");
    v = add(g, "Relu", {v}, s + "relu");
    v = add(g, "Reshape", {v, "shape_2d"}, s + "r1");
    v = add(g, "Reshape", {v, "shape_flat"}, s + "r2");
    const std::string flat = v;
    v = add(g, "MatMul", {v, s + "mw"}, s + "mm");
    v = add(g, "Add", {v, s + "mb"}, s + "mm_bias");
    v = add(g, "Add", {v, flat}, s + "residual");
    v = add(g, "Dropout", {v}, s + "drop");
    const std::string a = add(g, "Sigmoid", {v}, s + "sig_a");
    const std::string c = add(g, "Sigmoid", {v}, s + "sig_b");
    v = add(g, "Mul", {a, c}, s + "mul");
    v = add(g, "Mul", {v, s + "k"}, s + "scaled");
    v = add(g, "Exp", {v}, s + "exp");
    const std::string sum = add(g, "ReduceSum", {v, "axes"}, s + "sum", {{"keepdims", ir::Attribute(int64_t{1})}});
    v = add(g, "Div", {v, sum}, s + "norm");
    add(g, "Neg", {v}, s + "unread");
    add(g, "Shape", {v}, s + "shape");
    v = add(g, "Reshape", {v, "shape_img"}, s + "back");
    v = add(g, "Transpose", {v}, s + "t1", {{"perm", ir::Attribute(std::vector<int64_t>{0, 2, 3, 1})}});
    v = add(g, "Transpose", {v}, s + "t2", {{"perm", ir::Attribute(std::vector<int64_t>{0, 3, 1, 2})}});
    cur = v;
  }
  g.outputs = {cur};
  return g;
}

struct Compiled {
  WorkCounters total;                       // the whole compile, memory plan included
  std::map<std::string, WorkCounters> per;  // per pass argument
  size_t nodes_after = 0;
  uint64_t arena = 0, lower_bound = 0;
};

Compiled compile(const ir::Graph& g, const std::vector<int64_t>& input_dims) {
  auto backend = backends::create_cpu_backend(1);
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.keep_snapshots = true;
  Compiled c;
  std::unique_ptr<compiler::CompiledExecutor> ex;
  {
    compiler::WorkScope scope(c.total);
    auto r = compiler::compile_executor(
        g, *backend, {{"x", ir::ValueType{DType::F32, input_dims, std::vector<std::string>(input_dims.size())}}}, o);
    EXPECT_TRUE(r.has_value()) << r.status().message();
    if (!r) return c;
    ex = std::move(*r);
  }
  for (const auto& p : ex->compile_result().reports) c.per[p.pass] = p.work;
  c.nodes_after = ex->graph().nodes().size();
  c.arena = ex->memory_plan().arena_bytes;
  c.lower_bound = ex->memory_plan().lower_bound;
  return c;
}

// `large` has 4x the nodes of `small`: at most 6x the work, in all and per pass and per counter.
void expect_linear(const Compiled& small, const Compiled& large) {
  auto ratio = [](uint64_t a, uint64_t b) {
    return static_cast<double>(b) / static_cast<double>(std::max<uint64_t>(a, 1));
  };
  EXPECT_LE(ratio(small.total.total(), large.total.total()), 6.0)
      << "work " << small.total.to_json() << " -> " << large.total.to_json();
  const std::pair<const char*, uint64_t WorkCounters::*> counters[] = {
      {"nodes_visited", &WorkCounters::nodes_visited},
      {"patterns_tried", &WorkCounters::patterns_tried},
      {"use_list_rebuilds", &WorkCounters::use_list_rebuilds},
      {"snapshot_copies", &WorkCounters::snapshot_copies},
      {"planner_steps", &WorkCounters::planner_steps}};
  for (const auto& [name, field] : counters) EXPECT_LE(ratio(small.total.*field, large.total.*field), 6.0) << name;
  for (const auto& [pass, w] : large.per) {
    auto s = small.per.find(pass);
    ASSERT_NE(s, small.per.end()) << pass;
    // Tiny counts (a pass that finds nothing) may grow by a constant.
    EXPECT_LE(w.total(), 6 * s->second.total() + 64) << pass << ": " << s->second.to_json() << " -> " << w.to_json();
  }
}

TEST(CompilerScaling, DenseChainWorkIsLinearInNodes) {
  const Compiled small = compile(dense_chain(501), {1, 16});
  const Compiled large = compile(dense_chain(2004), {1, 16});
  // Every layer became one FusedMatMul (bias and ReLU as post-ops).
  EXPECT_EQ(small.nodes_after, 167u);
  EXPECT_EQ(large.nodes_after, 668u);
  EXPECT_GT(small.total.planner_steps, 0u);
  EXPECT_GT(small.total.snapshot_copies, 0u);
  EXPECT_EQ(large.arena, large.lower_bound);
  expect_linear(small, large);
}

TEST(CompilerScaling, EveryPassIsLinearInNodes) {
  const Compiled small = compile(mixed_blocks(20), {1, 16, 4, 4});
  const Compiled large = compile(mixed_blocks(80), {1, 16, 4, 4});
  // Each block shrinks to the same few nodes (fusions, merges and removals happened).
  EXPECT_LT(large.nodes_after, 80u * 12);
  EXPECT_EQ(large.nodes_after, 4 * small.nodes_after);
  for (const char* pass : {"simplify", "cse", "fold-batchnorm", "fuse-ops", "fuse-elementwise", "dce"}) {
    EXPECT_GT(large.per.at(pass).patterns_tried + large.per.at(pass).nodes_visited, 0u) << pass;
  }
  expect_linear(small, large);
}

TEST(CompilerScaling, UnknownDisabledPassIsAnErrorListingTheValidOnes) {
  const Status bad = compiler::check_pass_names({"fuse-op"});
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("unknown pass 'fuse-op'"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("fuse-ops"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("branch-schedule"), std::string::npos) << bad.message();
  EXPECT_TRUE(
      compiler::check_pass_names({"fuse-ops", "FuseOps", "conv-layout", "amp-cast", "branch-schedule", "plan-memory"})
          .is_ok());
  ir::Graph g = dense_chain(3);
  auto backend = backends::create_cpu_backend(1);
  compiler::JitConfig config;
  config.disabled_passes = {"simplfy"};
  EXPECT_FALSE(compiler::run_pipeline(g, backend.get(), config).has_value());
}

// One name per pass: its name() is its argument without the dashes (FuseOps / fuse-ops), as are
// the class and (with underscores) the file.
TEST(CompilerScaling, EachPassHasOneName) {
  for (const auto& e : compiler::describe_pipeline(compiler::JitLevel::O2, compiler::AmpLevel::O2)) {
    std::string a;
    for (char ch : e.argument)
      if (ch != '-') a += ch;
    std::string n;
    for (char ch : e.name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(n, a) << e.name << " / " << e.argument;
  }
}

}  // namespace
}  // namespace ms
