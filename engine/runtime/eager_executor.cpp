#include "engine/core/mapped_file.h"
#include "engine/runtime/interpreter.h"

namespace ms::runtime {

void advise_constants_will_be_read(const ir::Graph& g) {
  constexpr size_t kMinBytes = size_t{1} << 20;
  for (const auto& [name, v] : g.values())
    if (v.constant && v.constant->defined() && v.constant->device().is_cpu() && v.constant->nbytes() >= kMinBytes)
      advise_will_read(v.constant->raw(), v.constant->nbytes());
}

struct EagerExecutor::Impl {
  Impl(const ir::Graph& g, Backend& be) : graph(g.deep_copy()), backend(be), interp(be, ExecMode::PyNative) {
    link_subgraph_parents(graph);
    advise_constants_will_be_read(graph);
  }
  ir::Graph graph;
  Backend& backend;
  Interpreter interp;
  RunStats stats;
};

EagerExecutor::EagerExecutor(const ir::Graph& graph, Backend& backend)
    : impl_(std::make_unique<Impl>(graph, backend)) {}
EagerExecutor::~EagerExecutor() = default;

Expected<std::vector<Tensor>> EagerExecutor::run(const TensorMap& inputs, const RunOptions& options) {
  Impl& m = *impl_;
  auto prog = m.interp.program_for(m.graph);
  if (!prog) return std::move(prog).take_status();
  std::vector<Tensor> ordered;
  for (const auto& name : m.graph.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      // Old-style models list initializers as inputs: the initializer is the default.
      const ir::Value* v = m.graph.value(name);
      if (v && v->constant) {
        ordered.push_back(*v->constant);
        continue;
      }
      return invalid_argument("missing input '" + name + "'");
    }
    ordered.push_back(it->second);
  }
  m.interp.set_options(&options);
  m.interp.kernels_launched = 0;
  m.backend.allocator().reset_peak();
  const RunInfo info{ExecMode::PyNative, m.backend.device(), options.iteration};
  if (options.observer) options.observer->on_run_begin(info);
  auto result = m.interp.run(**prog, ordered, nullptr);
  m.backend.synchronize();
  if (result && !m.backend.device().is_cpu()) {
    if (Status st = to_host(m.backend, *result); !st.is_ok()) result = st;
  }
  if (options.observer) options.observer->on_run_end(info);
  m.stats.kernels = m.interp.kernels_launched;
  m.stats.peak_bytes = m.backend.allocator().stats().peak_in_use;
  m.interp.set_options(nullptr);
  return result;
}

RunStats EagerExecutor::last_stats() const { return impl_->stats; }

}  // namespace ms::runtime
