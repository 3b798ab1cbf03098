// Trace -> Chrome trace event JSON, written by hand (deterministic, fast, one pass).
#include <ostream>
#include <sstream>

#include "engine/core/atomic_file.h"
#include "profiler/io/chrome_trace.h"
#include "profiler/io/json_text.h"

namespace ms::prof {

using namespace json_text;

namespace {

void put_track_ids(std::string& o, const Track& tr) {
  o += ",\"pid\":";
  put_int(o, tr.pid);
  o += ",\"tid\":";
  put_int(o, tr.tid);
}

void put_metadata_events(std::string& o, const Trace& t, bool& first) {
  auto sep = [&] {
    o += first ? "\n" : ",\n";
    first = false;
  };
  std::vector<int64_t> pids_done;
  for (const Track& tr : t.tracks) {
    bool seen = false;
    for (int64_t p : pids_done) seen |= p == tr.pid;
    if (!seen) {
      pids_done.push_back(tr.pid);
      sep();
      o += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
      put_int(o, tr.pid);
      o += ",\"tid\":0,\"args\":{\"name\":";
      put_string(o, tr.process_name);
      o += "}}";
      sep();
      o += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":";
      put_int(o, tr.pid);
      o += ",\"tid\":0,\"args\":{\"sort_index\":";
      put_int(o, tr.pid);
      o += "}}";
    }
    if (tr.kind == TrackKind::Memory) continue;  // counters live on the process
    sep();
    o += "{\"ph\":\"M\",\"name\":\"thread_name\"";
    put_track_ids(o, tr);
    o += ",\"args\":{\"name\":";
    put_string(o, tr.name);
    o += "}}";
    sep();
    o += "{\"ph\":\"M\",\"name\":\"thread_sort_index\"";
    put_track_ids(o, tr);
    o += ",\"args\":{\"sort_index\":";
    put_int(o, tr.sort_index);
    o += "}}";
  }
}

void put_event(std::string& o, const Trace& t, const Event& e) {
  const Track& tr = t.tracks[e.track];
  o += "{\"ph\":\"X\",\"name\":";
  put_string(o, t.str(e.name));
  o += ",\"cat\":";
  put_string(o, t.str(e.category));
  put_track_ids(o, tr);
  o += ",\"ts\":";
  put_us(o, e.ts_ns);
  o += ",\"dur\":";
  put_us(o, e.dur_ns);
  o += ",\"args\":";
  if (e.args) {  // another producer's args, kept verbatim
    o += t.str(e.args);
    o += "}";
    return;
  }
  o += "{\"kind\":\"";
  o += event_kind_name(e.kind);
  o += "\",\"iteration\":";
  put_int(o, e.iteration);
  if (const NodeInfo* n = t.node_of(e)) {
    o += ",\"node_id\":";
    put_uint(o, n->id);
    o += ",\"node\":";
    put_string(o, n->name);
    o += ",\"op\":";
    put_string(o, n->op);
    o += ",\"origins\":[";
    for (size_t i = 0; i < n->origins.size(); ++i) {
      if (i) o.push_back(',');
      put_uint(o, n->origins[i]);
    }
    o += "],\"shapes\":";
    put_string(o, n->shapes);
    o += ",\"flops\":";
    put_double(o, n->flops);
    o += ",\"bytes\":";
    put_double(o, n->bytes);
  }
  if (e.impl) {
    o += ",\"impl\":";
    put_string(o, t.str(e.impl));
  }
  o += "}}";
}

void put_modescope_section(std::string& o, const Trace& t) {
  o += "\"modescope\":{\"version\":1,\"foreign\":";
  o += t.foreign ? "true" : "false";
  o += ",\"dropped_events\":";
  put_uint(o, t.dropped_events);
  o += ",\n\"metadata\":{";
  bool first = true;
  for (const auto& [k, v] : t.metadata) {
    if (!first) o.push_back(',');
    first = false;
    put_string(o, k);
    o.push_back(':');
    put_string(o, v);
  }
  o += "},\n\"tracks\":[";
  for (size_t i = 0; i < t.tracks.size(); ++i) {
    const Track& tr = t.tracks[i];
    o += i ? ",\n" : "\n";
    o += "{\"kind\":\"";
    o += track_kind_name(tr.kind);
    o += "\"";
    put_track_ids(o, tr);
    o += ",\"process\":";
    put_string(o, tr.process_name);
    o += ",\"name\":";
    put_string(o, tr.name);
    o += ",\"sort_index\":";
    put_int(o, tr.sort_index);
    o += "}";
  }
  o += "],\n\"nodes\":[";
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const NodeInfo& n = t.nodes[i];
    o += i ? ",\n" : "\n";
    o += "{\"id\":";
    put_uint(o, n.id);
    o += ",\"name\":";
    put_string(o, n.name);
    o += ",\"op\":";
    put_string(o, n.op);
    o += ",\"origins\":[";
    for (size_t k = 0; k < n.origins.size(); ++k) {
      if (k) o.push_back(',');
      put_uint(o, n.origins[k]);
    }
    o += "],\"shapes\":";
    put_string(o, n.shapes);
    o += ",\"flops\":";
    put_double(o, n.flops);
    o += ",\"bytes\":";
    put_double(o, n.bytes);
    o += "}";
  }
  // Blocks as arrays: [address, bytes, value, producer, alloc_ns, free_ns, iteration, arena].
  o += "],\n\"blocks\":[";
  for (size_t i = 0; i < t.blocks.size(); ++i) {
    const MemoryBlock& b = t.blocks[i];
    o += i ? ",\n[" : "\n[";
    put_uint(o, b.address);
    o.push_back(',');
    put_uint(o, b.bytes);
    o.push_back(',');
    put_string(o, t.str(b.value));
    o.push_back(',');
    put_uint(o, b.producer);
    o.push_back(',');
    put_int(o, b.alloc_ns);
    o.push_back(',');
    put_int(o, b.free_ns);
    o.push_back(',');
    put_int(o, b.iteration);
    o += b.arena ? ",1]" : ",0]";
  }
  o += "]},\n";
}

}  // namespace

Status export_chrome_trace(const Trace& t, std::ostream& out) {
  std::string o;
  o.reserve(1 << 20);
  auto flush = [&](bool force) {
    if (force || o.size() > (1u << 20)) {
      out.write(o.data(), static_cast<std::streamsize>(o.size()));
      o.clear();
    }
  };
  o += "{";
  put_modescope_section(o, t);
  o += "\"displayTimeUnit\":\"ns\",\n\"traceEvents\":[";
  bool first = true;
  put_metadata_events(o, t, first);
  for (const Event& e : t.events) {
    if (e.track >= t.tracks.size()) return internal_error("trace event on unknown track " + std::to_string(e.track));
    o += first ? "\n" : ",\n";
    first = false;
    put_event(o, t, e);
    flush(false);
  }
  for (const CounterSample& c : t.counters) {
    if (c.track >= t.tracks.size()) return internal_error("counter on unknown track " + std::to_string(c.track));
    o += first ? "\n" : ",\n";
    first = false;
    o += "{\"ph\":\"C\",\"name\":";
    put_string(o, t.str(c.name));
    put_track_ids(o, t.tracks[c.track]);
    o += ",\"ts\":";
    put_us(o, c.ts_ns);
    o += ",\"args\":{\"value\":";
    put_double(o, c.value);
    o += "}}";
    flush(false);
  }
  // Flow arrows: start inside the source slice, finish bound to the enclosing slice ("bp":"e").
  for (const Flow& f : t.flows) {
    if (f.from >= t.events.size() || f.to >= t.events.size()) return internal_error("flow to an unknown event");
    for (int end = 0; end < 2; ++end) {
      const uint32_t idx = end ? f.to : f.from;
      const Event& e = t.events[idx];
      o += first ? "\n" : ",\n";
      first = false;
      o += end ? "{\"ph\":\"f\",\"bp\":\"e\"" : "{\"ph\":\"s\"";
      o += ",\"name\":\"launch\",\"cat\":\"flow\",\"id\":";
      put_uint(o, f.id);
      put_track_ids(o, t.tracks[e.track]);
      o += ",\"ts\":";
      put_us(o, e.ts_ns);
      o += ",\"args\":{\"event\":";
      put_uint(o, idx);
      o += "}}";
    }
    flush(false);
  }
  o += "\n]}\n";
  flush(true);
  if (!out) return Status::error(ErrorCode::Internal, "writing the trace failed");
  return Status::ok();
}

Status export_chrome_trace_file(const Trace& t, const std::string& path) {
  AtomicFile f(path);
  Status st = export_chrome_trace(t, f.stream());
  if (!st.is_ok() && f.ok()) return st;
  return f.commit();
}

std::string to_chrome_json(const Trace& t) {
  std::ostringstream s;
  (void)export_chrome_trace(t, s);
  return s.str();
}

}  // namespace ms::prof
