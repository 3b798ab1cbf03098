// PyNative AMP (autocast): with an AMP level set in the context (Context::amp) or by an
// AutocastGuard, the F:: ops that run inside a module call cast their float inputs the way the
// graph compiler's amp-cast pass would (compiler/amp.h): O1 casts the white list's inputs to bf16
// and its outputs back to f32; O2 runs every op in bf16 except the black list and the ops of
// normalization modules (BatchNorm2d, LayerNorm) and loss modules (type names ending in Loss or
// WithLogits), which run in f32; O3 runs everything in bf16.
// The outermost module's float outputs go back to f32, so a loss computed outside the network
// stays in f32 (MindSpore's network output cast). The Casts are ordinary ops: the tape records
// them and the Cast gradient brings each gradient back to the f32 parameter it belongs to.
#pragma once

#include <string>

#include "engine/compiler/amp.h"
#include "engine/frontend/nn/var.h"

namespace ms::nn {

// The level ops run under now: the innermost AutocastGuard, else the context's.
compiler::AmpLevel autocast_level();

// Overrides the context's level on this thread while alive (a training step, an evaluation).
class AutocastGuard {
 public:
  explicit AutocastGuard(compiler::AmpLevel level);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  int saved_;
};

// Held by Module::call around forward: tracks module depth and normalization modules.
class AutocastModuleScope {
 public:
  explicit AutocastModuleScope(const std::string& module_type);
  ~AutocastModuleScope();
  AutocastModuleScope(const AutocastModuleScope&) = delete;
  AutocastModuleScope& operator=(const AutocastModuleScope&) = delete;
  // The module's outputs: float outputs of the outermost module go back to f32.
  Vars finish(Vars outputs);

 private:
  bool active_ = false;
  bool black_ = false;
};

// Autocast off on this thread while alive (the op itself, once its inputs are cast).
class AutocastPause {
 public:
  AutocastPause();
  ~AutocastPause();
  AutocastPause(const AutocastPause&) = delete;
  AutocastPause& operator=(const AutocastPause&) = delete;

 private:
  int saved_depth_;
};

namespace autocast {
// The precision an op computes in under autocast now (Undefined: leave its inputs alone).
DType compute_type(const std::string& op_type, const std::string& domain);
// Inputs cast to `t` (float inputs other than non-data ones); nothing else changes.
Vars cast_inputs(const std::string& op_type, const Vars& inputs, DType t);
// O1 puts a white op's float outputs back to f32.
bool outputs_back_to_f32(const std::string& op_type, const std::string& domain);
}  // namespace autocast

}  // namespace ms::nn
