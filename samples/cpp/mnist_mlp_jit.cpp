// MNIST MLP whose forward is jitted: the same module runs op by op (PyNative) and as a compiled
// graph (jit, traced once per input shape). Prints the logits of both and the latency per mode.
#include "engine/compiler/options.h"
#include "samples/cpp/sample_util.h"

using namespace ms::nn;

class MnistMlp : public Module {
 public:
  MnistMlp() {
    flatten = register_module("flatten", std::make_shared<Flatten>());
    fc1 = register_module("fc1", std::make_shared<Dense>(784, 512));
    fc2 = register_module("fc2", std::make_shared<Dense>(512, 512));
    fc3 = register_module("fc3", std::make_shared<Dense>(512, 10));
  }
  Var forward(const Var& x) override {
    Var h = F::relu((*fc1)((*flatten)(x)));
    h = F::relu((*fc2)(h));
    return (*fc3)(h);
  }
  std::shared_ptr<Module> flatten, fc1, fc2, fc3;
};

int main(int argc, char** argv) {
  const bool quick = sample::quick(argc, argv);
  manual_seed(42);
  MnistMlp net;
  std::printf("MnistMlp: %lld parameters\n", static_cast<long long>(net.num_parameters()));

  // A jitted forward: a function over Vars, compiled per input signature.
  JitFunction forward = jit([&net](const Vars& in) { return Vars{net(in[0])}; },
                            JitConfig{ms::compiler::JitLevel::O1, ms::runtime::ExecMode::Graph});

  for (int64_t batch : {int64_t{1}, int64_t{64}}) {
    Var x(sample::random_input({batch, 1, 28, 28}, 1, 0.0f, 1.0f));
    Var eager = sample::check(net(x), "PyNative forward");
    Var graph = sample::check(forward(x), "jit forward");
    std::printf("\nbatch %lld\n  PyNative logits[0]: %s\n  jit      logits[0]: %s\n  max |diff| %.3g\n",
                static_cast<long long>(batch), eager.tensor()->reshaped({batch * 10}).to_string(10).c_str(),
                graph.tensor()->reshaped({batch * 10}).to_string(10).c_str(),
                sample::max_abs_diff(*eager.tensor(), *graph.tensor()));
    const int iters = quick ? 3 : 50;
    const double pn = sample::median_ms([&] { net(x); }, iters);
    const double gm = sample::median_ms([&] { forward(x); }, iters);
    std::printf("  latency  PyNative %.3f ms   Graph (jit) %.3f ms   compile %.1f ms\n", pn, gm,
                forward.cache().last_compile_ms());
  }
  std::printf("\ntraces: %lld (one per input shape)\n", static_cast<long long>(forward.cache().traces()));
  return 0;
}
