// The Dense chain written two ways: two named layers in a Module, and the same layers in a
// Sequential. With the same seed they hold the same weights and give the same outputs; the
// traced graphs differ only in node names (dense1/dense2 vs 0/1).
#include "samples/cpp/sample_util.h"

using namespace ms::nn;

class DenseChain : public Module {
 public:
  DenseChain(int64_t in, int64_t hidden, int64_t out) {
    dense1 = register_module("dense1", std::make_shared<Dense>(in, hidden));
    dense2 = register_module("dense2", std::make_shared<Dense>(hidden, out));
  }
  Var forward(const Var& x) override { return (*dense2)((*dense1)(x)); }
  std::shared_ptr<Module> dense1, dense2;
};

int main(int argc, char** argv) {
  const bool quick = sample::quick(argc, argv);
  const int64_t in = quick ? 64 : 1024, hidden = quick ? 128 : 2048, batch = quick ? 4 : 64;

  manual_seed(7);
  DenseChain chain(in, hidden, in);
  manual_seed(7);
  Sequential seq({std::make_shared<Dense>(in, hidden), std::make_shared<Dense>(hidden, in)});

  Var x(sample::random_input({batch, in}, 3));
  for (Mode mode : {Mode::PyNative, Mode::Graph}) {
    set_context(mode);
    Var a = sample::check(chain(x), "DenseChain");
    Var b = sample::check(seq(x), "Sequential");
    std::printf("%-8s DenseChain %s\n         Sequential %s\n         max |diff| %.3g\n", mode_name(mode),
                a.tensor()->to_string(6).c_str(), b.tensor()->to_string(6).c_str(),
                sample::max_abs_diff(*a.tensor(), *b.tensor()));
    const double ta = sample::median_ms([&] { chain(x); }, quick ? 3 : 30);
    const double tb = sample::median_ms([&] { seq(x); }, quick ? 3 : 30);
    std::printf("         latency DenseChain %.3f ms, Sequential %.3f ms\n", ta, tb);
  }
  set_context(Mode::PyNative);
  std::printf("\nnode names: ");
  for (const auto& n : chain.graph_cache()->last_graph()->nodes()) std::printf("%s ", n.name.c_str());
  std::printf("| ");
  for (const auto& n : seq.graph_cache()->last_graph()->nodes()) std::printf("%s ", n.name.c_str());
  std::printf("\n");
  return 0;
}
