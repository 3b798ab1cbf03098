// Training from Python: value_and_grad over the engine's autograd, optimizers (the engine's update
// rules run eagerly on Parameters, in place), losses, and the engine's TrainStep behind
// TrainOneStepCell / amp.build_train_network (the whole step compiled in Graph mode).
#include <algorithm>

#include "app/python/src/py_cell.h"
#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/trace.h"
#include "engine/frontend/train/losses.h"
#include "engine/frontend/train/optim.h"
#include "engine/frontend/train/step.h"

namespace ms::py {

namespace {

using nn::Var;
using nn::Vars;

// fn(*args) under the tape; the gradients of its (first) output w.r.t. `wrt`. Returns (value, grads)
// where value is what fn returned (a tuple with has_aux).
pyb::tuple value_and_grad_call(pyb::function fn, pyb::tuple args, const Vars& wrt) {
  if (nn::active_trace()) {
    // A traced function (ms.jit) that takes gradients runs op by op instead (jit_bind.cpp).
    const std::string msg = python_location() +
                            ": value_and_grad inside a traced function: it runs op by op (PyNative); "
                            "nn.TrainOneStepCell (or amp.build_train_network) compiles the whole training step";
    PyErr_SetString(eager_fallback_error(), msg.c_str());
    throw pyb::error_already_set();
  }
  pyb::object result;
  auto loss_fn = [&]() -> Var {
    pyb::gil_scoped_acquire gil;
    try {
      result = fn(*args);
      pyb::handle first = result;
      if (pyb::isinstance<pyb::tuple>(result) && pyb::len(result) > 0) first = result.cast<pyb::tuple>()[0];
      if (!is_tensor(first)) throw pyb::type_error("value_and_grad: the function must return a Tensor (the loss)");
      return first.cast<const Var&>();
    } catch (...) {
      return Var::failed(current_exception_status("value_and_grad"));
    }
  };
  Expected<nn::ValueAndGrad> vg = invalid_argument("not run");
  {
    pyb::gil_scoped_release nogil;
    vg = nn::value_and_grad(loss_fn, wrt);
  }
  if (!vg) raise_status(vg.status());
  pyb::tuple grads(vg->grads.size());
  for (size_t i = 0; i < vg->grads.size(); ++i) grads[i] = pyb::cast(checked(vg->grads[i]));
  return pyb::make_tuple(result, grads);
}

// MindSpore's gradient centralization: a gradient of rank > 1 less its mean over every dimension
// but the first (each output row's gradient centred); one of rank 0 or 1 as it is.
Var centralized(const Var& g) {
  const int64_t rank = g.rank();
  if (rank <= 1) return g;
  std::vector<int64_t> axes, kept(static_cast<size_t>(rank), 1);
  for (int64_t a = 1; a < rank; ++a) axes.push_back(a);
  kept[0] = -1;
  return nn::F::sub(g, nn::F::reshape(nn::F::reduce_mean(g, axes), kept));
}

// A group's gradients for its rule: with centralization, MindSpore's order - weight decay added to
// the gradient first (the group's rule then decays nothing), then centralized; AdamWeightDecay's
// decay is the parameter's own (decoupled) and stays in its rule.
struct GroupGrads {
  bool centralize = false;
  double decay = 0;  // added here, before centralizing
  Vars operator()(const Vars& params, const Vars& grads) const {
    if (!centralize) return grads;
    Vars out;
    for (size_t i = 0; i < grads.size(); ++i) {
      Var g = grads[i];
      if (decay != 0 && i < params.size()) g = nn::F::add(g, nn::F::mul(params[i], decay));
      out.push_back(centralized(g));
    }
    return out;
  }
};

// Each parameter group's settings: weight decay and grad_centralization.
struct GroupSettings {
  std::vector<double> weight_decay;
  std::vector<bool> centralize;
};

// The update rule of an optimizer with parameter groups: group g runs the engine's rule with its
// own weight decay (and gradient centralization) and the g-th learning rate (the lr Var has shape
// [G] when G > 1, a graph input in Graph mode). group_of[i] is the group of the i-th parameter the
// rule receives, -1 for one the optimizer does not hold (left as it is). State: each group's state
// after the previous group's.
nn::train::UpdateRule grouped_rule(const nn::train::OptimizerConfig& base, const GroupSettings& groups,
                                   std::vector<int> group_of) {
  struct Groups {
    std::vector<nn::train::UpdateRule> rules;
    std::vector<GroupGrads> grads;
    std::vector<int> group_of;
    size_t state_per = 0;
  };
  auto gs = std::make_shared<Groups>();
  for (size_t g = 0; g < groups.weight_decay.size(); ++g) {
    nn::train::OptimizerConfig cfg = base;
    GroupGrads gg;
    gg.centralize = g < groups.centralize.size() && groups.centralize[g];
    cfg.weight_decay = groups.weight_decay[g];
    if (gg.centralize && base.kind != nn::train::OptimizerKind::AdamW) std::swap(gg.decay, cfg.weight_decay);
    gs->rules.push_back(nn::train::make_update_rule(cfg));
    gs->grads.push_back(gg);
  }
  gs->group_of = std::move(group_of);
  gs->state_per = base.kind == nn::train::OptimizerKind::SGD ? (base.momentum > 0 ? 1 : 0) : 2;
  auto members = [gs](const Vars& xs, size_t g) {
    Vars out;
    for (size_t i = 0; i < xs.size() && i < gs->group_of.size(); ++i)
      if (gs->group_of[i] == static_cast<int>(g)) out.push_back(xs[i]);
    return out;
  };
  nn::train::UpdateRule r;
  r.init_state = [gs, members](const Vars& params) {
    Vars s;
    for (size_t g = 0; g < gs->rules.size(); ++g) {
      Vars part = gs->rules[g].init_state(members(params, g));
      s.insert(s.end(), part.begin(), part.end());
    }
    return s;
  };
  r.update = [gs, members](const Vars& params, const Vars& grads, const Vars& state, const Var& lr,
                           const Var& step) -> std::pair<Vars, Vars> {
    const size_t held = std::count_if(gs->group_of.begin(), gs->group_of.end(), [](int g) { return g >= 0; });
    if (params.size() != gs->group_of.size() || grads.size() != params.size() || state.size() != held * gs->state_per) {
      const Status st = invalid_argument("optimizer: " + std::to_string(params.size()) + " parameters and " +
                                         std::to_string(state.size()) + " state tensors for an optimizer over " +
                                         std::to_string(gs->group_of.size()) + " parameters");
      return {Vars(params.size(), Var::failed(st)), Vars(state.size(), Var::failed(st))};
    }
    Vars np = params, ns;
    size_t offset = 0;
    for (size_t g = 0; g < gs->rules.size(); ++g) {
      const Vars p = members(params, g);
      const size_t n = p.size() * gs->state_per;
      const Vars s(state.begin() + static_cast<std::ptrdiff_t>(offset),
                   state.begin() + static_cast<std::ptrdiff_t>(offset + n));
      offset += n;
      const Var lr_g = gs->rules.size() == 1 ? lr : nn::F::gather(lr, Var(Tensor::scalar<int64_t>(g)), 0);
      auto [gp, gst] = gs->rules[g].update(p, gs->grads[g](p, members(grads, g)), s, lr_g, step);
      for (size_t i = 0, k = 0; i < params.size(); ++i)
        if (gs->group_of[i] == static_cast<int>(g) && k < gp.size()) np[i] = gp[k++];
      ns.insert(ns.end(), gst.begin(), gst.end());
    }
    return {np, ns};
  };
  return r;
}

std::vector<double> checked_lrs(const std::vector<double>& lrs, size_t groups) {
  if (lrs.size() != groups)
    throw pyb::value_error("optimizer: " + std::to_string(lrs.size()) + " learning rates for " +
                           std::to_string(groups) + " parameter groups");
  return lrs;
}

// An optimizer over Parameters: the engine's update rule run eagerly, new values written in place.
// `groups`: (Parameters, weight_decay) per parameter group; the learning rates come with each step.
class PyOptimizer {
 public:
  PyOptimizer(const std::string& kind, pyb::list params, std::vector<int> group_of, std::vector<double> weight_decay,
              std::vector<bool> centralize, double momentum, bool nesterov, double beta1, double beta2, double eps)
      : group_of_(std::move(group_of)) {
    groups_.weight_decay = std::move(weight_decay);
    groups_.centralize = std::move(centralize);
    auto k = nn::train::optimizer_kind(kind);
    if (!k) raise_status(k.status());
    cfg_.kind = *k;
    cfg_.momentum = momentum;
    cfg_.nesterov = nesterov;
    cfg_.beta1 = beta1;
    cfg_.beta2 = beta2;
    cfg_.eps = eps;
    for (double wd : groups_.weight_decay) {
      cfg_.weight_decay = wd;
      Status st = nn::train::validate(cfg_);
      if (!st.is_ok()) raise_status(st);
    }
    for (pyb::handle p : params) {
      if (!pyb::isinstance<Parameter>(p))
        throw pyb::type_error("optimizer params must be Parameters (net.trainable_params())");
      params_.push_back(p.cast<const Parameter&>());
    }
    if (params_.empty()) throw pyb::value_error("optimizer: no parameters to optimize");
    if (groups_.weight_decay.empty()) groups_.weight_decay.push_back(0.0);
    groups_.centralize.resize(groups_.weight_decay.size(), false);
    if (group_of_.empty()) group_of_.assign(params_.size(), 0);
    if (group_of_.size() != params_.size())
      throw pyb::value_error("optimizer: " + std::to_string(group_of_.size()) + " group indices for " +
                             std::to_string(params_.size()) + " parameters");
    for (int g : group_of_)
      if (g < 0 || g >= static_cast<int>(groups_.weight_decay.size()))
        throw pyb::value_error("optimizer: group index " + std::to_string(g) + " out of range");
    rule_ = grouped_rule(cfg_, groups_, group_of_);
  }

  bool step(pyb::object grads, const std::vector<double>& lrs) {
    const std::vector<double> lr = checked_lrs(lrs, groups_.weight_decay.size());
    Vars g;
    for (pyb::handle x : grads) g.push_back(x.cast<const Var&>());
    if (g.size() != params_.size())
      throw pyb::value_error("optimizer: " + std::to_string(g.size()) + " gradients for " +
                             std::to_string(params_.size()) + " parameters");
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i].is_symbolic())
        throw pyb::value_error(python_location() +
                               ": optimizer step inside ms.jit / GRAPH_MODE: use nn.TrainOneStepCell");
    Status st;
    {
      pyb::gil_scoped_release nogil;
      st = apply(g, lr);
    }
    if (!st.is_ok()) raise_status(st);
    bump_weights_version();
    return true;
  }

  // The rule over `model_params` (a training step's parameters, in its order): each takes its
  // group here; a parameter this optimizer does not hold is left as it is.
  nn::train::UpdateRule rule_for(const Vars& model_params) const {
    std::vector<int> group_of;
    for (const Var& v : model_params) {
      const void* data = v.is_concrete() ? (*v.tensor()).raw() : nullptr;
      int g = -1;
      for (size_t i = 0; i < params_.size() && data; ++i)
        if ((*params_[i].tensor()).raw() == data) g = group_of_[i];
      group_of.push_back(g);
    }
    return grouped_rule(cfg_, groups_, std::move(group_of));
  }

  size_t groups() const { return groups_.weight_decay.size(); }
  std::vector<Parameter> params_;

 private:
  Status apply(const Vars& g, const std::vector<double>& lr) {
    Vars params;
    for (const Parameter& p : params_) params.push_back(Var(*p.tensor()));
    if (!state_ready_) {
      state_ = rule_.init_state(params);
      state_ready_ = true;
    }
    ++step_;
    const Tensor lr_t = lr.size() == 1 ? Tensor::scalar<float>(static_cast<float>(lr[0]))
                                       : Tensor::from_vector<float>(std::vector<float>(lr.begin(), lr.end()),
                                                                    {static_cast<int64_t>(lr.size())});
    auto [new_params, new_state] =
        rule_.update(params, g, state_, Var(lr_t), nn::F::scalar(static_cast<double>(step_), DType::F32));
    MS_RETURN_IF_ERROR(first_error(new_params));
    MS_RETURN_IF_ERROR(first_error(new_state));
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor dst = *params[i].tensor();
      Tensor src = *new_params[i].tensor();
      if (src.raw() != dst.raw()) std::memmove(dst.raw(), src.raw(), dst.nbytes());
    }
    state_ = std::move(new_state);
    return Status::ok();
  }

  nn::train::OptimizerConfig cfg_;
  GroupSettings groups_;
  std::vector<int> group_of_;  // each parameter's group
  nn::train::UpdateRule rule_;
  Vars state_;
  bool state_ready_ = false;
  int64_t step_ = 0;
};

// TrainOneStepCell's engine step: forward with the loss, backward and update in one call, the whole
// step one compiled graph in Graph mode.
class PyTrainStep {
 public:
  PyTrainStep(std::shared_ptr<nn::Module> net, PyOptimizer& opt, int amp_level, const std::string& loss_scale,
              double init_scale, double factor, int64_t window, int jit_level)
      : lr_(opt.groups(), 0.0), net_(std::move(net)) {
    const nn::Mode mode = nn::get_mode();
    step_ = std::make_unique<nn::train::TrainStep>(
        *net_, [](nn::Module& m, const Vars& in) { return m(in).at(0); }, opt.rule_for(nn::trainable_parameters(*net_)),
        mode, static_cast<compiler::JitLevel>(jit_level));
    nn::train::AmpOptions amp;
    amp.level = static_cast<compiler::AmpLevel>(amp_level);
    if (loss_scale == "dynamic") amp.loss_scale.kind = nn::train::LossScaleConfig::Kind::Dynamic;
    if (loss_scale == "fixed") amp.loss_scale.kind = nn::train::LossScaleConfig::Kind::Static;
    amp.loss_scale.init_scale = init_scale;
    amp.loss_scale.factor = factor;
    amp.loss_scale.growth_interval = window;
    step_->set_amp(amp);
    apply_data_parallel(*step_);
  }

  Var run(pyb::args args) {
    Vars in;
    for (pyb::handle a : args) in.push_back(to_var(a));
    Expected<nn::train::StepStats> st = invalid_argument("not run");
    {
      pyb::gil_scoped_release nogil;
      st = step_->step(in, lr_);
    }
    bump_weights_version();
    if (!st) raise_status(st.status());
    last_ = *st;
    if (st->compile_ms > 0) {
      ++compiles_;
      add_compiles(1);
    }
    return nn::F::scalar(st->loss, DType::F32);
  }

  bool graph_mode() const { return step_->mode() == nn::Mode::Graph; }
  // The context's mode changed: the next steps run in it, continuing the optimizer state, the step
  // count, loss scaling and the compiled step graphs.
  void set_graph_mode(bool graph) { step_->set_mode(graph ? nn::Mode::Graph : nn::Mode::PyNative); }
  const nn::train::StepStats& last() const { return last_; }
  double loss_scale() const { return step_->loss_scale(); }
  int64_t skipped() const { return step_->skipped_steps(); }
  int64_t compiles() const { return compiles_; }
  // The learning rates of the next step, one per parameter group of the optimizer.
  std::vector<double> lr_;

 private:
  std::shared_ptr<nn::Module> net_;
  std::unique_ptr<nn::train::TrainStep> step_;
  nn::train::StepStats last_;
  int64_t compiles_ = 0;
};

Var loss_checked(Var v) {
  if (!v.ok()) raise_status(v.status());
  return v;
}

}  // namespace

PyObject* eager_fallback_error() {
  static PyObject* type =
      PyErr_NewExceptionWithDoc("modescope._C.EagerFallback", "A traced function needs PyNative execution (gradients).",
                                PyExc_RuntimeError, nullptr);
  return type;
}

void bind_train(pyb::module_& m) {
  m.add_object("EagerFallback", pyb::handle(eager_fallback_error()));
  m.def("_value_and_grad", &value_and_grad_call, "fn"_a, "args"_a, "wrt"_a);
  m.def(
      "_param_key",
      [](const Parameter& p) {
        Expected<Tensor> t = p.tensor();
        return t ? reinterpret_cast<intptr_t>(t->raw()) : intptr_t{0};
      },
      "param"_a, "the identity of a Parameter's storage (the same for every Python object of one Parameter)");

  pyb::class_<PyOptimizer>(m, "Optimizer")
      .def(pyb::init<const std::string&, pyb::list, std::vector<int>, std::vector<double>, std::vector<bool>, double,
                     bool, double, double, double>(),
           "kind"_a, "params"_a, "group_of"_a, "weight_decay"_a, "grad_centralization"_a, "momentum"_a = 0.0,
           "nesterov"_a = false, "beta1"_a = 0.9, "beta2"_a = 0.999, "eps"_a = 1e-8)
      .def("_apply", &PyOptimizer::step, "gradients"_a, "learning_rates"_a)
      .def_property_readonly("_group_count", &PyOptimizer::groups)
      .def_property_readonly("parameters", [](const PyOptimizer& o) {
        pyb::tuple t(o.params_.size());
        for (size_t i = 0; i < o.params_.size(); ++i) t[i] = pyb::cast(o.params_[i]);
        return t;
      });

  pyb::class_<PyTrainStep>(m, "TrainStep")
      .def(
          pyb::init<std::shared_ptr<nn::Module>, PyOptimizer&, int, const std::string&, double, double, int64_t, int>(),
          "network"_a, "optimizer"_a, "amp_level"_a = 0, "loss_scale"_a = "none", "init_scale"_a = 65536.0,
          "factor"_a = 2.0, "window"_a = 1000, "jit_level"_a = 1, pyb::keep_alive<1, 2>())
      .def("__call__", &PyTrainStep::run)
      .def_property(
          "learning_rates", [](const PyTrainStep& s) { return s.lr_; },
          [](PyTrainStep& s, const std::vector<double>& lrs) { s.lr_ = checked_lrs(lrs, s.lr_.size()); })
      .def_property("graph_mode", &PyTrainStep::graph_mode, &PyTrainStep::set_graph_mode,
                    "the mode of the next steps; set, the optimizer state and the step count carry over")
      .def_property_readonly("loss_scale", &PyTrainStep::loss_scale)
      .def_property_readonly("skipped_steps", &PyTrainStep::skipped)
      .def_property_readonly("compile_count", &PyTrainStep::compiles,
                             "Graph mode: the step graphs traced and compiled (one per batch signature)")
      .def_property_readonly("last_compile_ms", [](const PyTrainStep& s) { return s.last().compile_ms; })
      .def_property_readonly("last_overflow", [](const PyTrainStep& s) { return s.last().skipped; });

  pyb::module_ l = m.def_submodule("losses", "the engine's losses");
  l.def(
      "cross_entropy",
      [](const Var& logits, const Var& labels, double smoothing) {
        return loss_checked(nn::train::cross_entropy(logits, labels, smoothing));
      },
      "logits"_a, "labels"_a, "label_smoothing"_a = 0.0);
  l.def("cross_entropy_soft", [](const Var& logits, const Var& targets) {
    return loss_checked(nn::train::cross_entropy_soft(logits, targets));
  });
  l.def("mse", [](const Var& a, const Var& b) { return loss_checked(nn::train::mse(a, b)); });
}

}  // namespace ms::py
