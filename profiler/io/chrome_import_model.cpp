// Our own "modescope" section, flow binding and the final model.
#include <algorithm>

#include "profiler/io/chrome_import_internal.h"

namespace ms::prof {

using json = nlohmann::json;

namespace {

Status section_error(const std::string& where, const std::string& what) {
  return invalid_model("modescope." + where + ": " + what);
}

bool get_u64(const json& v, uint64_t& out) {
  if (!v.is_number_unsigned()) return false;
  out = v.get<uint64_t>();
  return true;
}

bool get_i64(const json& v, int64_t& out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
  out = v.get<int64_t>();
  return true;
}

bool get_double(const json& v, double& out) {
  if (!v.is_number()) return false;
  out = v.get<double>();
  return true;
}

// The trace-wide fields of the section: foreign, dropped_events and metadata.
Status read_trace_fields(const json& m, TraceBuilder& b) {
  if (auto f = m.find("foreign"); f != m.end()) {
    if (!f->is_boolean()) return section_error("foreign", "must be true or false");
    b.set_foreign(f->get<bool>());
  }
  if (auto d = m.find("dropped_events"); d != m.end()) {
    uint64_t n = 0;
    if (!get_u64(*d, n)) return section_error("dropped_events", "must be a non-negative integer");
    b.set_dropped(n);
  }
  if (auto md = m.find("metadata"); md != m.end()) {
    if (!md->is_object()) return section_error("metadata", "must be an object");
    for (const auto& [k, v] : md->items()) {
      if (!v.is_string()) return section_error("metadata." + k, "must be a string, got " + std::string(v.type_name()));
      b.set_meta(k, v.get<std::string>());
    }
  }
  return Status::ok();
}

// One element of "tracks" (w: its place, for errors).
Status parse_track(const json& t, const std::string& w, Track& track) {
  if (!t.is_object()) return section_error(w, "must be an object");
  if (!t.contains("kind") || !t["kind"].is_string() || !parse_track_kind(t["kind"].get<std::string>(), track.kind))
    return section_error(w + ".kind", "must be one of host, kernel, gpu, memory, other");
  if (!t.contains("pid") || !get_i64(t["pid"], track.pid)) return section_error(w + ".pid", "must be an integer");
  if (!t.contains("tid") || !get_i64(t["tid"], track.tid)) return section_error(w + ".tid", "must be an integer");
  if (!t.contains("sort_index") || !get_i64(t["sort_index"], track.sort_index))
    return section_error(w + ".sort_index", "must be an integer");
  if (!t.contains("name") || !t["name"].is_string()) return section_error(w + ".name", "must be a string");
  if (!t.contains("process") || !t["process"].is_string()) return section_error(w + ".process", "must be a string");
  track.name = t["name"].get<std::string>();
  track.process_name = t["process"].get<std::string>();
  return Status::ok();
}

// One element of "nodes" (w: its place, for errors).
Status parse_node(const json& n, const std::string& w, NodeInfo& info) {
  if (!n.is_object()) return section_error(w, "must be an object");
  if (!n.contains("id") || !get_u64(n["id"], info.id) || info.id == 0)
    return section_error(w + ".id", "must be a positive integer");
  for (const char* k : {"name", "op", "shapes"})
    if (!n.contains(k) || !n[k].is_string()) return section_error(w + "." + k, "must be a string");
  info.name = n["name"].get<std::string>();
  info.op = n["op"].get<std::string>();
  info.shapes = n["shapes"].get<std::string>();
  if (!n.contains("flops") || !get_double(n["flops"], info.flops))
    return section_error(w + ".flops", "must be a number");
  if (!n.contains("bytes") || !get_double(n["bytes"], info.bytes))
    return section_error(w + ".bytes", "must be a number");
  if (!n.contains("origins") || !n["origins"].is_array()) return section_error(w + ".origins", "must be an array");
  for (const json& o : n["origins"]) {
    uint64_t v = 0;
    if (!get_u64(o, v)) return section_error(w + ".origins", "must hold non-negative integers");
    info.origins.push_back(v);
  }
  return Status::ok();
}

// One element of "blocks" (w: its place, for errors), all but its value (a[2], a string once this
// succeeds), which the caller interns.
Status parse_block(const json& a, const std::string& w, MemoryBlock& blk) {
  if (!a.is_array() || a.size() != 8)
    return section_error(w, "must be [address, bytes, value, producer, alloc_ns, free_ns, iteration, arena]");
  int64_t it = 0, arena = 0;
  if (!get_u64(a[0], blk.address)) return section_error(w + "[0]", "address must be a non-negative integer");
  if (!get_u64(a[1], blk.bytes)) return section_error(w + "[1]", "bytes must be a non-negative integer");
  if (!a[2].is_string()) return section_error(w + "[2]", "value must be a string");
  if (!get_u64(a[3], blk.producer)) return section_error(w + "[3]", "producer must be a non-negative integer");
  if (!get_i64(a[4], blk.alloc_ns)) return section_error(w + "[4]", "alloc_ns must be an integer");
  if (!get_i64(a[5], blk.free_ns)) return section_error(w + "[5]", "free_ns must be an integer");
  if (blk.free_ns >= 0 && blk.free_ns < blk.alloc_ns) return section_error(w + "[5]", "freed before allocated");
  if (!get_i64(a[6], it) || it < INT32_MIN || it > INT32_MAX)
    return section_error(w + "[6]", "iteration must be a 32-bit integer");
  if (!get_i64(a[7], arena) || (arena != 0 && arena != 1)) return section_error(w + "[7]", "arena must be 0 or 1");
  blk.iteration = static_cast<int32_t>(it);
  blk.arena = arena == 1;
  return Status::ok();
}

}  // namespace

Status EventReader::modescope(const json& m) {
  if (index_ > 0) return section_error("version", "the modescope section must come before traceEvents");
  auto ver = m.find("version");
  if (ver == m.end() || !ver->is_number_integer()) return section_error("version", "missing or not an integer");
  if (ver->get<int64_t>() != 1) return section_error("version", "unsupported version " + ver->dump());
  own_ = true;
  MS_RETURN_IF_ERROR(read_trace_fields(m, b_));
  if (auto tr = m.find("tracks"); tr != m.end()) {
    if (!tr->is_array()) return section_error("tracks", "must be an array");
    for (size_t i = 0; i < tr->size(); ++i) {
      const std::string w = "tracks[" + std::to_string(i) + "]";
      Track track;
      MS_RETURN_IF_ERROR(parse_track((*tr)[i], w, track));
      if (tracks_.count({track.pid, track.tid})) return section_error(w, "duplicate pid/tid");
      const auto key = std::make_pair(track.pid, track.tid);
      tracks_[key] = b_.add_track(std::move(track));
      gpu_track_.push_back(0);
    }
  }
  if (auto ns = m.find("nodes"); ns != m.end()) {
    if (!ns->is_array()) return section_error("nodes", "must be an array");
    for (size_t i = 0; i < ns->size(); ++i) {
      const std::string w = "nodes[" + std::to_string(i) + "]";
      NodeInfo info;
      MS_RETURN_IF_ERROR(parse_node((*ns)[i], w, info));
      if (b_.node_index(info.id) >= 0) return section_error(w + ".id", "duplicate node id " + std::to_string(info.id));
      b_.add_node(std::move(info));
    }
  }
  if (auto bs = m.find("blocks"); bs != m.end()) {
    if (!bs->is_array()) return section_error("blocks", "must be an array");
    for (size_t i = 0; i < bs->size(); ++i) {
      const std::string w = "blocks[" + std::to_string(i) + "]";
      MemoryBlock blk;
      MS_RETURN_IF_ERROR(parse_block((*bs)[i], w, blk));
      blk.value = b_.intern((*bs)[i][2].get<std::string>());
      b_.add_block(blk);
    }
  }
  return Status::ok();
}

void EventReader::resolve_flows(std::vector<std::string>& warnings) {
  const Trace& t = b_.raw();
  // Per track, event indices sorted by start (longest first on ties) for binding by time.
  std::vector<std::vector<uint32_t>> by_track(t.tracks.size());
  for (uint32_t i = 0; i < t.events.size(); ++i) by_track[t.events[i].track].push_back(i);
  for (auto& v : by_track)
    std::stable_sort(v.begin(), v.end(), [&](uint32_t x, uint32_t y) { return t.events[x].ts_ns < t.events[y].ts_ns; });
  auto bind = [&](const PendingFlow& f) -> int64_t {
    if (f.event >= 0) return f.event < static_cast<int64_t>(t.events.size()) ? f.event : -1;
    const auto& v = by_track[f.track];
    auto it =
        std::upper_bound(v.begin(), v.end(), f.ts, [&](int64_t ts, uint32_t i) { return ts < t.events[i].ts_ns; });
    if (f.bind_enclosing) {
      // Deepest slice open at ts: the latest-starting one that still covers it.
      for (auto r = it; r != v.begin();) {
        --r;
        const Event& e = t.events[*r];
        if (e.ts_ns <= f.ts && f.ts <= e.end_ns()) return *r;
        if (f.ts - e.ts_ns > 60'000'000'000) break;  // do not scan a whole long track
      }
      return -1;
    }
    return it == v.end() ? -1 : static_cast<int64_t>(*it);  // next slice to start
  };
  size_t unpaired = 0, unbound = 0;
  for (const auto& [id, ends] : flows_) {
    if (!ends.first.have || !ends.second.have) {
      ++unpaired;
      continue;
    }
    const int64_t from = bind(ends.first), to = bind(ends.second);
    if (from < 0 || to < 0) {
      ++unbound;
      continue;
    }
    b_.add_flow(id, static_cast<uint32_t>(from), static_cast<uint32_t>(to));
  }
  if (unpaired)
    warnings.push_back(std::to_string(unpaired) + " flow(s) without both a start and a finish were left out");
  if (unbound) warnings.push_back(std::to_string(unbound) + " flow(s) that point at no slice were left out");
}

Expected<TracePtr> EventReader::finish(std::vector<std::string>& warnings) {
  Trace& t = b_.raw();
  if (!own_) {
    b_.set_foreign(true);
    for (auto& [key, idx] : tracks_) {
      Track& tr = t.tracks[idx];
      auto pn = process_names_.find(key.first);
      if (pn != process_names_.end()) tr.process_name = pn->second;
      auto tn = thread_names_.find(key);
      if (tn != thread_names_.end()) tr.name = tn->second;
      auto so = thread_sort_.find(key);
      if (so != thread_sort_.end()) tr.sort_index = so->second;
      // String ids ("CPU functions") name their process or thread when no metadata does.
      if (tr.process_name.empty() && id_names_.count(key.first)) tr.process_name = id_names_[key.first];
      if (tn == thread_names_.end() && id_names_.count(key.second)) tr.name = id_names_[key.second];
      tr.kind = gpu_track_[idx] ? TrackKind::GpuStream : TrackKind::HostThread;
    }
    // Tracks that only hold counters are memory-like.
    std::vector<char> has_slice(t.tracks.size(), 0);
    for (const Event& e : t.events) has_slice[e.track] = 1;
    for (size_t i = 0; i < t.tracks.size(); ++i)
      if (!has_slice[i]) t.tracks[i].kind = TrackKind::Memory;
  }
  size_t unclosed = 0;
  for (const auto& [key, stack] : open_) unclosed += stack.size();
  if (unclosed) warnings.push_back(std::to_string(unclosed) + " 'B' event(s) without an 'E' were left out");
  for (const auto& [ph, n] : skipped_)
    warnings.push_back("skipped " + std::to_string(n) + " event(s) of phase '" + ph + "'");
  resolve_flows(warnings);
  for (const Event& e : t.events)
    if (e.node >= 0 && static_cast<size_t>(e.node) >= t.nodes.size())
      return internal_error("event names an unknown node");
  return b_.finish();
}

}  // namespace ms::prof
