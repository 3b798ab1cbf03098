// `merge-traces OUT.json IN.json...`: Chrome traces (one per rank, e.g. `train --profile
// 'prof{rank}'` under mpirun) merged into one file, each input's processes kept apart: inputs
// whose process ids collide with an earlier one's are shifted by 1000 x their position. Perfetto
// then shows the ranks' steps and collectives one above the other.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "app/cli/commands.h"
#include "app/cli/registry.h"
#include "engine/core/atomic_file.h"

namespace ms::cli {
namespace {

struct MergeTracesArgs {
  std::string out;
  std::vector<std::string> inputs;
};

Expected<nlohmann::json> read_trace_events(const std::string& path) {
  std::ifstream f(path);
  if (!f) return io_error(path + ": cannot open");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded()) return invalid_argument(path + ": not JSON");
  if (j.is_array()) return j;
  if (j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array()) return j["traceEvents"];
  return invalid_argument(path + ": no traceEvents array (not a Chrome trace)");
}

int merge_traces_command(const MergeTracesArgs& a) {
  nlohmann::json merged = nlohmann::json::array();
  std::set<int64_t> taken;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    auto events = read_trace_events(a.inputs[k]);
    if (!events) return fail(events.status().message());
    std::set<int64_t> pids;
    for (const auto& e : *events)
      if (e.contains("pid") && e["pid"].is_number_integer()) pids.insert(e["pid"].get<int64_t>());
    bool collides = false;
    for (int64_t p : pids) collides = collides || taken.count(p);
    const int64_t shift = collides ? 1000 * static_cast<int64_t>(k) : 0;
    for (auto e : *events) {
      if (e.contains("pid") && e["pid"].is_number_integer()) e["pid"] = e["pid"].get<int64_t>() + shift;
      merged.push_back(std::move(e));
    }
    for (int64_t p : pids) taken.insert(p + shift);
  }
  const nlohmann::json out{{"traceEvents", merged}, {"displayTimeUnit", "ms"}};
  if (Status st = write_file_atomic(a.out, out.dump() + "\n"); !st.is_ok()) return fail(st.message());
  std::printf("%s: %zu events from %zu traces\n", a.out.c_str(), merged.size(), a.inputs.size());
  return 0;
}

const RegisterCommand kMergeTraces{"merge-traces",
                                   "Merge Chrome traces (one per rank) into one, each keeping its own processes", 94,
                                   [](CLI::App& cmd) -> CommandRunner {
                                     auto a = std::make_shared<MergeTracesArgs>();
                                     cmd.add_option("OUT", a->out, "The merged trace (.json)")->required();
                                     cmd.add_option("INPUTS", a->inputs, "Chrome traces to merge")->required();
                                     return [a] { return merge_traces_command(*a); };
                                   }};

}  // namespace
}  // namespace ms::cli
