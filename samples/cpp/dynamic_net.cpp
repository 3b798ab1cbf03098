// DynamicNet: ten Dense(256,256) layers; runs 8 of them when sum(x) > 0, else 5. The branch is
// data dependent, so it is written with cond(): PyNative runs one branch eagerly, Graph mode
// compiles both into an If node and picks one at run time.
#include "samples/cpp/sample_util.h"

using namespace ms::nn;

class DynamicNet : public Module {
 public:
  explicit DynamicNet(int64_t size) {
    layers = register_module("layers", std::make_shared<ModuleList>());
    for (int i = 0; i < 10; ++i) layers->push_back(std::make_shared<Dense>(size, size));
  }
  Var run(Var x, int n) {
    for (int i = 0; i < n; ++i) x = F::relu((*layers)[static_cast<size_t>(i)](x));
    return x;
  }
  Var forward(const Var& x) override {
    // A plain `if (F::reduce_sum(x) > 0.0)` works in PyNative but fails to trace with a message
    // pointing here; cond() works in both modes.
    return cond(F::reduce_sum(x) > 0.0, std::function<Var()>([&] { return ops::print("took 8 layers", run(x, 8)); }),
                std::function<Var()>([&] { return ops::print("took 5 layers", run(x, 5)); }));
  }
  std::shared_ptr<ModuleList> layers;
};

int main(int argc, char** argv) {
  const bool quick = sample::quick(argc, argv);
  const int64_t size = quick ? 32 : 256;
  manual_seed(1);
  DynamicNet net(size);
  Var pos(sample::random_input({1, size}, 5, 0.0f, 1.0f));
  Var neg(sample::random_input({1, size}, 5, -1.0f, 0.0f));
  for (Mode mode : {Mode::PyNative, Mode::Graph}) {
    set_context(mode);
    std::printf("== %s\n", mode_name(mode));
    for (const Var& x : {pos, neg}) {
      Var y = sample::check(net(x), "DynamicNet");
      std::printf("   sum(y) = %.6g\n", sample::check(F::reduce_sum(y), "sum").tensor()->at_double(0));
    }
  }
  set_context(Mode::PyNative);
  int ifs = 0;
  for (const auto& n : net.graph_cache()->last_graph()->nodes()) ifs += n.op_type == "If";
  std::printf("Graph mode: %d If node, traced %lld time(s)\n", ifs,
              static_cast<long long>(net.graph_cache()->traces()));
  return ifs == 1 ? 0 : 1;
}
