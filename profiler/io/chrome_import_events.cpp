#include <algorithm>
#include <cmath>

#include "profiler/io/chrome_import_internal.h"

namespace ms::prof {

using json = nlohmann::json;

namespace {

// Chrome timestamps are microseconds; the model keeps int64 nanoseconds (±292 years).
constexpr double kMaxUs = 9.2e15;

const char* type_of(const json& v) { return v.type_name(); }

bool is_gpu_category(const std::string& cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" ||
         cat == "Memset" || cat == "gpu_kernel";
}

}  // namespace

std::string EventReader::where() const { return "traceEvents[" + std::to_string(index_) + "]"; }

Status EventReader::fail(const std::string& what) const { return invalid_model(where() + ": " + what); }

Expected<int64_t> EventReader::id_field(const json& e, const char* key, bool required) {
  auto it = e.find(key);
  if (it == e.end()) {
    if (required) return fail("missing '" + std::string(key) + "'");
    return int64_t{0};
  }
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return fail("'" + std::string(key) + "' = " + it->dump() + " is out of range");
    return it->get<int64_t>();
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!(std::fabs(d) < 9.0e18) || d != std::floor(d))
      return fail("'" + std::string(key) + "' = " + it->dump() + " is not an integer id");
    return static_cast<int64_t>(d);
  }
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    auto [pos, added] = string_ids_.emplace(s, static_cast<int64_t>(1000000000 + string_ids_.size()));
    if (added) id_names_[pos->second] = s;
    return pos->second;
  }
  return fail("'" + std::string(key) + "' must be a number or a string, got " + type_of(*it));
}

Expected<int64_t> EventReader::time_field(const json& e, const char* key, bool required, int64_t fallback) {
  auto it = e.find(key);
  if (it == e.end()) {
    if (required) return fail("missing '" + std::string(key) + "'");
    return fallback;
  }
  double us;
  if (it->is_number()) {
    us = it->get<double>();
  } else if (it->is_string()) {  // some producers quote timestamps
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    us = std::strtod(s.c_str(), &end);
    if (s.empty() || !end || *end)
      return fail("'" + std::string(key) + "' must be a number, got string \"" + s.substr(0, 40) + "\"");
  } else {
    return fail("'" + std::string(key) + "' must be a number, got " + type_of(*it));
  }
  if (!std::isfinite(us) || std::fabs(us) > kMaxUs)
    return fail("'" + std::string(key) + "' = " + it->dump() + " is out of range (|t| <= 9.2e15 us)");
  // Whole and fractional microseconds apart: epoch-based timestamps (~1.7e15 us) times 1000 would
  // lose the nanoseconds in a double.
  const double whole = std::floor(us);
  return static_cast<int64_t>(whole) * 1000 + static_cast<int64_t>(std::llround((us - whole) * 1000.0));
}

Expected<std::string> EventReader::string_field(const json& e, const char* key, bool required) {
  auto it = e.find(key);
  if (it == e.end() || it->is_null()) {
    if (required) return fail("missing '" + std::string(key) + "'");
    return std::string();
  }
  if (!it->is_string()) return fail("'" + std::string(key) + "' must be a string, got " + type_of(*it));
  return it->get<std::string>();
}

uint32_t EventReader::track_for(int64_t pid, int64_t tid) {
  auto it = tracks_.find({pid, tid});
  if (it != tracks_.end()) return it->second;
  Track t;
  t.kind = TrackKind::Other;
  t.pid = pid;
  t.tid = tid;
  t.name = "thread " + std::to_string(tid);
  t.sort_index = static_cast<int64_t>(tracks_.size());
  const uint32_t id = b_.add_track(std::move(t));
  tracks_[{pid, tid}] = id;
  gpu_track_.push_back(0);
  return id;
}

Status EventReader::event(const json& e) {
  if (index_ >= options_.max_events)
    return fail("more events than the limit of " + std::to_string(options_.max_events));
  Status st = [&]() -> Status {
    MS_ASSIGN_OR_RETURN(auto ph, string_field(e, "ph", true));
    const std::string& p = ph;
    if (p == "M") return metadata_event(e);
    if (p == "C") return add_counter(e);
    if (p == "s" || p == "t" || p == "f") return add_flow_end(e, p);
    if (p != "X" && p != "B" && p != "E" && p != "i" && p != "I" && p != "R") {
      ++skipped_[p];
      return Status::ok();
    }
    MS_ASSIGN_OR_RETURN(auto pid, id_field(e, "pid", true));
    MS_ASSIGN_OR_RETURN(auto tid, id_field(e, "tid", true));
    MS_ASSIGN_OR_RETURN(auto ts, time_field(e, "ts", true));
    const uint32_t track = track_for(pid, tid);
    if (p == "X") {
      MS_ASSIGN_OR_RETURN(auto dur, time_field(e, "dur", true));
      if (dur < 0) return fail("'dur' is negative (" + e["dur"].dump() + ")");
      return add_slice(e, track, ts, dur);
    }
    if (p == "B") {
      MS_ASSIGN_OR_RETURN(auto name, string_field(e, "name", true));
      MS_ASSIGN_OR_RETURN(auto cat, string_field(e, "cat", false));
      auto a = e.find("args");
      open_[{pid, tid}].push_back({ts, name, cat, a == e.end() ? std::string() : a->dump()});
      return Status::ok();
    }
    if (p == "E") {
      auto& stack = open_[{pid, tid}];
      if (stack.empty())
        return fail("'E' event without a matching 'B' on pid " + std::to_string(pid) + " tid " + std::to_string(tid));
      OpenSlice s = std::move(stack.back());
      stack.pop_back();
      if (ts < s.ts) return fail("'E' at " + e["ts"].dump() + " us ends before its 'B'");
      json synthetic = {{"name", s.name}, {"cat", s.cat}};
      if (!s.args.empty()) synthetic["args"] = json::parse(s.args);
      return add_slice(synthetic, track, s.ts, ts - s.ts);
    }
    return add_slice(e, track, ts, 0);  // instant
  }();
  ++index_;
  return st;
}

Status EventReader::add_slice(const json& e, uint32_t track, int64_t ts, int64_t dur) {
  MS_ASSIGN_OR_RETURN(auto name, string_field(e, "name", true));
  MS_ASSIGN_OR_RETURN(auto cat, string_field(e, "cat", false));
  Event ev;
  ev.ts_ns = ts;
  ev.dur_ns = dur;
  ev.track = track;
  ev.kind = EventKind::Foreign;
  ev.name = b_.intern(name);
  ev.category = b_.intern(cat);
  if (is_gpu_category(cat)) gpu_track_[track] = 1;
  auto a = e.find("args");
  if (a != e.end() && !a->is_object()) return fail("'args' must be an object, got " + std::string(type_of(*a)));
  const bool ours =
      own_ && a != e.end() && a->contains("kind") && (*a)["kind"].is_string() && (*a)["kind"] != "foreign";
  const bool ours_foreign = own_ && a != e.end() && a->contains("kind") && (*a)["kind"] == "foreign";
  if (ours || ours_foreign) {
    const std::string kind = (*a)["kind"].get<std::string>();
    if (kind == "op")
      ev.kind = EventKind::Op;
    else if (kind == "kernel")
      ev.kind = EventKind::Kernel;
    else if (kind == "run")
      ev.kind = EventKind::Run;
    else if (kind == "foreign")
      ev.kind = EventKind::Foreign;
    else
      return fail("args.kind '" + kind + "' is not op, kernel, run or foreign");
    if (a->contains("iteration")) {
      const json& it = (*a)["iteration"];
      if (!it.is_number_integer() || it.get<int64_t>() < INT32_MIN || it.get<int64_t>() > INT32_MAX)
        return fail("args.iteration must be a 32-bit integer, got " + it.dump().substr(0, 40));
      ev.iteration = it.get<int32_t>();
    }
    if (a->contains("node_id")) {
      const json& id = (*a)["node_id"];
      if (!id.is_number_unsigned())
        return fail("args.node_id must be a non-negative integer, got " + id.dump().substr(0, 40));
      ev.node = b_.node_index(id.get<uint64_t>());
      if (ev.node < 0) return fail("args.node_id " + id.dump() + " is not in modescope.nodes");
    }
    if (a->contains("impl")) {
      if (!(*a)["impl"].is_string()) return fail("args.impl must be a string");
      ev.impl = b_.intern((*a)["impl"].get<std::string>());
    }
  } else if (a != e.end()) {
    ev.args = b_.intern(a->dump());
  }
  b_.add_event(ev);
  return Status::ok();
}

Status EventReader::add_counter(const json& e) {
  MS_ASSIGN_OR_RETURN(auto name, string_field(e, "name", true));
  MS_ASSIGN_OR_RETURN(auto pid, id_field(e, "pid", true));
  MS_ASSIGN_OR_RETURN(auto tid, id_field(e, "tid", false));
  MS_ASSIGN_OR_RETURN(auto ts, time_field(e, "ts", true));
  auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return fail("counter '" + name + "' needs an 'args' object of numbers");
  const uint32_t track = track_for(pid, tid);
  for (const auto& [k, v] : a->items()) {
    if (!v.is_number()) return fail("counter '" + name + "': args." + k + " must be a number, got " + type_of(v));
    const std::string series = a->size() == 1 ? name : name + "." + k;
    b_.add_counter({track, b_.intern(series), ts, v.get<double>()});
  }
  return Status::ok();
}

Status EventReader::add_flow_end(const json& e, const std::string& ph) {
  if (ph == "t") {  // steps add nothing to a two-ended arrow
    ++skipped_["t"];
    return Status::ok();
  }
  MS_ASSIGN_OR_RETURN(auto pid, id_field(e, "pid", true));
  MS_ASSIGN_OR_RETURN(auto tid, id_field(e, "tid", true));
  MS_ASSIGN_OR_RETURN(auto ts, time_field(e, "ts", true));
  MS_ASSIGN_OR_RETURN(auto id, id_field(e, "id", true));
  PendingFlow f;
  f.ts = ts;
  f.track = track_for(pid, tid);
  f.have = true;
  f.bind_enclosing = ph == "s" || (e.contains("bp") && e["bp"] == "e");
  if (own_) {
    auto a = e.find("args");
    if (a != e.end() && a->is_object() && a->contains("event")) {
      if (!(*a)["event"].is_number_unsigned()) return fail("args.event must be a non-negative integer");
      f.event = static_cast<int64_t>((*a)["event"].get<uint64_t>());
    }
  }
  auto& slot = flows_[static_cast<uint64_t>(id)];
  (ph == "s" ? slot.first : slot.second) = f;
  return Status::ok();
}

Status EventReader::metadata_event(const json& e) {
  MS_ASSIGN_OR_RETURN(auto name, string_field(e, "name", true));
  MS_ASSIGN_OR_RETURN(auto pid, id_field(e, "pid", true));
  MS_ASSIGN_OR_RETURN(auto tid, id_field(e, "tid", false));
  auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return fail("metadata '" + name + "' needs an 'args' object");
  if (name == "process_name" || name == "thread_name") {
    auto n = string_field(*a, "name", true);
    if (!n) return fail("metadata '" + name + "': args.name must be a string");
    if (name == "process_name")
      process_names_[pid] = *n;
    else
      thread_names_[{pid, tid}] = *n;
  } else if (name == "thread_sort_index") {
    auto it = a->find("sort_index");
    if (it == a->end() || !it->is_number_integer())
      return fail("metadata 'thread_sort_index' needs an integer args.sort_index");
    thread_sort_[{pid, tid}] = it->get<int64_t>();
  }
  return Status::ok();
}

}  // namespace ms::prof
