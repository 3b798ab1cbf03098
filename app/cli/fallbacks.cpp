#include "app/cli/fallbacks.h"

#include "app/session/environment.h"

#include <algorithm>
#include <cstdio>

namespace ms::cli {

std::vector<runtime::Fallback> device_fallback(const std::string& backend_note) {
  if (backend_note.empty()) return {};
  return {runtime::Fallback{"*", 1, backend_note}};
}

Status report_fallbacks(const std::vector<runtime::Fallback>& fallbacks, bool strict) {
  if (fallbacks.empty()) return Status::ok();
  const std::string list = runtime::describe_fallbacks(fallbacks);
  if (strict) return unsupported("--strict-device: not run as asked on the device: " + list);
  std::fprintf(stderr, "note: fallbacks: %s\n", list.c_str());
  return Status::ok();
}

nlohmann::json fallbacks_json(const std::vector<runtime::Fallback>& fallbacks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : fallbacks)
    out.push_back({{"op", f.op}, {"count", f.count}, {"reason", f.reason}, {"nodes", f.nodes}});
  return out;
}

std::vector<runtime::Fallback> fallbacks_from_json(const nlohmann::json& j) {
  std::vector<runtime::Fallback> out;
  if (!j.is_array()) return out;
  for (const auto& f : j) {
    if (!f.is_object()) continue;
    runtime::Fallback x{f.value("op", ""), f.value("count", int64_t{0}), f.value("reason", "")};
    if (auto it = f.find("nodes"); it != f.end() && it->is_array())
      for (const auto& id : *it)
        if (id.is_number_unsigned()) x.nodes.push_back(id.get<uint64_t>());
    std::sort(x.nodes.begin(), x.nodes.end());
    x.nodes.erase(std::unique(x.nodes.begin(), x.nodes.end()), x.nodes.end());
    out.push_back(std::move(x));
  }
  return out;
}

nlohmann::json environment_json(const runtime::Backend* backend) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : session::environment_record(backend)) j[k] = v;
  return j;
}

}  // namespace ms::cli
