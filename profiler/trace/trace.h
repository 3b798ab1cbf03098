// The Trace model: what one profiled run (or an imported file) holds. Tracks (host threads, CPU
// kernel threads, GPU streams, memory), complete events that name their node, counters, flows
// (op -> kernel) and memory blocks. Built once by a TraceBuilder (recorder, importer) and immutable
// afterwards: views share it through TracePtr without copying.
//
// Strings are interned (events hold StrIds) and per-node data (op, origins, shapes, cost) lives once
// in `nodes`, so a million events stay small and cheap to build.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ms::prof {

using StrId = uint32_t;  // index into Trace::strings; 0 is ""

enum class TrackKind : uint8_t { HostThread, KernelThread, GpuStream, Memory, Other };
const char* track_kind_name(TrackKind k);
bool parse_track_kind(std::string_view s, TrackKind& out);

struct Track {
  TrackKind kind = TrackKind::HostThread;
  int64_t pid = 0;  // Chrome-trace process and thread ids
  int64_t tid = 0;
  std::string process_name;
  std::string name;
  int64_t sort_index = 0;
};

// What the model knows about a node, once per node.
struct NodeInfo {
  uint64_t id = 0;  // ir::NodeId value
  std::string name;
  std::string op;                 // op type
  std::vector<uint64_t> origins;  // original nodes it stands for (itself when not fused)
  std::string shapes;             // "f32[1,3,224,224], f32[64,3,7,7] -> f32[1,64,112,112]"
  double flops = 0;               // cost model, per execution
  double bytes = 0;
};

enum class EventKind : uint8_t { Op, Kernel, Run, Foreign };
const char* event_kind_name(EventKind k);

// A complete ("X") event.
struct Event {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  uint32_t track = 0;
  EventKind kind = EventKind::Op;
  int32_t node = -1;  // index into Trace::nodes, -1 for none
  int32_t iteration = 0;
  StrId name = 0;      // op type, run label or foreign name
  StrId category = 0;  // Chrome "cat"
  StrId impl = 0;      // kernel implementation ("onednn:brg:avx512_core")
  StrId args = 0;      // foreign events: their args as compact JSON ("" for none)
  int64_t end_ns() const { return ts_ns + dur_ns; }
};

struct CounterSample {
  uint32_t track = 0;
  StrId name = 0;  // "live bytes", "arena bytes"
  int64_t ts_ns = 0;
  double value = 0;
};

// An arrow from one event to another (op -> kernel, launch -> GPU kernel).
struct Flow {
  uint64_t id = 0;
  uint32_t from = 0;  // event indices
  uint32_t to = 0;
};

struct MemoryBlock {
  uint64_t address = 0;  // arena offset (Graph mode) or address (PyNative)
  uint64_t bytes = 0;
  StrId value = 0;        // value name ("" for scratch)
  uint64_t producer = 0;  // NodeId value of the producing node (0 for none)
  int64_t alloc_ns = 0;
  int64_t free_ns = -1;  // -1: still live at the end of the trace
  int32_t iteration = 0;
  bool arena = false;  // planned arena slot (Graph mode) rather than an allocator block
};

struct Trace {
  std::map<std::string, std::string> metadata;  // mode, device, model, producer, ...
  std::vector<std::string> strings{""};
  std::vector<Track> tracks;
  std::vector<NodeInfo> nodes;
  std::vector<Event> events;            // sorted by (track, ts, -dur)
  std::vector<CounterSample> counters;  // sorted by (track, ts)
  std::vector<Flow> flows;
  std::vector<MemoryBlock> blocks;  // sorted by alloc time
  bool foreign = false;             // imported from another producer
  uint64_t dropped_events = 0;      // recorder ran out of buffer

  std::string_view str(StrId id) const {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view();
  }
  const NodeInfo* node_of(const Event& e) const {
    return e.node >= 0 && static_cast<size_t>(e.node) < nodes.size() ? &nodes[static_cast<size_t>(e.node)] : nullptr;
  }
  std::string meta(const std::string& key, const std::string& fallback = "") const {
    auto it = metadata.find(key);
    return it == metadata.end() ? fallback : it->second;
  }
  double meta_number(const std::string& key, double fallback = 0) const;
  int64_t begin_ns() const;
  int64_t end_ns() const;
};

using TracePtr = std::shared_ptr<const Trace>;

// Builds a Trace; finish() sorts, checks indices and hands out the immutable result.
class TraceBuilder {
 public:
  TraceBuilder();
  StrId intern(std::string_view s);
  uint32_t add_track(Track t);
  // Returns the index of the node (one entry per NodeId; 0 ids are never merged).
  int32_t add_node(NodeInfo n);
  int32_t node_index(uint64_t id) const;
  uint32_t add_event(const Event& e);  // index in insertion order (flows use it)
  void add_counter(const CounterSample& c) { t_->counters.push_back(c); }
  void add_flow(uint64_t id, uint32_t from_event, uint32_t to_event) {
    t_->flows.push_back({id, from_event, to_event});
  }
  void add_block(const MemoryBlock& b) { t_->blocks.push_back(b); }
  void set_meta(const std::string& key, std::string value) { t_->metadata[key] = std::move(value); }
  void set_foreign(bool f) { t_->foreign = f; }
  void set_dropped(uint64_t n) { t_->dropped_events = n; }
  Trace& raw() { return *t_; }
  // Sorts events (remapping flows), counters and blocks.
  TracePtr finish();

 private:
  // Transparent hashing: intern() looks string_views up without building a std::string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::shared_ptr<Trace> t_;
  std::unordered_map<std::string, StrId, Hash, std::equal_to<>> index_;
  std::unordered_map<uint64_t, int32_t> node_index_;
};

}  // namespace ms::prof
