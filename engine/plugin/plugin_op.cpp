#include "engine/plugin/plugin_op.h"

#include <cstring>

namespace ms::plugin {
namespace {

const char* host_node_name(const MsCall* call) { return call->node->name.c_str(); }

int host_attr_int(const MsCall* call, const char* name, int64_t* out) {
  auto it = call->node->attrs.find(name);
  if (it == call->node->attrs.end()) return 0;
  const int64_t* v = it->second.get_if<int64_t>();
  if (v && out) *out = *v;
  return v ? 1 : 0;
}

int host_attr_float(const MsCall* call, const char* name, float* out) {
  auto it = call->node->attrs.find(name);
  if (it == call->node->attrs.end()) return 0;
  const float* v = it->second.get_if<float>();
  if (v && out) *out = *v;
  return v ? 1 : 0;
}

const char* host_attr_string(const MsCall* call, const char* name) {
  auto it = call->node->attrs.find(name);
  if (it == call->node->attrs.end()) return nullptr;
  const std::string* v = it->second.get_if<std::string>();
  return v ? v->c_str() : nullptr;
}

void host_set_error(MsCall* call, const char* message) {
  if (call && call->error.empty()) call->error = message ? message : "(no message)";
}

std::string type_text(int32_t dtype, int32_t rank, const int64_t* dims) {
  const auto dt = dtype_from_onnx(dtype);
  std::string s = dt ? std::string(dtype_name(*dt)) : "type" + std::to_string(dtype);
  if (rank < 0) return s + "[*]";
  s += "[";
  for (int32_t i = 0; i < rank; ++i) s += (i ? "," : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

// Whether a kernel's output type fits what inference said (unknown rank/dims/dtype match anything).
bool fits(const ir::ValueType& want, DType dtype, int32_t rank, const int64_t* dims) {
  if (want.dtype != DType::Undefined && want.dtype != dtype) return false;
  if (!want.dims) return true;
  if (static_cast<size_t>(rank) != want.dims->size()) return false;
  for (int32_t i = 0; i < rank; ++i)
    if ((*want.dims)[static_cast<size_t>(i)] >= 0 && (*want.dims)[static_cast<size_t>(i)] != dims[i]) return false;
  return true;
}

void refuse(MsCall& call, std::string message) {
  if (call.refused) return;
  call.error = std::move(message);
  call.refused = true;
}

void* host_allocate_output(MsCall* call, int index, int32_t dtype, int32_t rank, const int64_t* dims) {
  runtime::KernelContext* k = call ? call->kernel : nullptr;
  if (!k) {
    if (call) refuse(*call, "allocate_output called outside a kernel");
    return nullptr;
  }
  if (index < 0 || static_cast<size_t>(index) >= k->num_outputs()) {
    refuse(*call, "output index " + std::to_string(index) + " out of range");
    return nullptr;
  }
  const auto dt = dtype_from_onnx(dtype);
  if (!dt || rank < 0 || rank > MODESCOPE_PLUGIN_MAX_RANK || (rank > 0 && !dims)) {
    refuse(*call, "output " + std::to_string(index) + ": bad element type " + std::to_string(dtype) + " or rank " +
                      std::to_string(rank));
    return nullptr;
  }
  const ir::ValueType& want = call->expected[static_cast<size_t>(index)];
  if (!fits(want, *dt, rank, dims)) {
    refuse(*call, "kernel output " + std::to_string(index) + " is " + type_text(dtype, rank, dims) +
                      ", but inference said " + want.to_string());
    return nullptr;
  }
  auto t = k->allocate_output(static_cast<size_t>(index), *dt, Shape(dims, dims + rank));
  if (!t) {
    refuse(*call, t.status().message());
    return nullptr;
  }
  return (*t)->raw();
}

void host_set_load_error(MsPluginRegistry* reg, const char* message);

}  // namespace

// Defined by the loader (it owns the registry's state).
void record_load_error(MsPluginRegistry* reg, const std::string& message);

namespace {
void host_set_load_error(MsPluginRegistry* reg, const char* message) {
  record_load_error(reg, message ? message : "(no message)");
}
}  // namespace

const MsPluginHost& plugin_host() {
  static const MsPluginHost host = {MODESCOPE_PLUGIN_ABI_VERSION,
                                    sizeof(MsPluginHost),
                                    &host_node_name,
                                    &host_attr_int,
                                    &host_attr_float,
                                    &host_attr_string,
                                    &host_allocate_output,
                                    &host_set_error,
                                    &host_set_load_error};
  return host;
}

PluginOp copy_op(const MsOpDef& def, const std::string& library) {
  PluginOp op;
  op.library = library;
  op.domain = std::string(def.domain) == "ai.onnx" ? std::string() : std::string(def.domain);
  op.name = def.name;
  op.def = def;
  for (int32_t i = 0; i < def.num_attrs; ++i) {
    op.attr_names.emplace_back(def.attrs[i].name);
    op.attrs.push_back(def.attrs[i]);
    op.attrs.back().name = nullptr;  // attr_names[i] holds it
  }
  // The plugin's strings may not outlive the registration call: the fields above hold copies.
  op.def.domain = op.def.name = nullptr;
  op.def.attrs = nullptr;
  return op;
}

}  // namespace ms::plugin
