// Loss scaling for mixed-precision training. The loss is multiplied by a scale before the
// backward so small bf16/f16 gradients do not flush to zero; the gradients are divided by it again
// before the update. Dynamic scaling checks every gradient for inf/NaN: on overflow the step is
// skipped (parameters, optimizer state and buffers keep their old values) and the scale halves;
// after `growth_interval` good steps in a row it doubles (MindSpore's DynamicLossScaleManager).
// Everything here is written with F:: ops on Vars - IsInf/IsNaN, ReduceMax, Where - so the same
// code runs eagerly (PyNative) and is traced into the training-step graph, where the skip is a
// data-dependent select inside the graph. Nodes are named under the "loss_scale" scope, which
// the amp-cast pass keeps in f32.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "engine/frontend/nn/var.h"

namespace ms::nn::train {

inline constexpr const char* kLossScaleScope = "loss_scale";

struct LossScaleConfig {
  enum class Kind { None, Static, Dynamic };
  Kind kind = Kind::None;
  double init_scale = 65536.0;  // dynamic: first scale; static: the scale
  double factor = 2.0;          // divided by on overflow, multiplied by after growth_interval
  int64_t growth_interval = 1000;
  double min_scale = 1.0;  // a dynamic scale never goes below this
  bool enabled() const { return kind != Kind::None; }
};

// "none" | "dynamic" | a positive number (static scale).
Expected<LossScaleConfig> parse_loss_scale(const std::string& text);
std::string loss_scale_name(const LossScaleConfig& c);  // "none", "dynamic", "1024"

// One step's loss-scaling values. scale and good_steps are f32 scalars (graph inputs in Graph mode).
struct LossScaleStep {
  Vars grads;     // unscaled gradients
  Var overflow;   // bool scalar: some gradient is inf or NaN
  Var new_scale;  // f32 scalar
  Var new_good;   // f32 scalar: good steps in a row since the last change
};

// Unscales `grads` (divided by `scale`) and computes the overflow flag and the next scale state.
LossScaleStep unscale_and_check(const LossScaleConfig& c, const Vars& grads, const Var& scale, const Var& good_steps);

// Element-wise select per pair: `old` where overflow, else `updated` (the skipped step).
Vars keep_on_overflow(const Var& overflow, const Vars& updated, const Vars& old);

}  // namespace ms::nn::train
