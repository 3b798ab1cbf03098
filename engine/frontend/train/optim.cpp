#include "engine/frontend/train/optim.h"

#include <cmath>
#include <memory>

#include "engine/frontend/nn/functional.h"

namespace ms::nn::train {

ParamGroup no_decay_group(double lr_scale) {
  return {"no_decay", [](const std::string&, const Shape& s) { return s.size() <= 1; }, Hyper{lr_scale, 0.0}};
}

Expected<OptimizerKind> optimizer_kind(std::string_view name) {
  if (name == "sgd") return OptimizerKind::SGD;
  if (name == "adam") return OptimizerKind::Adam;
  if (name == "adamw") return OptimizerKind::AdamW;
  return invalid_argument("unknown optimizer '" + std::string(name) + "' (sgd, adam, adamw)");
}

const char* optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::SGD: return "sgd";
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::AdamW: return "adamw";
  }
  return "?";
}

std::vector<Hyper> resolve_groups(const OptimizerConfig& cfg, const std::vector<std::string>& names,
                                  const std::vector<Shape>& shapes) {
  std::vector<Hyper> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    Hyper h{1.0, cfg.weight_decay};
    const Shape shape = i < shapes.size() ? shapes[i] : Shape{};
    for (const auto& g : cfg.groups)
      if (g.match && g.match(names[i], shape)) {
        h = g.hyper;
        break;
      }
    out.push_back(h);
  }
  return out;
}

Status validate(const OptimizerConfig& c) {
  auto bad = [](const std::string& m) { return invalid_argument(m); };
  if (!(c.momentum >= 0 && c.momentum < 1)) return bad("momentum " + std::to_string(c.momentum) + " not in [0, 1)");
  if (c.nesterov && c.momentum == 0) return bad("Nesterov momentum needs momentum > 0");
  if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1))
    return bad("Adam betas (" + std::to_string(c.beta1) + ", " + std::to_string(c.beta2) + ") not in [0, 1)");
  if (!(c.eps > 0)) return bad("Adam eps must be > 0");
  if (!(c.weight_decay >= 0)) return bad("weight decay must be >= 0");
  for (const auto& g : c.groups)
    if (!(g.hyper.weight_decay >= 0) || !(g.hyper.lr_scale >= 0))
      return bad("parameter group '" + g.name + "': lr scale and weight decay must be >= 0");
  return Status::ok();
}

namespace {

Vars failed_n(size_t n, const Status& st) { return Vars(n, Var::failed(st)); }

Var zeros_like(const Var& p) {
  if (!p.ok()) return p;
  return Var(Tensor::zeros(p.dtype(), p.shape()));
}

// The group lr as a Var: lr * scale (no op when the scale is 1).
Var scaled(const Var& lr, double scale) { return scale == 1.0 ? lr : F::mul(lr, scale); }

// A check shared by every update: counts agree and the hyperparameters cover every parameter.
Status check_counts(const char* what, const Vars& params, const Vars& grads, const Vars& state, size_t state_per,
                    const std::vector<Hyper>& hyper) {
  if (grads.size() != params.size())
    return invalid_argument(std::string(what) + ": " + std::to_string(grads.size()) + " gradients for " +
                            std::to_string(params.size()) + " parameters");
  if (state.size() != params.size() * state_per)
    return invalid_argument(std::string(what) + ": optimizer state has " + std::to_string(state.size()) +
                            " tensors, expected " + std::to_string(params.size() * state_per));
  if (!hyper.empty() && hyper.size() != params.size())
    return invalid_argument(std::string(what) + ": parameter groups cover " + std::to_string(hyper.size()) +
                            " parameters, the model has " + std::to_string(params.size()));
  MS_RETURN_IF_ERROR(first_error(params));
  return first_error(grads);
}

UpdateRule sgd_rule(const OptimizerConfig& c, std::shared_ptr<const std::vector<Hyper>> hyper) {
  const size_t per = c.momentum > 0 ? 1 : 0;
  UpdateRule r;
  r.init_state = [per](const Vars& params) {
    Vars s;
    if (per)
      for (const Var& p : params) s.push_back(zeros_like(p));
    return s;
  };
  r.update = [c, per, hyper](const Vars& params, const Vars& grads, const Vars& state, const Var& lr,
                             const Var&) -> std::pair<Vars, Vars> {
    Status st = check_counts("sgd", params, grads, state, per, *hyper);
    if (!st.is_ok()) return {failed_n(params.size(), st), failed_n(state.size(), st)};
    Vars np, ns;
    for (size_t i = 0; i < params.size(); ++i) {
      const Hyper h = hyper->empty() ? Hyper{1.0, c.weight_decay} : (*hyper)[i];
      Var g = grads[i];
      if (h.weight_decay != 0) g = F::add(g, F::mul(params[i], h.weight_decay));
      if (per) {
        Var buf = F::add(F::mul(state[i], c.momentum), g);
        g = c.nesterov ? F::add(g, F::mul(buf, c.momentum)) : buf;
        ns.push_back(buf);
      }
      np.push_back(F::sub(params[i], F::mul(g, scaled(lr, h.lr_scale))));
    }
    return {np, ns};
  };
  return r;
}

UpdateRule adam_rule(const OptimizerConfig& c, std::shared_ptr<const std::vector<Hyper>> hyper) {
  UpdateRule r;
  r.init_state = [](const Vars& params) {
    Vars s;
    for (int k = 0; k < 2; ++k)
      for (const Var& p : params) s.push_back(zeros_like(p));
    return s;
  };
  const bool decoupled = c.kind == OptimizerKind::AdamW;
  r.update = [c, decoupled, hyper](const Vars& params, const Vars& grads, const Vars& state, const Var& lr,
                                   const Var& step) -> std::pair<Vars, Vars> {
    const char* name = decoupled ? "adamw" : "adam";
    Status st = check_counts(name, params, grads, state, 2, *hyper);
    if (st.is_ok() && !step.ok()) st = step.status();
    if (!st.is_ok()) return {failed_n(params.size(), st), failed_n(state.size(), st)};
    const size_t n = params.size();
    // Bias corrections from the step Var, shared by every parameter (PyTorch's form):
    //   p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps),  bc = 1 - beta^t = 1 - exp(t ln beta).
    auto correction = [&](double beta) {
      if (beta == 0) return F::scalar(1.0);
      return F::sub(F::scalar(1.0), F::exp(F::mul(step, std::log(beta))));
    };
    Var bc1 = correction(c.beta1);
    Var inv_sqrt_bc2 = F::div(F::scalar(1.0), F::sqrt(correction(c.beta2)));
    Var step_size = F::div(lr, bc1);
    Vars np, m_new, v_new;
    for (size_t i = 0; i < n; ++i) {
      const Hyper h = hyper->empty() ? Hyper{1.0, c.weight_decay} : (*hyper)[i];
      Var p = params[i], g = grads[i];
      if (h.weight_decay != 0) {
        if (decoupled)
          p = F::sub(p, F::mul(p, F::mul(scaled(lr, h.lr_scale), h.weight_decay)));
        else
          g = F::add(g, F::mul(p, h.weight_decay));
      }
      Var m = F::add(F::mul(state[i], c.beta1), F::mul(g, 1.0 - c.beta1));
      Var v = F::add(F::mul(state[n + i], c.beta2), F::mul(F::mul(g, g), 1.0 - c.beta2));
      Var denom = F::add(F::mul(F::sqrt(v), inv_sqrt_bc2), c.eps);
      np.push_back(F::sub(p, F::mul(F::div(m, denom), scaled(step_size, h.lr_scale))));
      m_new.push_back(m);
      v_new.push_back(v);
    }
    m_new.insert(m_new.end(), v_new.begin(), v_new.end());
    return {np, m_new};
  };
  return r;
}

}  // namespace

UpdateRule make_update_rule(const OptimizerConfig& cfg, std::vector<Hyper> per_param) {
  auto hyper = std::make_shared<const std::vector<Hyper>>(std::move(per_param));
  Status st = validate(cfg);
  if (!st.is_ok()) {
    // A bad configuration fails every update with its message (errors are values).
    UpdateRule r;
    r.init_state = [](const Vars&) { return Vars{}; };
    r.update = [st](const Vars& params, const Vars&, const Vars& state, const Var&, const Var&) {
      return std::pair<Vars, Vars>{failed_n(params.size(), st), failed_n(state.size(), st)};
    };
    return r;
  }
  return cfg.kind == OptimizerKind::SGD ? sgd_rule(cfg, hyper) : adam_rule(cfg, hyper);
}

double LrSchedule::at(int64_t step) const {
  const int64_t t = std::max<int64_t>(step, 1);
  if (warmup_steps > 0 && t <= warmup_steps)
    return base_lr * static_cast<double>(t) / static_cast<double>(warmup_steps);
  const int64_t after = t - std::max<int64_t>(warmup_steps, 0) - 1;  // 0 at the first step after warmup
  switch (kind) {
    case Kind::Constant: return base_lr;
    case Kind::Step: return base_lr * std::pow(gamma, static_cast<double>(after / std::max<int64_t>(step_size, 1)));
    case Kind::Cosine: {
      const int64_t span = std::max<int64_t>(total_steps - std::max<int64_t>(warmup_steps, 0) - 1, 1);
      const double frac = std::min(1.0, static_cast<double>(after) / static_cast<double>(span));
      return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(3.141592653589793 * frac));
    }
  }
  return base_lr;
}

Expected<LrSchedule::Kind> schedule_kind(std::string_view name) {
  if (name == "constant") return LrSchedule::Kind::Constant;
  if (name == "step") return LrSchedule::Kind::Step;
  if (name == "cosine") return LrSchedule::Kind::Cosine;
  return invalid_argument("unknown lr schedule '" + std::string(name) + "' (constant, step, cosine)");
}

}  // namespace ms::nn::train
