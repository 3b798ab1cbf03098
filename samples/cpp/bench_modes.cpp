// PyNative vs Graph latency of zoo models through the builder API: the module called eagerly
// (op by op) and in Graph mode (traced once, compiled, re-run). Default set: mnist_mlp batch 1
// and 64, resnet50 batch 1; or pass zoo URIs. --quick uses small sizes (the test run);
// --threads N sets the CPU threads (default: all cores). Latencies: median (min) in ms.
#include <string>
#include <vector>

#include "engine/frontend/zoo/zoo.h"
#include "samples/cpp/sample_util.h"

using namespace ms;

int main(int argc, char** argv) {
  const bool quick = sample::quick(argc, argv);
  std::vector<std::string> uris;
  nn::Context ctx;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("zoo:", 0) == 0) uris.push_back(argv[i]);
    if (std::string(argv[i]) == "--threads" && i + 1 < argc) ctx.threads = std::atoi(argv[++i]);
  }
  nn::set_context(ctx);
  std::printf("backend: %s\n", nn::backend().description().c_str());
  if (uris.empty())
    uris = quick ? std::vector<std::string>{"zoo:mnist_mlp?batch=1&hidden=64", "zoo:resnet50?size=32&width=8"}
                 : std::vector<std::string>{"zoo:mnist_mlp?batch=1", "zoo:mnist_mlp?batch=64", "zoo:resnet50?batch=1"};
  const int iters = quick ? 3 : 20;
  std::printf("%-30s %11s %20s %20s %9s %8s\n", "model", "build+trace", "PyNative", "Graph", "compile", "speedup");
  for (const auto& u : uris) {
    auto uri = zoo::parse_uri(u);
    if (!uri) return std::fprintf(stderr, "error: %s\n", uri.status().message().c_str()), 1;
    const auto t0 = std::chrono::steady_clock::now();
    auto g = zoo::build_graph(*uri);  // build + trace, as the CLI does for a zoo: MODEL
    const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!g) return std::fprintf(stderr, "error: %s\n", g.status().message().c_str()), 1;
    auto m = zoo::build_model(*uri);
    if (!m) return std::fprintf(stderr, "error: %s\n", m.status().message().c_str()), 1;
    nn::Var x(sample::random_input(*m->inputs[0].dims, 1));
    nn::set_context(nn::Mode::PyNative);
    double pn_min = 0, gm_min = 0;
    const double pn = sample::median_ms([&] { sample::check((*m->module)(x), "PyNative"); }, iters, 2, &pn_min);
    nn::set_context(nn::Mode::Graph);
    sample::check((*m->module)(x), "Graph");  // trace + compile
    const double compile = m->module->graph_cache()->last_compile_ms();
    const double gm = sample::median_ms([&] { sample::check((*m->module)(x), "Graph"); }, iters, 2, &gm_min);
    nn::set_context(nn::Mode::PyNative);
    std::printf("%-30s %8.1f ms %9.3f (%7.3f) ms %9.3f (%7.3f) ms %6.1f ms %7.2fx\n", u.c_str(), build_ms, pn, pn_min,
                gm, gm_min, compile, pn / gm);
  }
  // Eager dispatch overhead of the functional API: a chain of tiny ops (Add/Relu on 16 floats).
  const int ops = quick ? 100 : 1000;
  nn::Var t(sample::random_input({16}, 2));
  const double chain = sample::median_ms(
      [&] {
        nn::Var y = t;
        for (int i = 0; i < ops / 2; ++i) y = nn::F::relu(nn::F::add(y, t));
        sample::check(y, "chain");
      },
      quick ? 3 : 20);
  std::printf("\nPyNative dispatch: %.2f us per op (chain of %d tiny Add/Relu ops)\n", 1000.0 * chain / ops, ops);
  return 0;
}
