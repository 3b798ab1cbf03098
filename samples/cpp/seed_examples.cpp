// The articles' networks written with the C++ builder API, as the reference for their Python
// versions in samples/python: with the same seed both build the same weights (the same layers are
// made in the same order), so their outputs must agree. Prints one JSON object per example:
//   sample_seed_examples [--seed N] [--quick]
// network:   the Flatten + Dense 784-512-512-10 `Network` on ones(64,1,28,28), PyNative and jit;
// net:       Dense 1024-2048 then 2048-1024 on ones(4,1024) (the `Net`/`OptimizedNet` pair);
// dynamic:   `DynamicNet`, ten Dense(256,256), 8 of them for sum(x) > 0 else 5, on +-ones(1,256),
//            in both modes (Graph mode compiles both sides into one If).
#include <cinttypes>

#include "samples/cpp/sample_util.h"

using namespace ms::nn;

namespace {

class SeedNetwork : public Module {
 public:
  SeedNetwork() {
    flatten = register_module("flatten", std::make_shared<Flatten>());
    body = register_module("dense_relu_sequential", std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
                                                        std::make_shared<Dense>(28 * 28, 512), std::make_shared<ReLU>(),
                                                        std::make_shared<Dense>(512, 512), std::make_shared<ReLU>(),
                                                        std::make_shared<Dense>(512, 10)}));
  }
  Var forward(const Var& x) override { return (*body)((*flatten)(x)); }
  std::shared_ptr<Module> flatten, body;
};

class SeedDynamicNet : public Module {
 public:
  SeedDynamicNet() {
    layers = register_module("layers", std::make_shared<ModuleList>());
    for (int i = 0; i < 10; ++i) layers->push_back(std::make_shared<Dense>(256, 256));
  }
  Var run(Var x, int n) {
    for (int i = 0; i < n; ++i) x = (*layers)[static_cast<size_t>(i)](x);
    return x;
  }
  Var forward(const Var& x) override {
    return cond(F::reduce_sum(x) > 0.0, std::function<Var()>([&] { return run(x, 8); }),
                std::function<Var()>([&] { return run(x, 5); }));
  }
  std::shared_ptr<ModuleList> layers;
};

ms::Tensor filled(const ms::Shape& shape, float v) {
  ms::Tensor t = ms::Tensor::empty(ms::DType::F32, shape);
  for (float& x : t.span<float>()) x = v;
  return t;
}

// "name": {"sum": s, "first": [..up to 8..]}
std::string summary(const char* name, const Var& v) {
  const auto held = sample::check(v, name).tensor();
  const ms::Tensor& t = *held;
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += t.at_double(i);
  std::string out = "\"" + std::string(name) + "\": {\"sum\": " + std::to_string(sum) + ", \"first\": [";
  char buf[64];
  for (int64_t i = 0; i < std::min<int64_t>(8, t.numel()); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", t.at_double(i));
    out += buf;
  }
  return out + "]}";
}

void network(uint64_t seed) {
  manual_seed(seed);
  SeedNetwork net;
  Var x(filled({64, 1, 28, 28}, 1.0f));
  set_context(Mode::PyNative);
  const std::string eager = summary("pynative", net(x));
  JitFunction run = jit([&net](const Vars& in) { return Vars{net(in[0])}; });
  std::printf("{\"example\": \"network\", \"seed\": %" PRIu64 ", %s, %s}\n", seed, eager.c_str(),
              summary("graph", run(x)).c_str());
}

void dense_pair(uint64_t seed) {
  manual_seed(seed);
  Sequential net({std::make_shared<Dense>(1024, 2048), std::make_shared<Dense>(2048, 1024)});
  Var x(filled({4, 1024}, 1.0f));
  set_context(Mode::Graph);
  const std::string graph = summary("graph", net(x));
  set_context(Mode::PyNative);
  std::printf("{\"example\": \"net\", \"seed\": %" PRIu64 ", %s}\n", seed, graph.c_str());
}

void dynamic(uint64_t seed) {
  manual_seed(seed);
  SeedDynamicNet net;
  Var pos(filled({1, 256}, 1.0f)), neg(filled({1, 256}, -1.0f));
  std::string parts;
  for (Mode mode : {Mode::PyNative, Mode::Graph}) {
    set_context(mode);
    const std::string m = mode == Mode::Graph ? "graph" : "pynative";
    parts += ", " + summary((m + "_pos").c_str(), net(pos)) + ", " + summary((m + "_neg").c_str(), net(neg));
  }
  set_context(Mode::PyNative);
  std::printf("{\"example\": \"dynamic\", \"seed\": %" PRIu64 "%s}\n", seed, parts.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  network(seed);
  dense_pair(seed);
  dynamic(seed);
  return 0;
}
