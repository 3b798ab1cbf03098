// Op-by-op dispatch shared by the eager executor, subgraphs (If/Loop bodies) in both modes, and the
// graph executor's dynamic-shape steps: infer from actual inputs, allocate outputs, find the kernel,
// run, release dead values.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "engine/runtime/executor.h"
#include "engine/runtime/program.h"

namespace ms::runtime {

class Interpreter;

// Arena blocks for a Graph-mode step's outputs whose shape is only known at run time (a symbolic dim
// compiled for a shape bucket): each planned for the bucket's upper bound. An output that fits its
// block is a view of the arena there; one that does not (bytes 0: no block) is allocated apart.
struct PlacedOutputs {
  struct Block {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  std::shared_ptr<Buffer> arena;
  std::vector<Block> blocks;  // per output of the step
};

// One activation of a Program: its slot values and the enclosing frame for outer-scope names.
class Frame final : public SubgraphRunner {
 public:
  Frame(Interpreter& interp, const Program& prog, const Frame* parent);
  Expected<std::vector<Tensor>> run_subgraph(const ir::Graph& sub, const std::vector<Tensor>& inputs) override;
  const Tensor* lookup(const std::string& name) const;  // here, then enclosing frames

  Interpreter& interp;
  const Program& prog;
  const Frame* parent;
  std::vector<Tensor> slots;
};

class Interpreter {
 public:
  Interpreter(Backend& backend, ExecMode mode) : backend_(backend), mode_(mode) {}
  Backend& backend() { return backend_; }
  ExecMode mode() const { return mode_; }

  // Program of a subgraph (built once, cached by graph address).
  Expected<const Program*> program_for(const ir::Graph& g);

  // Binds inputs, constants and outer values, then dispatches every step dynamically.
  Expected<std::vector<Tensor>> run(const Program& p, const std::vector<Tensor>& inputs, const Frame* parent);

  // Dispatches one step in `frame`: preallocated outputs (when `outputs` entries are defined) are used
  // as given; others are inferred and allocated here. Kernel scratch comes from `scratch` when given
  // (the graph executor's arena), else from the backend's allocator. Inferred outputs go into
  // `placed`'s blocks where they fit. `packed_inputs`, when given, gets the kernel's
  // KernelContext::packed_inputs().
  Status dispatch(Frame& frame, const Step& step, std::vector<Tensor>& outputs, bool infer_shapes,
                  OutputAllocator* scratch = nullptr, const PlacedOutputs* placed = nullptr,
                  uint32_t* packed_inputs = nullptr);

  void set_options(const RunOptions* options) { options_ = options; }
  const RunOptions* options() const { return options_; }
  int64_t kernels_launched = 0;

 private:
  Backend& backend_;
  ExecMode mode_;
  const RunOptions* options_ = nullptr;
  std::map<const ir::Graph*, std::unique_ptr<Program>> programs_;
};

// Hands a step's node, inputs and outputs (as they are in `frame` now) to the options' tap, if any.
Status tap_step(const RunOptions* options, const Frame& frame, const Step& step, Backend& backend, ExecMode mode);

// Allocates from the backend's caching allocator and reports to the observer.
Expected<Tensor> allocate_value(Backend& backend, RunObserver* observer, const std::string& value, ir::NodeId producer,
                                DType dtype, const Shape& shape);

}  // namespace ms::runtime
