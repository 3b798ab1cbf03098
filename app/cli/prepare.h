#pragma once

#include <memory>

#include "app/cli/commands.h"
#include "engine/runtime/executor.h"

namespace ms::cli {

// Model, inputs and backend for run/compare/bench.
// The backend comes first so it is destroyed last: inputs may live in its device memory.
struct Prepared {
  std::unique_ptr<runtime::Backend> backend;
  ir::Graph graph;
  runtime::TensorMap inputs;
  std::string note;  // why the backend differs from the one asked for
};
Expected<Prepared> prepare(const RunArgs& a);

}  // namespace ms::cli
