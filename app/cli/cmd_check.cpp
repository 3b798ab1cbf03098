// `check MODEL`: load, verify, infer shapes; summary of inputs, outputs, ops, parameters, FLOPs.
#include <chrono>
#include <cstdio>
#include <map>

#include "app/cli/commands.h"
#include "app/session/figures.h"
#include "app/session/model_inputs.h"
#include "engine/backends/select.h"
#include "engine/compiler/infer.h"
#include "engine/core/mapped_file.h"
#include "engine/ops/schema.h"
#include "engine/runtime/backend.h"

namespace ms::cli {

int check_command(const std::string& model) {
  const ProcessMemory before = process_memory();
  const auto t0 = std::chrono::steady_clock::now();
  auto g = session::load_model_arg(model);
  if (!g) return fail(g.status().message());
  Status v = ir::verify(*g);
  if (!v.is_ok()) return fail(model + ": " + v.message());
  auto cpu = backends::create_cpu_backend(1);
  Status inf = compiler::infer_graph_types(*g, cpu.get());
  if (!inf.is_ok()) return fail(model + ": " + inf.message());
  const double open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const ProcessMemory after = process_memory();

  std::printf("%s: ok\n", model.c_str());
  std::printf("  opset     %lld\n", static_cast<long long>(g->opset()));
  for (const auto& in : g->inputs)
    if (const ir::Value* val = g->value(in); val && !val->is_initializer())
      std::printf("  input     %s: %s\n", in.c_str(), val->type.to_string().c_str());
  for (const auto& out : g->outputs)
    if (const ir::Value* val = g->resolve(out))
      std::printf("  output    %s: %s\n", out.c_str(), val->type.to_string().c_str());
  int64_t params = 0;
  double param_bytes = 0;
  for (const auto& name : g->initializer_names()) {
    const Tensor& t = *g->value(name)->constant;
    params += t.numel();
    param_bytes += static_cast<double>(t.nbytes());
  }
  std::printf("  params    %lld (%s)\n", static_cast<long long>(params), session::format_bytes(param_bytes).c_str());
  // External weights are mapped, not read: opening a model costs what its graph costs.
  if (after.resident_bytes >= 0 && after.read_bytes >= 0 && before.read_bytes >= 0)
    std::printf("  opened    %.0f ms, resident %s, read %s from storage\n", open_ms,
                session::format_bytes(static_cast<double>(after.resident_bytes)).c_str(),
                session::format_bytes(static_cast<double>(after.read_bytes - before.read_bytes)).c_str());
  std::map<std::string, int> hist;
  double flops = 0;
  bool flops_partial = false;
  for (const auto& n : g->nodes()) {
    ++hist[n.op_type];
    std::vector<ir::ValueType> in, out;
    for (const auto& i : n.inputs) {
      const ir::Value* val = i.empty() ? nullptr : g->resolve(i);
      in.push_back(val ? val->type : ir::ValueType{});
    }
    for (const auto& o : n.outputs) {
      const ir::Value* val = o.empty() ? nullptr : g->resolve(o);
      out.push_back(val ? val->type : ir::ValueType{});
      if (val && !val->type.is_static()) flops_partial = true;
    }
    flops += ops::node_cost(n, in, out).flops;
  }
  std::printf("  nodes     %zu (%zu with subgraphs)\n", g->nodes().size(), g->node_count_recursive());
  std::printf("  flops     %.4g%s\n", flops, flops_partial ? " (dynamic dims counted as unknown)" : "");
  std::printf("  ops      ");
  for (const auto& [op, n] : hist) std::printf(" %s×%d", op.c_str(), n);
  std::printf("\n");
  return 0;
}

}  // namespace ms::cli
