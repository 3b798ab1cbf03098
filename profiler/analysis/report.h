// Analysis results as JSON (summary.json) and as aligned text tables (CLI).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/status.h"
#include "profiler/analysis/compare.h"
#include "profiler/analysis/memory_analysis.h"
#include "profiler/analysis/op_stats.h"

namespace ms::prof {

nlohmann::json to_json(const OpTable& t, size_t max_nodes = 50);
nlohmann::json to_json(const MemoryAnalysis& m);
nlohmann::json to_json(const Comparison& c);
// A comparison back from to_json's form (a session file keeps one per run pair, so a session whose
// traces stay in the file still shows it). The verdict is advised again from the rows and the
// summary (the CLI's report keeps only its text). A missing or mistyped field is an error naming it.
Expected<Comparison> comparison_from_json(const nlohmann::json& j);

// The aligned per-op table: one line per original node or fused group, largest eager time first.
std::string format_compare_table(const Comparison& c, size_t max_rows = 25);
std::string format_op_table(const OpTable& t, size_t max_rows = 15);

}  // namespace ms::prof
