#include "app/cli/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "engine/compiler/compile.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/frontend/zoo/zoo.h"

namespace ms::cli {

LatencySummary summarize(std::vector<double> ms) {
  LatencySummary s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.min = ms.front();
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.p90 = ms[std::min(ms.size() - 1, static_cast<size_t>(std::ceil(0.9 * static_cast<double>(ms.size()))) - 1)];
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  return s;
}

Expected<ir::Graph> load_model_arg(const std::string& model) {
  if (zoo::is_zoo_uri(model)) return zoo::build_graph(model);
  if (!std::filesystem::exists(model)) return io_error(model + ": no such file");
  return onnx_io::load_model(model);
}

Expected<runtime::TensorMap> make_inputs(const ir::Graph& g, const std::map<std::string, std::string>& files,
                                         const std::map<std::string, int64_t>& dim_values, uint64_t seed) {
  runtime::TensorMap out;
  for (const auto& [name, path] : files) {
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
      return invalid_argument("--input " + name + ": the model has no input named '" + name + "'");
    auto t = load_npy(path);
    if (!t) return Status(t.status()).prepend("--input " + name + ": ");
    out[name] = std::move(*t);
  }
  std::mt19937_64 rng(seed);
  for (const auto& name : g.inputs) {
    if (out.count(name)) continue;
    const ir::Value* v = g.value(name);
    if (!v) return invalid_model("input '" + name + "' has no type");
    if (v->is_initializer()) continue;  // old-style input with a default
    if (!v->type.dims) return invalid_argument("input '" + name + "' has unknown rank; give it with --input");
    Shape shape;
    for (size_t i = 0; i < v->type.dims->size(); ++i) {
      int64_t d = (*v->type.dims)[i];
      if (d < 0) {
        const std::string param = i < v->type.dim_params.size() ? v->type.dim_params[i] : "";
        auto it = dim_values.find(param);
        d = it != dim_values.end() ? it->second : 1;
      }
      shape.push_back(d);
    }
    const DType dt = v->type.dtype;
    Tensor t = Tensor::empty(dt, shape);
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    std::uniform_int_distribution<int> small(0, 3);
    const bool ok = visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        if constexpr (std::is_same_v<T, bool>) p[i] = small(rng) & 1;
        else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(small(rng));
        else p[i] = static_cast<T>(static_cast<float>(uni(rng)));
      }
    });
    if (!ok) return unsupported("input '" + name + "' has dtype " + std::string(dtype_name(dt)) + ", which has no random fill");
    out[name] = std::move(t);
  }
  return out;
}

Expected<RunResult> run_model(const ir::Graph& g, const runtime::TensorMap& inputs, const RunConfig& config,
                              runtime::Backend& backend) {
  using clock = std::chrono::steady_clock;
  RunResult r;
  r.output_names = g.outputs;
  r.nodes = g.nodes().size();
  std::unique_ptr<runtime::EagerExecutor> eager;
  std::unique_ptr<compiler::CompiledExecutor> graph;
  if (config.mode == runtime::ExecMode::PyNative) {
    eager = std::make_unique<runtime::EagerExecutor>(g, backend);
  } else {
    std::map<std::string, ir::ValueType> sig;
    for (const auto& [name, t] : inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
    auto c = compiler::compile_executor(g, backend, sig, config.compile);
    if (!c) return std::move(c).take_status();
    graph = std::move(*c);
    r.compile_ms = graph->compile_ms();
  }
  const int total = std::max(0, config.warmup) + std::max(1, config.iters);
  for (int i = 0; i < total; ++i) {
    runtime::RunOptions opts;
    opts.iteration = i;
    const auto t0 = clock::now();
    auto outs = eager ? eager->run(inputs, opts) : graph->run(inputs, opts);
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    if (!outs) return std::move(outs).take_status();
    if (i >= config.warmup) r.latencies_ms.push_back(ms);
    if (i == total - 1) r.outputs = std::move(*outs);
  }
  const runtime::RunStats st = eager ? eager->last_stats() : graph->last_stats();
  r.kernels_per_iter = st.kernels;
  r.peak_bytes = st.peak_bytes;
  r.latency = summarize(r.latencies_ms);
  return r;
}

std::string compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.dtype() != b.dtype())
    return "dtype " + std::string(dtype_name(a.dtype())) + " vs " + std::string(dtype_name(b.dtype()));
  if (a.shape() != b.shape()) return "shape " + shape_to_string(a.shape()) + " vs " + shape_to_string(b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.at_double(i), y = b.at_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)))
      return "element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
  }
  return "";
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace ms::cli
