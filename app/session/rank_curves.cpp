#include "app/session/rank_curves.h"

#include <nlohmann/json.hpp>

namespace ms::session {

std::string rank_curve_name(const std::string& mode, int rank) {
  return (mode == "graph" ? "Graph" : mode == "pynative" ? "PyNative" : mode) + " rank " + std::to_string(rank);
}

namespace {

Expected<std::vector<double>> numbers(const nlohmann::json& j, const char* field, const std::string& what) {
  if (!j.contains(field) || !j[field].is_array())
    return invalid_argument(what + ": the report has no '" + field + "' list");
  std::vector<double> out;
  for (const auto& v : j[field]) {
    if (!v.is_number()) return invalid_argument(what + ": '" + field + "' holds a value that is not a number");
    out.push_back(v.get<double>());
  }
  return out;
}

std::string summary_of(int rank, int world_size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size);
}

}  // namespace

TrainingCurve rank_curve(const std::string& mode, int rank, int world_size, std::vector<double> losses,
                         std::vector<double> lrs, std::vector<double> step_ms) {
  TrainingCurve c;
  c.mode = mode;
  c.name = rank_curve_name(mode, rank);
  c.report =
      nlohmann::json{
          {"mode", mode}, {"rank", rank}, {"world_size", world_size}, {"summary", summary_of(rank, world_size)}}
          .dump();
  c.losses = std::move(losses), c.lrs = std::move(lrs), c.step_ms = std::move(step_ms);
  return c;
}

Expected<TrainingCurve> rank_curve_from_report(const std::string& report_json, const std::string& what,
                                               const std::vector<double>& lrs) {
  nlohmann::json j = nlohmann::json::parse(report_json, nullptr, false);
  if (!j.is_object()) return invalid_argument(what + ": not a train report (JSON object)");
  if (!j.contains("rank") || !j["rank"].is_number_integer() || !j.contains("world_size") ||
      !j["world_size"].is_number_integer())
    return invalid_argument(what + ": the report has no 'rank' and 'world_size' (not a data-parallel run)");
  if (!j.contains("mode") || !j["mode"].is_string()) return invalid_argument(what + ": the report has no 'mode'");
  TrainingCurve c;
  c.mode = j["mode"].get<std::string>();
  const int rank = j["rank"].get<int>();
  c.name = rank_curve_name(c.mode, rank);
  MS_ASSIGN_OR_RETURN(c.losses, numbers(j, "losses", what));
  MS_ASSIGN_OR_RETURN(c.step_ms, numbers(j, "step_ms_all", what));
  if (c.step_ms.size() != c.losses.size())
    return invalid_argument(what + ": 'step_ms_all' has " + std::to_string(c.step_ms.size()) + " steps, 'losses' " +
                            std::to_string(c.losses.size()));
  c.lrs = lrs;
  c.lrs.resize(c.losses.size(), lrs.empty() ? 0.0 : lrs.back());
  j["summary"] = summary_of(rank, j["world_size"].get<int>());
  c.report = j.dump();
  return c;
}

int rank_of_curve(const TrainingCurve& c) {
  const nlohmann::json j = nlohmann::json::parse(c.report, nullptr, false);
  if (!j.is_object() || !j.contains("rank") || !j["rank"].is_number_integer() || !j.contains("world_size") ||
      !j["world_size"].is_number_integer() || j["world_size"].get<int>() < 2)
    return -1;
  return j["rank"].get<int>();
}

}  // namespace ms::session
