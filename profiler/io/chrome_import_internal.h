// Turns one parsed Chrome trace event (or the "modescope" section) into the model, validating as it
// goes; errors name the event index and field.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/io/chrome_trace.h"

namespace ms::prof {

class EventReader {
 public:
  explicit EventReader(const ImportOptions& o) : options_(o) {}
  Status event(const nlohmann::json& e);      // one element of traceEvents
  Status modescope(const nlohmann::json& m);  // our own section
  size_t index() const { return index_; }     // events read so far
  Expected<TracePtr> finish(std::vector<std::string>& warnings);

 private:
  struct PendingFlow {
    int64_t ts = 0;
    uint32_t track = 0;
    int64_t event = -1;  // explicit event index (own traces)
    bool bind_enclosing = true;
    bool have = false;
  };
  struct OpenSlice {
    int64_t ts;
    std::string name, cat;
    std::string args;
  };
  std::string where() const;
  Status fail(const std::string& what) const;
  Expected<int64_t> id_field(const nlohmann::json& e, const char* key, bool required);
  Expected<int64_t> time_field(const nlohmann::json& e, const char* key, bool required, int64_t fallback = 0);
  Expected<std::string> string_field(const nlohmann::json& e, const char* key, bool required);
  uint32_t track_for(int64_t pid, int64_t tid);
  Status add_slice(const nlohmann::json& e, uint32_t track, int64_t ts, int64_t dur);
  Status add_counter(const nlohmann::json& e);
  Status add_flow_end(const nlohmann::json& e, const std::string& ph);
  Status metadata_event(const nlohmann::json& e);
  void resolve_flows(std::vector<std::string>& warnings);

  const ImportOptions& options_;
  TraceBuilder b_;
  size_t index_ = 0;
  bool own_ = false;  // the "modescope" section was seen: args carry our fields
  std::map<std::pair<int64_t, int64_t>, uint32_t> tracks_;
  std::unordered_map<std::string, int64_t> string_ids_;  // string pid/tid/flow ids -> numbers
  std::unordered_map<int64_t, std::string> id_names_;    // and back (names for string pids/tids)
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names_;
  std::map<int64_t, std::string> process_names_;
  std::map<std::pair<int64_t, int64_t>, int64_t> thread_sort_;
  std::map<std::pair<int64_t, int64_t>, std::vector<OpenSlice>> open_;  // B/E stacks per thread
  std::map<uint64_t, std::pair<PendingFlow, PendingFlow>> flows_;
  std::map<std::string, size_t> skipped_;  // phase -> count
  std::vector<char> gpu_track_;            // per track: saw GPU activity categories
};

}  // namespace ms::prof
