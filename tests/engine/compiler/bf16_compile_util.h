// A textual graph compiled as --precision bf16 compiles it (O2 with AMP O2) and run against the f32
// graph run eagerly: the bf16 compile tests' numeric check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/backend.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler::testing_bf16 {

// The pipeline --precision bf16 runs (O2 with AMP O2, verified after each pass) on g, in place.
inline Status bf16_pipeline(ir::Graph& g, runtime::Backend& backend) {
  JitConfig cfg;
  cfg.jit_level = JitLevel::O2;
  cfg.amp = AmpLevel::O2;
  cfg.verify = true;
  auto r = run_pipeline(g, &backend, cfg);
  return r ? Status::ok() : r.status();
}

// Output 0's largest magnitude in f32 and its largest |f32 - bf16| (a failure is reported and
// leaves both 0).
struct Bf16Deviation {
  double max_abs = 0, max_diff = 0;
};

inline Bf16Deviation bf16_compile_deviation(const std::string& text, runtime::Backend& backend) {
  Bf16Deviation d;
  const ir::Graph ref_graph = testing::parse_graph(text);
  const runtime::TensorMap in = testing::inputs_of(ref_graph);
  runtime::EagerExecutor eager(ref_graph, backend);
  auto ref = eager.run(in);
  CompileOptions o;
  o.jit_level = JitLevel::O2;
  o.amp = AmpLevel::O2;
  auto exe = compile_executor(ref_graph, backend, {}, o);
  if (!ref || !exe) {
    ADD_FAILURE() << (!ref ? ref.status().message() : exe.status().message());
    return d;
  }
  auto got = (*exe)->run(in);
  if (!got) {
    ADD_FAILURE() << got.status().message();
    return d;
  }
  const Tensor& a = (*ref)[0];
  const Tensor& b = (*got)[0];
  EXPECT_EQ(b.dtype(), DType::F32);
  if (a.numel() != b.numel() || b.dtype() != DType::F32) {
    ADD_FAILURE() << "outputs differ in size or type";
    return d;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    d.max_abs = std::max(d.max_abs, static_cast<double>(std::abs(a.data<float>()[i])));
    d.max_diff = std::max(d.max_diff, static_cast<double>(std::abs(a.data<float>()[i] - b.data<float>()[i])));
  }
  return d;
}

}  // namespace ms::compiler::testing_bf16
