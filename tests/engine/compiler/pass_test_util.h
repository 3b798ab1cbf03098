// Shared by the per-pass golden tests: parse a textual graph, infer types, run passes with the
// verifier after each, return the stable text dump.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backends/select.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/backend.h"
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

template <class... P> std::vector<PassPtr> list(P... p) {
  std::vector<PassPtr> v;
  (v.push_back(std::move(p)), ...);
  return v;
}

}  // namespace ms::compiler::pass_test
