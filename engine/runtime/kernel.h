// The kernel seam: a kernel is a plain function over a KernelContext. Outputs whose shapes the
// schema inferred are allocated before the kernel runs (ctx.output(i)); data-dependent outputs are
// allocated by the kernel with ctx.allocate_output(). Kernels never print, time or allocate through
// other routes for outputs.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"

namespace ms::runtime {

class Backend;

// Runs a subgraph (If branches, Loop bodies) with the calling executor; names not defined in the
// subgraph resolve to the caller's values.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  virtual Expected<std::vector<Tensor>> run_subgraph(const ir::Graph& sub, const std::vector<Tensor>& inputs) = 0;
};

// Where outputs come from (caching allocator, arena slot, ...); implemented by executors.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual Expected<Tensor> allocate(size_t output_index, DType dtype, const Shape& shape) = 0;
  // Scratch memory for a kernel (workspace); freed when the tensor dies.
  virtual Expected<Tensor> scratch(DType dtype, const Shape& shape) = 0;
  // Scratch bytes a kernel may ask for without raising the memory its run needs: a planned Graph-mode
  // step's room in the arena beside the values live at it. A kernel with a choice of algorithms
  // takes one with a larger scratch (Winograd convs) only within it. Unbounded elsewhere.
  virtual uint64_t scratch_budget() const { return UINT64_MAX; }
};

class KernelContext {
 public:
  KernelContext(const ir::Node& node, int64_t opset, Backend& backend, std::span<const Tensor* const> inputs,
                std::span<Tensor> outputs, OutputAllocator& alloc, SubgraphRunner* subgraphs)
      : node_(node),
        opset_(opset),
        backend_(backend),
        inputs_(inputs),
        outputs_(outputs),
        alloc_(alloc),
        subgraphs_(subgraphs) {}

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  Backend& backend() const { return backend_; }

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr && inputs_[i]->defined(); }
  const Tensor& input(size_t i) const { return *inputs_[i]; }

  size_t num_outputs() const { return outputs_.size(); }
  // Preallocated output (defined() is false when its shape was not known before the run).
  Tensor& output(size_t i) { return outputs_[i]; }
  // Allocates (or returns the preallocated) output i with this shape.
  Expected<Tensor*> allocate_output(size_t i, DType dtype, const Shape& shape);
  // Sets output i to an existing tensor (views: Identity, Reshape). Shape must be as inferred.
  void set_output(size_t i, Tensor t) { outputs_[i] = std::move(t); }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) { return alloc_.scratch(dtype, shape); }
  uint64_t scratch_budget() const { return alloc_.scratch_budget(); }

  SubgraphRunner* subgraphs() const { return subgraphs_; }
  // The raw pieces, for a kernel that re-dispatches the node to another backend's kernel (the CUDA
  // backend's CPU fallback).
  std::span<const Tensor* const> input_ptrs() const { return inputs_; }
  std::span<Tensor> outputs() { return outputs_; }
  OutputAllocator& output_allocator() { return alloc_; }

  // The kernel keeps its own packed copy of input i (a frozen constant: a compiled graph's weights)
  // and finds that copy by the input's buffer and offset in every later call, never reading the
  // input's bytes again. An executor told that nothing else reads the constant may then release them
  // (GraphExecutor::release_constants_once_packed).
  void keeps_packed_copy(size_t i) {
    if (i < 32) packed_inputs_ |= uint32_t{1} << i;
  }
  // keeps_packed_copy for the input that `t` is (the same object); nothing where it is none of them.
  void keeps_packed_copy_of(const Tensor& t) {
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i] == &t) return keeps_packed_copy(i);
  }
  uint32_t packed_inputs() const { return packed_inputs_; }

  // Implementation string shown by the profiler ("onednn:jit:avx512_core", "eigen").
  void set_impl(std::string impl) { impl_ = std::move(impl); }
  const std::string& impl() const { return impl_; }

  // Error naming this node.
  Status fail(const std::string& what) const {
    return Status::error(ErrorCode::InvalidArgument, node_.label() + ": " + what).with_node(node_.id.value);
  }
  Status unsupported_case(const std::string& what) const {
    return Status::error(ErrorCode::Unsupported, node_.label() + ": " + what).with_node(node_.id.value);
  }

 private:
  const ir::Node& node_;
  int64_t opset_;
  Backend& backend_;
  std::span<const Tensor* const> inputs_;
  std::span<Tensor> outputs_;
  OutputAllocator& alloc_;
  SubgraphRunner* subgraphs_;
  std::string impl_;
  uint32_t packed_inputs_ = 0;
};

using KernelFn = Status (*)(KernelContext&);

// Op type -> kernel, per backend.
class KernelRegistry {
 public:
  void add(std::string op_type, KernelFn fn, std::string domain = "") { map_[domain + ":" + op_type] = fn; }
  KernelFn find(std::string_view op_type, std::string_view domain = "") const {
    std::string key;
    key.reserve(op_type.size() + domain.size() + 1);
    key.append(domain == "ai.onnx" ? std::string_view() : domain).append(":").append(op_type);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  std::vector<std::string> op_types() const;

 private:
  std::unordered_map<std::string, KernelFn> map_;
};

}  // namespace ms::runtime
