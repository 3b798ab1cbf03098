// Module: the Cell of the builder API. A module owns named parameters (and buffers such as a
// BatchNorm's running statistics) and named child modules; calling it runs `forward` under its
// name in the module path, eagerly (PyNative) or into the active trace. In Graph mode, or when
// jit() was applied to it, a call from eager code traces forward once per input signature,
// compiles the graph and runs the compiled form (hybrid: the rest of the model stays eager).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/frontend/nn/functional.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/nn/var.h"

namespace ms::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Single-input modules override forward(x); others override forward_n(xs).
  virtual Var forward(const Var& x);
  virtual Vars forward_n(const Vars& xs);

  Var operator()(const Var& x);
  Vars operator()(const Vars& xs);

  // Type name for messages ("Dense", "Conv2d", ...).
  virtual std::string type_name() const { return "Module"; }
  // Local name under the parent ("" for a top-level module).
  const std::string& name() const { return name_; }

  // Parameters and buffers of this module and its children, "fc1.weight" style, in registration order.
  std::vector<std::pair<std::string, Tensor>> named_parameters(const std::string& prefix = "") const;
  int64_t num_parameters() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

  // Parameters with their slot and kind: buffers (BatchNorm running statistics) are not trained.
  struct Slot {
    std::string name;
    Tensor* tensor;
    bool buffer;
  };
  std::vector<Slot> parameter_slots(const std::string& prefix = "");

  // Training mode (this module and its children): BatchNorm uses batch statistics and updates its
  // running statistics, Dropout draws a mask.
  void set_training(bool training);
  bool training() const { return training_; }

  // Hybrid execution: this module's calls from eager code run as a compiled graph.
  void set_jit(const JitConfig& config);
  void clear_jit();
  bool jitted() const { return jit_ != nullptr; }
  // The compiled-graph cache of this module (created on first Graph-mode or jitted call).
  GraphCache* graph_cache() const { return cache_.get(); }
  // Compiled graphs hold the parameters as they were when compiled (the compiler may fold or
  // repack them): after changing parameters in place, drop the cache so the next call re-traces.
  void clear_graph_cache() { cache_.reset(); }

 protected:
  template <class M> std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    m->name_ = name;
    children_.emplace_back(std::move(name), m);
    return m;
  }
  // The tensor stays owned here; param() hands it out as a Var (traces name it by its path).
  void register_parameter(std::string name, Tensor t) { params_.emplace_back(std::move(name), std::move(t)); }
  // A named tensor that is state, not a trainable parameter (listed by named_parameters too).
  void register_buffer(std::string name, Tensor t);
  // Registers under `name`, or replaces what is registered there, in place (a Python cell whose
  // attribute is assigned again).
  void set_module(const std::string& name, std::shared_ptr<Module> m);
  void set_parameter(const std::string& name, Tensor t, bool buffer);
  // Sets a buffer to a new value computed in forward (training statistics): written in place when
  // concrete, or handed to the active BufferSink (a traced training step makes it a graph output).
  void update_buffer(const std::string& name, const Var& value);
  Var param(const std::string& name) const;
  Tensor* param_tensor(const std::string& name);

  friend class Sequential;
  friend class ModuleList;

 private:
  Vars call(const Vars& xs);
  std::string name_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::unique_ptr<JitConfig> jit_;
  std::unique_ptr<GraphCache> cache_;
  bool in_forward_default_ = false;
  bool training_ = false;
  std::vector<std::string> buffers_;
};

// While alive, Module::param returns the bound Var for a parameter tensor (by data pointer)
// instead of the tensor itself: value_and_grad / TrainStep make parameters graph inputs this way.
class ParameterBinding {
 public:
  explicit ParameterBinding(std::unordered_map<const void*, Var> bound);
  ~ParameterBinding();
  ParameterBinding(const ParameterBinding&) = delete;
  ParameterBinding& operator=(const ParameterBinding&) = delete;

 private:
  std::unordered_map<const void*, Var> bound_;
  const std::unordered_map<const void*, Var>* saved_;
};

// Collects Module::update_buffer calls instead of writing them (a traced training step).
class BufferSink {
 public:
  BufferSink();
  ~BufferSink();
  BufferSink(const BufferSink&) = delete;
  BufferSink& operator=(const BufferSink&) = delete;
  struct Update {
    Tensor* target;
    Var value;
  };
  const std::vector<Update>& updates() const { return updates_; }
  void add(Tensor* target, const Var& value) { updates_.push_back({target, value}); }

 private:
  std::vector<Update> updates_;
  BufferSink* saved_;
};

// Children named "0", "1", ... run in order.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> mods);
  Sequential& add(std::shared_ptr<Module> m);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "Sequential"; }
  size_t size() const { return children().size(); }
  Module& operator[](size_t i) const { return *children()[i].second; }
};

// A list of children ("0", "1", ...) the owner calls as it likes (no forward of its own).
class ModuleList : public Module {
 public:
  ModuleList& push_back(std::shared_ptr<Module> m);
  std::string type_name() const override { return "ModuleList"; }
  size_t size() const { return children().size(); }
  Module& operator[](size_t i) const { return *children()[i].second; }
};

}  // namespace ms::nn
