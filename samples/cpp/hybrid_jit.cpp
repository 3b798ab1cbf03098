// Jitting one submodule only: the backbone runs as a compiled graph, the head stays eager, so
// its intermediates can still be printed and inspected between the two.
#include "engine/compiler/options.h"
#include "samples/cpp/sample_util.h"

using namespace ms::nn;

class Net : public Module {
 public:
  Net() {
    backbone = register_module("backbone", std::make_shared<Sequential>());
    backbone->add(std::make_shared<Conv2d>(3, 8, 3, 1, 1))
        .add(std::make_shared<BatchNorm2d>(8))
        .add(std::make_shared<ReLU>());
    backbone->add(std::make_shared<Conv2d>(8, 8, 3, 2, 1)).add(std::make_shared<ReLU>());
    backbone->add(std::make_shared<AdaptiveAvgPool2d>(1)).add(std::make_shared<Flatten>());
    head = register_module("head", std::make_shared<Dense>(8, 4));
  }
  Var forward(const Var& x) override {
    Var features = (*backbone)(x);
    std::printf("  features (eager value between the parts): %s\n", features.to_string().c_str());
    return (*head)(features);
  }
  std::shared_ptr<Sequential> backbone;
  std::shared_ptr<Module> head;
};

int main(int argc, char** argv) {
  const bool quick = sample::quick(argc, argv);
  manual_seed(11);
  Net net;
  Var x(sample::random_input({2, 3, 16, 16}, 1));
  std::printf("all eager:\n");
  Var ref = sample::check(net(x), "eager");
  jit(*net.backbone, JitConfig{ms::compiler::JitLevel::O2, ms::runtime::ExecMode::Graph});
  std::printf("backbone jitted (O2), head eager:\n");
  Var y = sample::check(net(x), "hybrid");
  std::printf("output %s\nmax |hybrid - eager| %.3g\n", y.tensor()->to_string().c_str(),
              sample::max_abs_diff(*y.tensor(), *ref.tensor()));
  std::printf("compiled part: %zu nodes (", net.backbone->graph_cache()->last_graph()->nodes().size());
  for (const auto& n : net.backbone->graph_cache()->last_graph()->nodes()) std::printf(" %s", n.name.c_str());
  std::printf(" )\n");
  (void)quick;
  return 0;
}
