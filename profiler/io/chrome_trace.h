// Chrome trace event JSON (the format Perfetto UI and chrome://tracing open).
//
// Export writes the JSON Object Format: {"modescope": {...}, "traceEvents": [...], "displayTimeUnit":
// "ns"}. The "modescope" section (first, so a streaming reader sees it before the events) holds what
// Chrome's format has no place for: tracks, per-node data, memory blocks, metadata. Events carry the
// figures a Perfetto user wants in their args (node id, origins, op, shapes, FLOPs, bytes, impl).
// Output is deterministic: export -> import -> export gives the same bytes.
//
// Import streams through nlohmann's SAX parser: one event is held as a DOM at a time, so memory stays
// near the size of the resulting model. Files from other producers (PyTorch profiler, Chrome) load
// as foreign traces: X, B/E, i/I, C, s/t/f and M events are understood, other phases are skipped and
// counted in the warnings.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "profiler/trace/trace.h"

namespace ms::prof {

Status export_chrome_trace(const Trace& t, std::ostream& out);
Status export_chrome_trace_file(const Trace& t, const std::string& path);
std::string to_chrome_json(const Trace& t);

struct ImportOptions {
  size_t max_string_bytes = 1u << 20;  // a longer string value is an error naming its field
  uint64_t max_events = 100000000;
};

struct ImportResult {
  TracePtr trace;
  bool truncated = false;             // the file ended early; `trace` holds the whole events before it
  std::vector<std::string> warnings;  // skipped phases, truncation, ...
};

Expected<ImportResult> import_chrome_trace(std::istream& in, const ImportOptions& options = {});
Expected<ImportResult> import_chrome_trace_file(const std::string& path, const ImportOptions& options = {});
Expected<ImportResult> import_chrome_trace_string(const std::string& text, const ImportOptions& options = {});

}  // namespace ms::prof
