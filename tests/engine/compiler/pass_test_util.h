// Shared by the per-pass golden tests: parse a textual graph, infer types, run passes with the
// verifier after each, return the stable text dump; or compile it whole and check the compiled
// graph's outputs against eager execution of the original.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler::pass_test {

inline runtime::Backend* fold_backend() {
  static const auto be = backends::create_cpu_backend(1);
  return be.get();
}

// Parses, infers types, runs the given passes (verifying after each) and returns the dump.
inline std::string run_passes(const std::string& text, std::vector<PassPtr> passes, ir::Graph* out = nullptr) {
  auto be = backends::create_cpu_backend(1);
  ir::Graph g = testing::parse_graph(text);
  PassManager pm;
  pm.add(make_infer_types_pass(be.get()));
  for (auto& p : passes) pm.add(std::move(p));
  VerifyAfterEachPass verify;
  pm.add_instrumentation(&verify);
  Status st = pm.run(g);
  EXPECT_TRUE(st.is_ok()) << st.message();
  if (out) *out = g;
  return ir::dump_text(g);
}

struct Compiled {
  std::unique_ptr<runtime::Backend> be;  // outlives the executor (its arena came from the backend)
  std::string dump;
  std::unique_ptr<compiler::CompiledExecutor> exe;
};

// Compiles at `level` (other options from `base`) and checks the outputs equal eager execution of
// the original graph.
inline Compiled compile_and_compare(const std::string& text, compiler::JitLevel level, double tol = 1e-4,
                                    const compiler::CompileOptions& base = {}) {
  auto be = backends::create_cpu_backend(2);
  ir::Graph g = testing::parse_graph(text);
  compiler::CompileOptions o = base;
  o.jit_level = level;
  o.verify_passes = true;
  auto c = compiler::compile_executor(g, *be, testing::signature_of(g), o);
  EXPECT_TRUE(c) << c.status().message();
  if (!c) return {};
  const auto in = testing::inputs_of(g);
  runtime::EagerExecutor eager(g, *be);
  auto want = eager.run(in);
  auto got = (*c)->run(in);
  EXPECT_TRUE(want && got);
  if (want && got) {
    for (size_t o2 = 0; o2 < want->size(); ++o2)
      for (int64_t i = 0; i < (*want)[o2].numel(); ++i) {
        EXPECT_NEAR((*got)[o2].data<float>()[i], (*want)[o2].data<float>()[i], tol)
            << "output " << o2 << " element " << i;
      }
  }
  // Run twice: arena reuse across runs must not change results.
  auto again = (*c)->run(in);
  EXPECT_TRUE(again);
  if (again && got) {
    for (int64_t i = 0; i < (*got)[0].numel(); ++i) {
      EXPECT_EQ((*again)[0].data<float>()[i], (*got)[0].data<float>()[i]);
    }
  }
  Compiled r;
  r.be = std::move(be);
  r.dump = ir::dump_text((*c)->graph());
  r.exe = std::move(*c);
  return r;
}

template <class... P> std::vector<PassPtr> list(P... p) {
  std::vector<PassPtr> v;
  (v.push_back(std::move(p)), ...);
  return v;
}

// How many nodes of `op` (its dump spelling, e.g. "ai.modescope.FusedConv") a graph dump holds.
inline int count_ops(const std::string& dump, const std::string& op) {
  int n = 0;
  for (size_t at = dump.find(" " + op + "("); at != std::string::npos; at = dump.find(" " + op + "(", at + 1)) ++n;
  return n;
}

}  // namespace ms::compiler::pass_test
