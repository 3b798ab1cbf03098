// Training from Python: value_and_grad over the engine's autograd, optimizers (the engine's update
// rules run eagerly on Parameters, in place), losses, and the engine's TrainStep behind
// TrainOneStepCell / amp.build_train_network (the whole step compiled in Graph mode).
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

// An optimizer over Parameters: the engine's update rule run eagerly, new values written in place.
class PyOptimizer {
 public:
  PyOptimizer(const std::string& kind, pyb::list params, double lr, double momentum, double weight_decay, bool nesterov,
              double beta1, double beta2, double eps)
      : lr_(lr) {
    auto k = nn::train::optimizer_kind(kind);
    if (!k) raise_status(k.status());
    cfg_.kind = *k;
    cfg_.momentum = momentum;
    cfg_.nesterov = nesterov;
    cfg_.weight_decay = weight_decay;
    cfg_.beta1 = beta1;
    cfg_.beta2 = beta2;
    cfg_.eps = eps;
    Status st = nn::train::validate(cfg_);
    if (!st.is_ok()) raise_status(st);
    for (pyb::handle p : params) {
      if (!pyb::isinstance<Parameter>(p))
        throw pyb::type_error("optimizer params must be Parameters (net.trainable_params())");
      params_.push_back(p.cast<const Parameter&>());
    }
    if (params_.empty()) throw pyb::value_error("optimizer: no parameters to optimize");
    rule_ = nn::train::make_update_rule(cfg_);
  }

  bool step(pyb::object grads) {
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
      st = apply(g);
    }
    if (!st.is_ok()) raise_status(st);
    bump_weights_version();
    return true;
  }

  const nn::train::OptimizerConfig& config() const { return cfg_; }
  double lr_;
  std::vector<Parameter> params_;

 private:
  Status apply(const Vars& g) {
    Vars params;
    for (const Parameter& p : params_) params.push_back(Var(*p.tensor()));
    if (!state_ready_) {
      state_ = rule_.init_state(params);
      state_ready_ = true;
    }
    ++step_;
    auto [new_params, new_state] = rule_.update(params, g, state_, nn::F::scalar(lr_, DType::F32),
                                                nn::F::scalar(static_cast<double>(step_), DType::F32));
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
      : lr_(opt.lr_), net_(std::move(net)) {
    const nn::Mode mode = nn::get_mode();
    step_ = std::make_unique<nn::train::TrainStep>(
        *net_, [](nn::Module& m, const Vars& in) { return m(in).at(0); }, nn::train::make_update_rule(opt.config()),
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
    return nn::F::scalar(st->loss, DType::F32);
  }

  bool graph_mode() const { return step_->mode() == nn::Mode::Graph; }
  const nn::train::StepStats& last() const { return last_; }
  double loss_scale() const { return step_->loss_scale(); }
  int64_t skipped() const { return step_->skipped_steps(); }
  double lr_;

 private:
  std::shared_ptr<nn::Module> net_;
  std::unique_ptr<nn::train::TrainStep> step_;
  nn::train::StepStats last_;
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

  pyb::class_<PyOptimizer>(m, "Optimizer")
      .def(pyb::init<const std::string&, pyb::list, double, double, double, bool, double, double, double>(), "kind"_a,
           "params"_a, "learning_rate"_a, "momentum"_a = 0.0, "weight_decay"_a = 0.0, "nesterov"_a = false,
           "beta1"_a = 0.9, "beta2"_a = 0.999, "eps"_a = 1e-8)
      .def("__call__", &PyOptimizer::step, "gradients"_a)
      .def_readwrite("learning_rate", &PyOptimizer::lr_)
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
      .def_readwrite("learning_rate", &PyTrainStep::lr_)
      .def_property_readonly("graph_mode", &PyTrainStep::graph_mode)
      .def_property_readonly("loss_scale", &PyTrainStep::loss_scale)
      .def_property_readonly("skipped_steps", &PyTrainStep::skipped)
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
