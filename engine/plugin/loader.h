// Operator plugins: shared libraries that add ops through the C ABI of modescope_plugin.h. Loading
// one registers each of its ops in the op registry (schema: arity, attributes, the plugin's type and
// shape inference) and its kernels among the run-time kernels (runtime/custom_kernels.h), so ONNX
// nodes of its domain import, infer, compile, run in both modes and profile like built-in ops.
// Load plugins before the models that use them; ops are never unloaded.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace ms::plugin {

struct PluginInfo {
  std::string path;              // as given
  std::vector<std::string> ops;  // "domain.Name"
};

// Loads the library at `path` (dlopen, RTLD_LOCAL), checks its ABI version and registers its ops,
// all or none. Loading the same file again is a no-op that returns the first load's info. Errors
// are one line naming the file: missing file, no registration symbol, another ABI version, an op
// that another plugin or the engine already has, a malformed op definition.
Expected<PluginInfo> load_plugin(const std::string& path);
// Loads each in order; the first error stops.
Status load_plugins(const std::vector<std::string>& paths);
// Every plugin loaded so far, in load order.
std::vector<PluginInfo> loaded_plugins();

}  // namespace ms::plugin
