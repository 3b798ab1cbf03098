// The host side of one plugin op: its definition as the plugin gave it, the schema and kernels the
// engine registers for it, and MsCall (one inference or kernel call on one node).
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/schema.h"
#include "engine/plugin/modescope_plugin.h"
#include "engine/runtime/custom_kernels.h"

namespace ms::plugin {

struct PluginOp {
  std::string library;  // the plugin file that added it
  std::string domain, name;
  MsOpDef def{};  // the plugin's definition; its strings point at the fields below
  std::vector<std::string> attr_names;
  std::vector<MsAttrDef> attrs;

  std::string full_name() const { return domain.empty() ? name : domain + "." + name; }
};

// The function table every plugin gets.
const MsPluginHost& plugin_host();
// Copies a definition (validated by the caller) so it outlives the registration call.
PluginOp copy_op(const MsOpDef& def, const std::string& library);
// The schema (inference through the plugin) and kernels of an op that lives for the process.
ops::OpSchema make_schema(const PluginOp& op);
runtime::CustomKernels make_kernels(const PluginOp& op);

}  // namespace ms::plugin

// One call of a plugin op on one node (opaque to plugins).
struct MsCall {
  const ms::plugin::PluginOp* op = nullptr;
  const ms::ir::Node* node = nullptr;
  std::string error;
  bool refused = false;                          // the host refused an output the kernel asked for (error says why)
  ms::runtime::KernelContext* kernel = nullptr;  // kernels: where outputs go
  std::vector<ms::ir::ValueType> expected;       // kernels: inferred output types for these inputs
};
