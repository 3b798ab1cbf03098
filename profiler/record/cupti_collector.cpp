// CUDA-free half of GPU recording: clock calibration and merging collected activity into a trace.
#include "profiler/record/cupti_collector.h"

#include <cstdio>
#include <map>
#include <unordered_map>

namespace ms::prof {

#if !MODESCOPE_HAVE_CUDA
Expected<std::unique_ptr<CuptiCollector>> create_cupti_collector() {
  return unsupported("CUPTI collector: built without CUDA (no CUDA toolkit was found at configure time)");
}
#endif

namespace {

std::string launch_config(const GpuKernelRecord& k) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "grid %ux%ux%u block %ux%ux%u regs %u smem %u+%u B", k.grid[0], k.grid[1], k.grid[2],
                k.block[0], k.block[1], k.block[2], k.registers_per_thread, k.static_shared_bytes,
                k.dynamic_shared_bytes);
  return buf;
}

}  // namespace

ClockCalibration ClockCalibration::from_pairs(int64_t host0, uint64_t gpu0, int64_t host1, uint64_t gpu1) {
  ClockCalibration c;
  if (gpu1 > gpu0 && host1 > host0) c.scale = static_cast<double>(host1 - host0) / static_cast<double>(gpu1 - gpu0);
  c.host_ref_ns = host0;
  c.gpu_ref = gpu0;
  return c;
}

void merge_gpu_activity(TraceBuilder& b, const GpuActivity& a, uint32_t host_track) {
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> stream_track;  // (device, stream) -> track
  auto track_for = [&](uint32_t device, uint32_t stream) {
    auto it = stream_track.find({device, stream});
    if (it != stream_track.end()) return it->second;
    Track t;
    t.kind = TrackKind::GpuStream;
    t.pid = 2 + device;
    t.tid = stream;
    t.process_name = "GPU " + std::to_string(device);
    t.name = "stream " + std::to_string(stream);
    t.sort_index = 2000 + static_cast<int64_t>(stream);
    const uint32_t id = b.add_track(std::move(t));
    stream_track[{device, stream}] = id;
    return id;
  };
  std::unordered_map<uint32_t, uint32_t> api_event;  // correlation -> event index
  const StrId cat_api = b.intern("cuda_runtime"), cat_kernel = b.intern("gpu_kernel"),
              cat_memcpy = b.intern("gpu_memcpy"), cat_memset = b.intern("gpu_memset");
  // A host-side CUDA call (runtime API or synchronisation) on the host track.
  auto host_event = [&](const auto& r, StrId category) {
    Event e;
    e.ts_ns = r.start_ns;
    e.dur_ns = r.end_ns - r.start_ns;
    e.track = host_track;
    e.kind = EventKind::Foreign;
    e.name = b.intern(r.name);
    e.category = category;
    e.node = r.node ? b.node_index(r.node) : -1;
    return b.add_event(e);
  };
  for (const auto& r : a.api_calls) api_event[r.correlation] = host_event(r, cat_api);
  const StrId cat_sync = b.intern("cuda_sync");
  for (const auto& r : a.syncs) host_event(r, cat_sync);
  auto add = [&](uint32_t corr, uint64_t node, uint32_t device, uint32_t stream, uint64_t s, uint64_t f,
                 std::string_view name, StrId cat, std::string_view impl) {
    Event e;
    e.ts_ns = a.clock.to_host(s);
    e.dur_ns = a.clock.to_host(f) - e.ts_ns;
    e.track = track_for(device, stream);
    e.kind = EventKind::Kernel;
    e.name = b.intern(name);
    e.category = cat;
    e.impl = impl.empty() ? 0 : b.intern(impl);
    auto it = api_event.find(corr);
    if (it != api_event.end()) e.node = b.raw().events[it->second].node;
    if (e.node < 0 && node) e.node = b.node_index(node);  // no launch record: the external id still names it
    const uint32_t idx = b.add_event(e);
    if (it != api_event.end()) b.add_flow(0x100000000ull + corr, it->second, idx);
  };
  for (const auto& k : a.kernels)
    add(k.correlation, k.node, k.device, k.stream, k.start_gpu, k.end_gpu, k.name, cat_kernel, launch_config(k));
  for (const auto& m : a.memcpys)
    add(m.correlation, m.node, m.device, m.stream, m.start_gpu, m.end_gpu, "memcpy " + std::to_string(m.bytes) + " B",
        cat_memcpy, {});
  for (const auto& m : a.memsets)
    add(m.correlation, m.node, m.device, m.stream, m.start_gpu, m.end_gpu, "memset " + std::to_string(m.bytes) + " B",
        cat_memset, {});
  if (a.dropped_records) b.set_meta("gpu_dropped_records", std::to_string(a.dropped_records));
}

}  // namespace ms::prof
