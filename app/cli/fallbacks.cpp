#include "app/cli/fallbacks.h"

#include "app/session/environment.h"

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
  for (const auto& f : fallbacks) out.push_back({{"op", f.op}, {"count", f.count}, {"reason", f.reason}});
  return out;
}

nlohmann::json environment_json(const runtime::Backend* backend) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : session::environment_record(backend)) j[k] = v;
  return j;
}

}  // namespace ms::cli
