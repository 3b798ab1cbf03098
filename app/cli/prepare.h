#pragma once

#include <memory>

#include "app/cli/commands.h"
#include "engine/runtime/executor.h"

namespace ms::cli {

// Model, inputs and backend for run/compare/bench.
struct Prepared {
  ir::Graph graph;
  runtime::TensorMap inputs;
  std::unique_ptr<runtime::Backend> backend;
  std::string note;  // why the backend differs from the one asked for
};
Expected<Prepared> prepare(const RunArgs& a);

}  // namespace ms::cli
