#include "profiler/analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

namespace ms::prof {

using json = nlohmann::json;

namespace {

// JSON has no infinity: a break-even that never comes is null.
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

json to_json(const OpTable& t, size_t max_nodes) {
  json j;
  j["iterations"] = t.iterations;
  j["run_ms"] = t.run_ms;
  j["busy_ms"] = t.busy_ms;
  json ops = json::array();
  for (const OpStat& s : t.by_op)
    ops.push_back({{"op", s.op},
                   {"count", s.count},
                   {"total_ms", s.total_ms},
                   {"mean_us", s.mean_us},
                   {"self_ms", s.self_ms},
                   {"share", s.share},
                   {"kernel_ms", s.kernel_ms},
                   {"kernels", s.kernels},
                   {"flops", s.flops},
                   {"bytes", s.bytes},
                   {"flops_per_s", s.flops_per_s},
                   {"bytes_per_s", s.bytes_per_s}});
  j["by_op"] = std::move(ops);
  json nodes = json::array();
  for (size_t i = 0; i < t.by_node.size() && i < max_nodes; ++i) {
    const NodeStat& n = t.by_node[i];
    nodes.push_back({{"node_id", n.node_id},
                     {"name", n.name},
                     {"op", n.op},
                     {"origins", n.origins},
                     {"shapes", n.shapes},
                     {"impl", n.impl},
                     {"count", n.count},
                     {"total_ms", n.total_ms},
                     {"self_ms", n.self_ms},
                     {"kernel_ms", n.kernel_ms},
                     {"kernels", n.kernels},
                     {"flops", n.flops},
                     {"bytes", n.bytes}});
  }
  j["by_node"] = std::move(nodes);
  return j;
}

json to_json(const MemoryAnalysis& m) {
  json regions = json::array();
  for (const auto& r : m.top_regions)
    regions.push_back({{"address", r.address}, {"bytes", r.bytes}, {"arena", r.arena}, {"uses", r.uses}});
  json top = json::array();
  for (const auto& c : m.top_at_peak)
    top.push_back({{"value", c.value},
                   {"producer", c.producer},
                   {"producer_name", c.producer_name},
                   {"op", c.op},
                   {"bytes", c.bytes}});
  return {{"peak_live_bytes", m.peak_live_bytes},
          {"peak_ns", m.peak_ns},
          {"lower_bound_bytes", m.lower_bound_bytes},
          {"planned_lower_bound", m.planned_lower_bound},
          {"footprint_bytes", m.footprint_bytes},
          {"arena_bytes", m.arena_bytes},
          {"fragmentation", m.fragmentation},
          {"blocks", m.blocks},
          {"regions", m.regions},
          {"mean_reuse", m.mean_reuse},
          {"top_regions", std::move(regions)},
          {"top_at_peak", std::move(top)}};
}

json to_json(const Comparison& c) {
  json rows = json::array();
  for (const CompareRow& r : c.rows)
    rows.push_back({{"origins", r.origins},
                    {"label", r.label},
                    {"names", r.names},
                    {"graph_ops", r.graph_ops},
                    {"fused", r.fused},
                    {"eager_ms", r.eager_ms},
                    {"graph_ms", r.graph_ms},
                    {"saving_ms", r.saving_ms()},
                    {"eager_kernel_ms", r.eager_kernel_ms},
                    {"graph_kernel_ms", r.graph_kernel_ms},
                    {"eager_kernels", r.eager_kernels},
                    {"graph_kernels", r.graph_kernels},
                    {"eager_launches", r.eager_ops},
                    {"graph_launches", r.graph_ops_count},
                    {"eager_bytes", r.eager_bytes},
                    {"graph_bytes", r.graph_bytes}});
  const CompareSummary& s = c.summary;
  json summary = {{"eager_iter_ms", s.eager_iter_ms},
                  {"graph_iter_ms", s.graph_iter_ms},
                  {"compile_ms", s.compile_ms},
                  {"compile_cached", s.compile_cached},
                  {"eager_kernels_per_iter", s.eager_kernels_per_iter},
                  {"graph_kernels_per_iter", s.graph_kernels_per_iter},
                  {"eager_peak_bytes", s.eager_peak_bytes},
                  {"graph_peak_bytes", s.graph_peak_bytes},
                  {"eager_overhead_ms", s.eager_overhead_ms},
                  {"graph_overhead_ms", s.graph_overhead_ms},
                  {"saving_ms", s.saving_ms},
                  {"break_even_iterations", finite_or_null(s.break_even_iterations)},
                  {"eager_iterations", s.eager_iterations},
                  {"graph_iterations", s.graph_iterations},
                  {"eager_cpu_wait_share", s.eager_cpu_wait_share},
                  {"graph_cpu_wait_share", s.graph_cpu_wait_share}};
  json verdict = {{"text", c.verdict.text},
                  {"graph_pays_off", c.verdict.graph_pays_off},
                  {"break_even_iterations", finite_or_null(c.verdict.break_even_iterations)},
                  {"main_source", c.verdict.main_source},
                  {"main_share", c.verdict.main_share},
                  {"disturbed", c.verdict.disturbed}};
  return {{"rows", std::move(rows)}, {"summary", std::move(summary)}, {"verdict", std::move(verdict)}};
}

namespace {

// Reads the number `key` of `j` into `out` (null: infinity); false when it is missing or no number.
template <class T> bool read_number(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (it->is_null() && std::is_floating_point_v<T>) {
    out = std::numeric_limits<T>::infinity();
    return true;
  }
  if (!it->is_number()) return false;
  out = it->get<T>();
  return true;
}

Status bad_field(const std::string& where) {
  return invalid_model("comparison report: field '" + where + "' is missing or of the wrong type");
}

Status read_row(const json& j, size_t i, CompareRow& r) {
  const std::string at = "rows[" + std::to_string(i) + "].";
  if (!j.is_object()) return bad_field("rows[" + std::to_string(i) + "]");
  for (const char* key : {"label", "names", "graph_ops"})
    if (!j.contains(key) || !j[key].is_string()) return bad_field(at + key);
  r.label = j["label"].get<std::string>();
  r.names = j["names"].get<std::string>();
  r.graph_ops = j["graph_ops"].get<std::string>();
  if (!j.contains("fused") || !j["fused"].is_boolean()) return bad_field(at + "fused");
  r.fused = j["fused"].get<bool>();
  if (!j.contains("origins") || !j["origins"].is_array()) return bad_field(at + "origins");
  for (const json& o : j["origins"]) {
    if (!o.is_number_unsigned()) return bad_field(at + "origins");
    r.origins.push_back(o.get<uint64_t>());
  }
  const std::pair<const char*, double*> numbers[] = {{"eager_ms", &r.eager_ms},
                                                     {"graph_ms", &r.graph_ms},
                                                     {"eager_kernel_ms", &r.eager_kernel_ms},
                                                     {"graph_kernel_ms", &r.graph_kernel_ms},
                                                     {"eager_kernels", &r.eager_kernels},
                                                     {"graph_kernels", &r.graph_kernels},
                                                     {"eager_launches", &r.eager_ops},
                                                     {"graph_launches", &r.graph_ops_count},
                                                     {"eager_bytes", &r.eager_bytes},
                                                     {"graph_bytes", &r.graph_bytes}};
  for (const auto& [key, field] : numbers)
    if (!read_number(j, key, *field)) return bad_field(at + key);
  return Status::ok();
}

}  // namespace

Expected<Comparison> comparison_from_json(const json& j) {
  if (!j.is_object()) return invalid_model("comparison report: not a JSON object");
  if (!j.contains("rows") || !j["rows"].is_array()) return bad_field("rows");
  if (!j.contains("summary") || !j["summary"].is_object()) return bad_field("summary");
  Comparison c;
  for (size_t i = 0; i < j["rows"].size(); ++i) {
    c.rows.emplace_back();
    MS_RETURN_IF_ERROR(read_row(j["rows"][i], i, c.rows.back()));
  }
  const json& sj = j["summary"];
  CompareSummary& s = c.summary;
  const std::pair<const char*, double*> numbers[] = {{"eager_iter_ms", &s.eager_iter_ms},
                                                     {"graph_iter_ms", &s.graph_iter_ms},
                                                     {"compile_ms", &s.compile_ms},
                                                     {"eager_kernels_per_iter", &s.eager_kernels_per_iter},
                                                     {"graph_kernels_per_iter", &s.graph_kernels_per_iter},
                                                     {"eager_overhead_ms", &s.eager_overhead_ms},
                                                     {"graph_overhead_ms", &s.graph_overhead_ms},
                                                     {"saving_ms", &s.saving_ms},
                                                     {"break_even_iterations", &s.break_even_iterations}};
  for (const auto& [key, field] : numbers)
    if (!read_number(sj, key, *field)) return bad_field(std::string("summary.") + key);
  if (!read_number(sj, "eager_peak_bytes", s.eager_peak_bytes)) return bad_field("summary.eager_peak_bytes");
  if (!read_number(sj, "graph_peak_bytes", s.graph_peak_bytes)) return bad_field("summary.graph_peak_bytes");
  if (!read_number(sj, "eager_iterations", s.eager_iterations)) return bad_field("summary.eager_iterations");
  if (!read_number(sj, "graph_iterations", s.graph_iterations)) return bad_field("summary.graph_iterations");
  // Optional (reports written before it have none).
  if (sj.contains("compile_cached")) {
    if (!sj["compile_cached"].is_boolean()) return bad_field("summary.compile_cached");
    s.compile_cached = sj["compile_cached"].get<bool>();
  }
  for (const auto& [key, field] : {std::pair{"eager_cpu_wait_share", &s.eager_cpu_wait_share},
                                   std::pair{"graph_cpu_wait_share", &s.graph_cpu_wait_share}})
    if (sj.contains(key) && !read_number(sj, key, *field)) return bad_field(std::string("summary.") + key);
  c.verdict = advise(c);
  return c;
}

std::string format_compare_table(const Comparison& c, size_t max_rows) {
  std::vector<const CompareRow*> rows;
  for (const CompareRow& r : c.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
    return std::max(a->eager_ms, a->graph_ms) > std::max(b->eager_ms, b->graph_ms);
  });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %-22s %10s %10s %8s %9s %9s\n", "eager ops (node)", "graph op", "eager ms",
                "graph ms", "ratio", "kernels", "launches");
  out += line;
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const CompareRow& r = *rows[i];
    const std::string what = cut(r.label + (r.names.empty() ? "" : " (" + r.names + ")"), 34);
    const std::string graph = r.graph_ops.empty() ? "(removed)" : cut(r.graph_ops + (r.fused ? " [fused]" : ""), 22);
    char ratio[16] = "-";
    if (r.graph_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", r.eager_ms / r.graph_ms);
    char kern[32], launch[32];
    std::snprintf(kern, sizeof kern, "%g/%g", r.eager_kernels, r.graph_kernels);
    std::snprintf(launch, sizeof launch, "%g/%g", r.eager_ops, r.graph_ops_count);
    std::snprintf(line, sizeof line, "%-34s %-22s %10.4f %10.4f %8s %9s %9s\n", what.c_str(), graph.c_str(), r.eager_ms,
                  r.graph_ms, ratio, kern, launch);
    out += line;
  }
  if (rows.size() > max_rows) out += "... " + std::to_string(rows.size() - max_rows) + " more rows\n";
  return out;
}

std::string format_op_table(const OpTable& t, size_t max_rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %7s %10s %10s %7s %12s %12s\n", "op", "count", "total ms", "self ms", "share",
                "GFLOP/s", "GB/s");
  out += line;
  for (size_t i = 0; i < t.by_op.size() && i < max_rows; ++i) {
    const OpStat& s = t.by_op[i];
    std::snprintf(line, sizeof line, "%-34s %7lld %10.3f %10.3f %6.1f%% %12.2f %12.2f\n", cut(s.op, 34).c_str(),
                  static_cast<long long>(s.count), s.total_ms, s.self_ms, s.share * 100, s.flops_per_s * 1e-9,
                  s.bytes_per_s * 1e-9);
    out += line;
  }
  return out;
}

}  // namespace ms::prof
