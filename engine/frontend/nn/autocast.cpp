#include "engine/frontend/nn/autocast.h"

#include <map>
#include <string_view>
#include <utility>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"

namespace ms::nn {
namespace {

constexpr int kNoOverride = -1;
thread_local int t_override = kNoOverride;
thread_local int t_depth = 0;        // module calls under autocast
thread_local int t_black_depth = 0;  // of which normalization modules
// Casts made in the current outermost module call, by source value and type: a value read by
// several ops (BatchNorm's input by its mean and its centring) is cast once. The entry holds the
// source Var too, so its address cannot be reused while the entry exists.
thread_local std::map<std::pair<const void*, DType>, std::pair<Var, Var>> t_casts;

bool ends_with_text(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Modules whose ops stay in f32 below O3: normalization, and losses written as modules (MSELoss,
// SoftmaxCrossEntropyWithLogits, ...), so a loss cell inside the trained module computes in f32 as
// a loss function outside it does (MindSpore's O2 casts the network's output to f32 for the loss).
bool is_black_module(const std::string& type) {
  return type == "BatchNorm2d" || type == "BatchNorm1d" || type == "LayerNorm" || type == "GroupNorm" ||
         ends_with_text(type, "Loss") || ends_with_text(type, "WithLogits");
}

bool is_amp_float(DType t) { return t == DType::F32 || t == compiler::kAmpLowType; }

}  // namespace

compiler::AmpLevel autocast_level() {
  return t_override == kNoOverride ? get_amp() : static_cast<compiler::AmpLevel>(t_override);
}

AutocastGuard::AutocastGuard(compiler::AmpLevel level) : saved_(t_override) { t_override = static_cast<int>(level); }
AutocastGuard::~AutocastGuard() { t_override = saved_; }

AutocastModuleScope::AutocastModuleScope(const std::string& module_type) {
  if (autocast_level() == compiler::AmpLevel::O0) return;
  active_ = true;
  black_ = is_black_module(module_type);
  ++t_depth;
  if (black_) ++t_black_depth;
}

AutocastModuleScope::~AutocastModuleScope() {
  if (!active_) return;
  --t_depth;
  if (black_) --t_black_depth;
  if (t_depth == 0) t_casts.clear();
}

Vars AutocastModuleScope::finish(Vars outputs) {
  if (!active_ || t_depth != 1) return outputs;
  for (Var& v : outputs)
    if (v.ok() && v.dtype() == compiler::kAmpLowType) v = F::cast(v, DType::F32);
  return outputs;
}

AutocastPause::AutocastPause() : saved_depth_(t_depth) { t_depth = 0; }
AutocastPause::~AutocastPause() { t_depth = saved_depth_; }

namespace autocast {

DType compute_type(const std::string& op_type, const std::string& domain) {
  const compiler::AmpLevel level = autocast_level();
  if (level == compiler::AmpLevel::O0 || t_depth == 0) return DType::Undefined;
  const compiler::AmpClass cls = compiler::amp_class(op_type, domain);
  if (cls == compiler::AmpClass::Keep) return DType::Undefined;
  // Inside a normalization module the statistics are plain ops: they take the black list's f32.
  if (t_black_depth > 0 && level != compiler::AmpLevel::O3) return DType::F32;
  return compiler::amp_compute_type(cls, level);
}

Vars cast_inputs(const std::string& op_type, const Vars& inputs, DType t) {
  Vars out = inputs;
  for (size_t i = 0; i < out.size(); ++i) {
    Var& v = out[i];
    if (!v.defined() || !v.ok() || compiler::amp_keeps_input(op_type, i)) continue;
    if (!is_amp_float(v.dtype()) || v.dtype() == t) continue;
    const auto key = std::make_pair(static_cast<const void*>(v.impl()), t);
    auto it = t_casts.find(key);
    if (it == t_casts.end()) it = t_casts.emplace(key, std::make_pair(v, F::cast(v, t))).first;
    v = it->second.second;
  }
  return out;
}

bool outputs_back_to_f32(const std::string& op_type, const std::string& domain) {
  return autocast_level() == compiler::AmpLevel::O1 &&
         compiler::amp_class(op_type, domain) == compiler::AmpClass::White;
}

}  // namespace autocast
}  // namespace ms::nn
