// The GPU side of recording, as an interface: the CUDA backend implements it with the CUPTI
// activity API (this header has no CUDA dependency, so the profiler builds everywhere).
//
// Records arrive in buffers CUPTI hands back asynchronously; an implementation must return from
// the buffer callback fast, count dropped records, and keep GPU timestamps in GPU clock ticks until
// calibration maps them onto the host clock the Recorder uses. Correlation ids join a runtime API
// call (cudaLaunchKernel, cudaMemcpyAsync, made while a node's op is open on the host) with the GPU
// activity it caused; the external correlation id pushed while an op is open (its NodeId) names
// the node of every record that carries that correlation id.
//
// The CUPTI implementation lives in cupti_activity.{h,cpp} (built with the CUDA toolkit only);
// create_cupti_collector() is declared here so callers build everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "profiler/trace/trace.h"

namespace ms::prof {

struct GpuKernelRecord {
  uint32_t correlation = 0;
  uint32_t device = 0, context = 0, stream = 0;
  uint64_t start_gpu = 0, end_gpu = 0;  // GPU clock (ns)
  std::string name;                     // demangled kernel name
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
  uint64_t node = 0;  // external correlation: NodeId of the op that launched it (0: none)
};

enum class MemcpyKind : uint8_t { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost, PeerToPeer, Other };

struct GpuMemcpyRecord {
  uint32_t correlation = 0;
  uint32_t device = 0, stream = 0;
  uint64_t start_gpu = 0, end_gpu = 0;
  uint64_t bytes = 0;
  MemcpyKind kind = MemcpyKind::Other;
  uint64_t node = 0;
};

struct GpuMemsetRecord {
  uint32_t correlation = 0;
  uint32_t device = 0, stream = 0;
  uint64_t start_gpu = 0, end_gpu = 0;
  uint64_t bytes = 0;
  uint32_t value = 0;
  uint64_t node = 0;
};

// The host waiting on the GPU (cudaStreamSynchronize, cudaEventSynchronize, ...), host clock (ns).
struct GpuSyncRecord {
  uint32_t correlation = 0;
  uint32_t stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  std::string name;  // "stream synchronize", "event synchronize", ...
  uint64_t node = 0;
};

// A CUDA runtime/driver call on a host thread (host clock, ns).
struct RuntimeApiRecord {
  uint32_t correlation = 0;
  uint32_t thread = 0;
  int64_t start_ns = 0, end_ns = 0;
  std::string name;   // "cudaLaunchKernel"
  uint64_t node = 0;  // NodeId whose op was open on that thread when the call was made (0: none)
};

// GPU clock -> host clock: host_ns = host_ref_ns + (gpu_ns - gpu_ref) * scale, from paired readings
// taken at start and end of collection. Anchored at a reference pair because CUPTI timestamps are
// ~1e18 ns: multiplying the absolute value in double precision would lose hundreds of ns.
struct ClockCalibration {
  int64_t host_ref_ns = 0;
  uint64_t gpu_ref = 0;
  double scale = 1.0;
  int64_t to_host(uint64_t gpu_ns) const {
    const int64_t d = static_cast<int64_t>(gpu_ns - gpu_ref);  // two's complement: earlier ticks go negative
    return host_ref_ns + (scale == 1.0 ? d : static_cast<int64_t>(static_cast<double>(d) * scale));
  }
  // From two (host, gpu) pairs; with one pair (or equal gpu readings) scale stays 1.
  static ClockCalibration from_pairs(int64_t host0, uint64_t gpu0, int64_t host1, uint64_t gpu1);
};

struct GpuActivity {
  std::vector<GpuKernelRecord> kernels;
  std::vector<GpuMemcpyRecord> memcpys;
  std::vector<GpuMemsetRecord> memsets;
  std::vector<RuntimeApiRecord> api_calls;
  std::vector<GpuSyncRecord> syncs;
  ClockCalibration clock;
  uint64_t dropped_records = 0;
};

class CuptiCollector {
 public:
  virtual ~CuptiCollector() = default;
  // Enables the activity kinds and takes the first clock pair. Errors name the CUPTI call.
  virtual Status start() = 0;
  // Flushes CUPTI buffers, takes the second clock pair and hands over everything collected.
  virtual Expected<GpuActivity> stop() = 0;
  virtual bool active() const = 0;
  // External correlation: while pushed, GPU work launched from this thread carries `id` (a NodeId).
  // Called around every op on the hot path, so cheap; pushes and pops nest per thread.
  virtual void push_external(uint64_t /*id*/) {}
  virtual void pop_external() {}
};

// The CUPTI activity collector. Unsupported ("built without CUDA") when the toolkit was not found
// at build time; a missing device or driver is reported by start(), not here.
Expected<std::unique_ptr<CuptiCollector>> create_cupti_collector();

// Adds GPU stream tracks, kernel/memcpy/memset events (host clock) and flows from each runtime API
// call's event to the activity with its correlation id. `host_track` is the track of the API calls
// and synchronizations. GPU events name their node through the launching call or their own `node`;
// kernel events carry their launch configuration in `impl` ("grid 256x1x1 block 128x1x1 ...").
void merge_gpu_activity(TraceBuilder& b, const GpuActivity& a, uint32_t host_track);

}  // namespace ms::prof
