// Fallbacks on the command line: what did not run as asked on the chosen device (runtime/fallback.h)
// as one `note:` line, a `fallbacks` list in JSON reports, and `--strict-device` turning any of them
// into an error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/fallback.h"

namespace ms::cli {

// The whole run on another backend than asked ("cuda" without a device): op "*", the backend's note.
std::vector<runtime::Fallback> device_fallback(const std::string& backend_note);

// "note: fallbacks: Where x2 (no cuda kernel: runs on the CPU); ..." on stderr when any; with
// `strict` an error naming them instead (the caller fails with it).
Status report_fallbacks(const std::vector<runtime::Fallback>& fallbacks, bool strict);

// [{"op": "Where", "count": 2, "reason": "...", "nodes": [12, 40]}, ...]: "nodes" the ids of the
// nodes that fell back (ir::NodeId values; [] for a counted entry such as the whole run's "*").
nlohmann::json fallbacks_json(const std::vector<runtime::Fallback>& fallbacks);
// The list fallbacks_json wrote; entries without "nodes" (reports written before nodes were named)
// come back counted only, and anything that is not a list of objects gives an empty list.
std::vector<runtime::Fallback> fallbacks_from_json(const nlohmann::json& j);

// The report's "environment" object (session/environment.h): CPU, libraries, threads, build.
nlohmann::json environment_json(const runtime::Backend* backend);

}  // namespace ms::cli
