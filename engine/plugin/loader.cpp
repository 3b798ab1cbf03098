// dlopen, the ABI check, and the all-or-nothing registration of a plugin's ops.
#include "engine/plugin/loader.h"

#include <dlfcn.h>

#include <deque>
#include <filesystem>
#include <map>
#include <mutex>

#include "engine/plugin/plugin_op.h"

namespace ms::plugin {
namespace {

constexpr const char* kRegisterSymbol = "modescope_register_ops_v1";

// Everything loaded; ops live here for the life of the process (schemas and kernels point at them).
struct Loaded {
  std::mutex mutex;
  std::deque<PluginOp> ops;
  std::vector<PluginInfo> plugins;
  std::map<std::string, size_t> by_file;  // canonical path -> index in plugins
};

Loaded& loaded() {
  static auto* l = new Loaded();
  return *l;
}

// One registration call in progress.
struct LoadState {
  std::string path;
  std::vector<PluginOp> pending;
  std::string error;
};

std::string op_key(const std::string& domain, const std::string& name) {
  return (domain == "ai.onnx" ? std::string() : domain) + ":" + name;
}

std::string shown_op(const std::string& domain, const std::string& name) {
  return domain.empty() || domain == "ai.onnx" ? name : domain + "." + name;
}

// Why a definition cannot be added, or "".
std::string check_def(const MsOpDef& d) {
  if (d.size < sizeof(MsOpDef)) return "an op definition is smaller than this ABI's MsOpDef";
  if (!d.domain || !d.name || !*d.name) return "an op definition has no domain or name";
  const std::string op = shown_op(d.domain, d.name);
  if (!d.infer) return "op " + op + " has no inference function (Graph mode plans its outputs from it)";
  if (!d.cpu_kernel) return "op " + op + " has no CPU kernel";
  if (d.min_inputs < 0 || (d.max_inputs >= 0 && d.max_inputs < d.min_inputs) || d.min_outputs < 1 ||
      (d.max_outputs >= 0 && d.max_outputs < d.min_outputs))
    return "op " + op + " has an invalid input or output count";
  if (d.num_attrs < 0 || (d.num_attrs > 0 && !d.attrs)) return "op " + op + " has an invalid attribute list";
  for (int32_t i = 0; i < d.num_attrs; ++i)
    if (!d.attrs[i].name || d.attrs[i].kind < MS_ATTR_INT || d.attrs[i].kind > MS_ATTR_STRING)
      return "op " + op + ": attribute " + std::to_string(i) + " has no name or an unknown kind";
  return "";
}

// Who already has (domain, name): "" when nobody.
std::string claimed_by(const LoadState& st, const std::string& domain, const std::string& name) {
  const std::string key = op_key(domain, name);
  for (const PluginOp& p : st.pending)
    if (op_key(p.domain, p.name) == key) return "this plugin adds op " + shown_op(domain, name) + " twice";
  for (const PluginOp& p : loaded().ops)
    if (op_key(p.domain, p.name) == key)
      return "op " + shown_op(domain, name) + " is already registered by plugin '" + p.library + "'";
  if (ops::Registry::instance().find(name, domain) || runtime::has_custom_kernels(domain, name))
    return "op " + shown_op(domain, name) + " is already an op of the engine";
  return "";
}

int add_op(MsPluginRegistry* reg, const MsOpDef* def) {
  auto* st = static_cast<LoadState*>(reg->impl);
  if (!st->error.empty()) return 1;
  std::string why = def ? check_def(*def) : "add_op got no definition";
  if (why.empty()) why = claimed_by(*st, def->domain, def->name);
  if (!why.empty()) {
    st->error = why;
    return 1;
  }
  st->pending.push_back(copy_op(*def, st->path));
  return 0;
}

// The ABI version a library was built for when it lacks ours (0 when none is found).
int other_abi_version(void* lib) {
  for (int v = 0; v < 100; ++v) {
    if (v == MODESCOPE_PLUGIN_ABI_VERSION) continue;
    const std::string sym = "modescope_register_ops_v" + std::to_string(v);
    if (dlsym(lib, sym.c_str())) return v == 0 ? -1 : v;
  }
  return 0;
}

Status load_error(const std::string& path, const std::string& what) {
  return invalid_argument("plugin '" + path + "': " + what);
}

// Finds and calls the registration function; fills st.pending. Closes `lib` on failure.
Status register_from(void* lib, LoadState& st) {
  auto fn = reinterpret_cast<MsRegisterOpsV1>(dlsym(lib, kRegisterSymbol));
  if (!fn) {
    const int other = other_abi_version(lib);
    dlclose(lib);
    if (other != 0)
      return load_error(st.path, "built for plugin ABI version " + std::to_string(other < 0 ? 0 : other) +
                                     ", this Modescope loads version " + std::to_string(MODESCOPE_PLUGIN_ABI_VERSION));
    return load_error(st.path, std::string("not a Modescope plugin (no symbol ") + kRegisterSymbol + ")");
  }
  MsPluginRegistry reg{MODESCOPE_PLUGIN_ABI_VERSION, sizeof(MsPluginRegistry), &st, &add_op};
  const int rc = fn(&plugin_host(), &reg);
  if (rc != 0 || !st.error.empty()) {
    dlclose(lib);
    return load_error(st.path,
                      st.error.empty() ? "registration failed (returned " + std::to_string(rc) + ")" : st.error);
  }
  return Status::ok();
}

}  // namespace

void record_load_error(MsPluginRegistry* reg, const std::string& message) {
  auto* st = reg ? static_cast<LoadState*>(reg->impl) : nullptr;
  if (st && st->error.empty()) st->error = message;
}

Expected<PluginInfo> load_plugin(const std::string& path) {
  Loaded& l = loaded();
  std::lock_guard lock(l.mutex);
  std::error_code ec;
  const auto canonical = std::filesystem::canonical(path, ec);
  if (ec) return load_error(path, "no such file");
  if (auto it = l.by_file.find(canonical.string()); it != l.by_file.end()) return l.plugins[it->second];
  void* lib = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    return load_error(path, std::string("cannot load: ") + (err ? err : "dlopen failed"));
  }
  LoadState st;
  st.path = path;
  MS_RETURN_IF_ERROR(register_from(lib, st));
  PluginInfo info;
  info.path = path;
  for (PluginOp& op : st.pending) {
    l.ops.push_back(std::move(op));
    const PluginOp& kept = l.ops.back();
    ops::Registry::instance().add(make_schema(kept));
    runtime::set_custom_kernels(kept.domain, kept.name, make_kernels(kept));
    info.ops.push_back(kept.full_name());
  }
  l.by_file[canonical.string()] = l.plugins.size();
  l.plugins.push_back(info);
  return info;
}

Status load_plugins(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    auto r = load_plugin(p);
    if (!r) return std::move(r).take_status();
  }
  return Status::ok();
}

std::vector<PluginInfo> loaded_plugins() {
  Loaded& l = loaded();
  std::lock_guard lock(l.mutex);
  return l.plugins;
}

}  // namespace ms::plugin
