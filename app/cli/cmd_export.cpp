// `export MODEL OUT.onnx`: writes any model (an .onnx file or a zoo template) as ONNX, node names
// kept and node ids/origins in metadata, so a reload keeps identity.
#include <cstdio>
#include <memory>

#include "app/cli/registry.h"
#include "app/session/figures.h"
#include "app/session/model_inputs.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::cli {
namespace {

int export_command(const std::string& model, const std::string& out) {
  auto g = session::load_model_arg(model);
  if (!g) return fail(g.status().message());
  Status v = ir::verify(*g);
  if (!v.is_ok()) return fail(model + ": " + v.message());
  Status st = onnx_io::save_model(*g, out);
  if (!st.is_ok()) return fail(st.message());
  int64_t params = 0;
  for (const auto& name : g->initializer_names()) params += g->value(name)->constant->numel();
  std::printf("%s -> %s: %zu nodes, %lld parameters, opset %lld\n", model.c_str(), out.c_str(),
              g->node_count_recursive(), static_cast<long long>(params), static_cast<long long>(g->opset()));
  return 0;
}

const RegisterCommand kExport{"export", "Write a model (.onnx file or zoo:...) as ONNX with node ids kept", 65,
                              [](CLI::App& cmd) -> CommandRunner {
                                auto model = std::make_shared<std::string>();
                                auto out = std::make_shared<std::string>();
                                cmd.add_option("MODEL", *model, "An .onnx file or zoo:NAME?key=value&...")->required();
                                cmd.add_option("OUT", *out, "Output .onnx path")->required();
                                return [model, out] { return export_command(*model, *out); };
                              }};

}  // namespace
}  // namespace ms::cli
