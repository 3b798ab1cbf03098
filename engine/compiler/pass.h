// A pass only transforms (after MLIR's Pass): a small class with a name, a command-line argument,
// a description and run(Graph&). Passes never print or time themselves; everything that cuts across
// passes (snapshots, timing, verification, skipping) is an instrumentation on the PassManager.
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace ms::compiler {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;         // "ConstantFolding"
  virtual std::string argument() const = 0;     // "constant-folding" (CLI, --disable, dump file names)
  virtual std::string description() const = 0;  // one line for --list
  virtual Status run(ir::Graph& g) = 0;
  // Also run on the subgraphs (If branches, Loop bodies), each a fresh copy, innermost last. Only
  // passes that stay within one graph opt in: values of an enclosing graph are unknown to them
  // (no type, no constant), so they leave what reads them as it is.
  virtual bool runs_on_subgraphs() const { return false; }
};

using PassPtr = std::unique_ptr<Pass>;

}  // namespace ms::compiler
