// The articles' networks written with the C++ builder API, as the reference for their Python
// versions in samples/python: with the same seed both build the same weights (the same layers are
// made in the same order), so their outputs must agree. Prints one JSON object per example:
//   sample_seed_examples [--seed N] [--quick]
// network:   the Flatten + Dense 784-512-512-10 `Network` on ones(64,1,28,28), PyNative and jit;
// net:       Dense 1024-2048 then 2048-1024 on ones(4,1024) (the `Net`/`OptimizedNet` pair);
// dynamic:   `DynamicNet`, ten Dense(256,256), 8 of them for sum(x) > 0 else 5, on +-ones(1,256),
//            in both modes (Graph mode compiles both sides into one If);
// amp:       `Net` trained 5 PyNative steps with Adam (lr 1e-3), sparse softmax cross-entropy and
//            AMP O2 with a dynamic loss scale (2^24, factor 2, window 2000) on a fixed batch of 8.
#include <cinttypes>

#include "engine/frontend/train/losses.h"
#include "engine/frontend/train/optim.h"
#include "engine/frontend/train/step.h"
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

void amp_train(uint64_t seed) {
  manual_seed(seed);
  auto net = std::make_shared<Sequential>(
      std::vector<std::shared_ptr<Module>>{std::make_shared<Dense>(1024, 2048), std::make_shared<Dense>(2048, 1024)});
  // The batch both languages can write exactly: x[i][j] = ((7i + 3j) mod 17) / 16 - 0.5, label 37i mod 1024.
  ms::Tensor x = ms::Tensor::empty(ms::DType::F32, {8, 1024});
  ms::Tensor labels = ms::Tensor::empty(ms::DType::I32, {8});
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 1024; ++j)
      x.data<float>()[i * 1024 + j] = static_cast<float>((7 * i + 3 * j) % 17) / 16.0f - 0.5f;
    labels.data<int32_t>()[i] = static_cast<int32_t>((37 * i) % 1024);
  }
  train::OptimizerConfig adam;
  adam.kind = train::OptimizerKind::Adam;
  train::TrainStep step(
      *net, [](Module& m, const Vars& in) { return train::cross_entropy(m(Vars{in[0]}).at(0), in[1]); },
      train::make_update_rule(adam), Mode::PyNative);
  train::AmpOptions amp;
  amp.level = ms::compiler::AmpLevel::O2;
  amp.loss_scale.kind = train::LossScaleConfig::Kind::Dynamic;
  amp.loss_scale.init_scale = 16777216.0;
  amp.loss_scale.growth_interval = 2000;
  step.set_amp(amp);
  std::string losses;
  for (int i = 0; i < 5; ++i) {
    auto st = step.step({Var(x), Var(labels)}, 1e-3);
    if (!st) {
      std::fprintf(stderr, "error: amp step: %s\n", st.status().message().c_str());
      std::exit(1);
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", st->loss);
    losses += buf;
  }
  std::printf("{\"example\": \"amp\", \"seed\": %" PRIu64 ", \"losses\": [%s], \"skipped\": %lld}\n", seed,
              losses.c_str(), static_cast<long long>(step.skipped_steps()));
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  network(seed);
  dense_pair(seed);
  dynamic(seed);
  amp_train(seed);
  return 0;
}
