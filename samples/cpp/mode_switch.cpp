// Switching the global mode: a PyNative training-style loop (forward + loss every step, with the
// intermediates inspected as they are computed; the engine has no autograd yet, so the "update"
// here is a plain bias nudge toward a lower loss), then set_context(Mode::Graph) for inference,
// where the same module is traced once and every later call runs the compiled graph.
#include "samples/cpp/sample_util.h"

using namespace ms::nn;

class Classifier : public Module {
 public:
  Classifier() {
    conv = register_module("conv", std::make_shared<Conv2d>(1, 4, 3, 1, 1));
    bn = register_module("bn", std::make_shared<BatchNorm2d>(4));
    pool = register_module("pool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc = register_module("fc", std::make_shared<Dense>(4, 3));
  }
  Var forward(const Var& x) override {
    Var h = F::relu((*bn)((*conv)(x)));
    return (*fc)(F::flatten((*pool)(h)));
  }
  std::shared_ptr<Module> conv, bn, pool;
  std::shared_ptr<Dense> fc;
};

int main(int argc, char** argv) {
  const bool quick = sample::quick(argc, argv);
  manual_seed(3);
  Classifier net;
  Var x(sample::random_input({8, 1, 12, 12}, 2));
  Var target(sample::random_input({8, 3}, 4));

  set_context(Mode::PyNative);
  std::printf("== PyNative training-style loop\n");
  for (int step = 0; step < (quick ? 3 : 10); ++step) {
    Var logits = net(x);
    Var diff = F::sub(logits, target);
    Var loss = sample::check(F::reduce_mean(F::mul(diff, diff)), "loss");
    // Eager values can be looked at directly, mid-computation.
    std::printf("step %d  loss %.6f  logits[0] %s\n", step, loss.tensor()->at_double(0),
                logits.tensor()->reshaped({24}).to_string(3).c_str());
    // d(loss)/d(bias) = mean over the batch of 2*diff/numel: nudge the Dense bias by hand.
    Var grad = sample::check(F::mul(F::reduce_mean(diff, {0}), 2.0 / 3.0), "grad");
    for (auto& [name, t] : net.fc->named_parameters())
      if (name == "bias")
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] -= 0.5f * grad.tensor()->data<float>()[i];
  }

  set_context(Mode::Graph);
  std::printf("== Graph-mode inference\n");
  Var eager_ref;
  {
    set_context(Mode::PyNative);
    eager_ref = net(x);
    set_context(Mode::Graph);
  }
  Var y = sample::check(net(x), "graph inference");
  const double t_graph = sample::median_ms([&] { net(x); }, quick ? 3 : 50);
  set_context(Mode::PyNative);
  const double t_eager = sample::median_ms([&] { net(x); }, quick ? 3 : 50);
  std::printf(
      "logits[0] %s\nmax |graph - eager| %.3g\nlatency PyNative %.3f ms, Graph %.3f ms (compile %.1f ms, traced %lld "
      "time)\n",
      y.tensor()->reshaped({24}).to_string(3).c_str(), sample::max_abs_diff(*y.tensor(), *eager_ref.tensor()), t_eager,
      t_graph, net.graph_cache()->last_compile_ms(), static_cast<long long>(net.graph_cache()->traces()));
  return 0;
}
