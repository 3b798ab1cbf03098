#include "engine/frontend/train/loss_scale.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"

namespace ms::nn::train {
namespace {
// ScopeGuard keeps a pointer to the name: it must outlive the guard.
const std::string& scope_name() {
  static const std::string s = kLossScaleScope;
  return s;
}
}  // namespace

Expected<LossScaleConfig> parse_loss_scale(const std::string& text) {
  LossScaleConfig c;
  if (text.empty() || text == "none" || text == "off") return c;
  if (text == "dynamic") {
    c.kind = LossScaleConfig::Kind::Dynamic;
    return c;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || !(v > 0))
    return invalid_argument("--loss-scale must be 'dynamic', 'none' or a positive number, got '" + text + "'");
  c.kind = LossScaleConfig::Kind::Static;
  c.init_scale = v;
  return c;
}

std::string loss_scale_name(const LossScaleConfig& c) {
  switch (c.kind) {
    case LossScaleConfig::Kind::None: return "none";
    case LossScaleConfig::Kind::Dynamic: return "dynamic";
    case LossScaleConfig::Kind::Static: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", c.init_scale);
  return buf;
}

LossScaleStep unscale_and_check(const LossScaleConfig& c, const Vars& grads, const Var& scale, const Var& good_steps) {
  const ScopeGuard scope(scope_name());
  LossScaleStep r;
  Var inv = F::op("Reciprocal", {scale});
  Vars flags;
  for (const Var& g : grads) {
    Var gi = g.dtype() == DType::F32 ? inv : F::cast(inv, g.dtype());
    Var u = F::mul(g, gi);
    r.grads.push_back(u);
    // Any inf or NaN in this gradient, as an f32 0/1 scalar.
    Var bad = F::op("Or", {F::op("IsInf", {u}), F::op("IsNaN", {u})});
    flags.push_back(F::op("ReduceMax", {F::cast(bad, DType::F32)}, {{"keepdims", int64_t{0}}}));
  }
  Var any = flags.empty() ? F::scalar(0.0) : flags.size() == 1 ? flags[0] : F::op("Max", flags);
  r.overflow = F::greater(any, 0.5);
  if (c.kind != LossScaleConfig::Kind::Dynamic) {
    r.new_scale = F::identity(scale);
    r.new_good = F::identity(good_steps);
    return r;
  }
  Var next_good = F::add(good_steps, 1.0);
  Var grow = F::op("GreaterOrEqual", {next_good, F::scalar(static_cast<double>(c.growth_interval))});
  Var shrunk = F::op("Max", {F::mul(scale, 1.0 / c.factor), F::scalar(c.min_scale)});
  Var grown = F::op("Where", {grow, F::mul(scale, c.factor), scale});
  r.new_scale = F::op("Where", {r.overflow, shrunk, grown});
  Var zero = F::scalar(0.0);
  r.new_good = F::op("Where", {r.overflow, zero, F::op("Where", {grow, zero, next_good})});
  return r;
}

Vars keep_on_overflow(const Var& overflow, const Vars& updated, const Vars& old) {
  const ScopeGuard scope(scope_name());
  Vars out;
  for (size_t i = 0; i < updated.size() && i < old.size(); ++i)
    out.push_back(F::op("Where", {overflow, old[i], updated[i]}));
  return out;
}

}  // namespace ms::nn::train
