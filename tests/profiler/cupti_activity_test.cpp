// The CUPTI activity parser on buffers of synthetic records (no GPU needed), the merged trace it
// gives, and the collector's behaviour on a machine without a device. Built with the CUDA toolkit.
#if MODESCOPE_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "profiler/io/chrome_trace.h"
#include "profiler/record/cupti_activity.h"
#include "test_util.h"

namespace ms::prof {
namespace {

constexpr uint64_t kGpuBase = 1'796'000'000'000'000'000ull;  // CUPTI timestamps are ~1e18 ns

// Records back to back in an 8-byte aligned buffer, as CUPTI writes them.
class Buffer {
 public:
  template <typename T> void add(const T& r) {
    static_assert(sizeof(T) % 8 == 0);
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &r, sizeof(T));
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

CUpti_ActivityKernel10 kernel(uint32_t corr, uint32_t stream, uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = corr;
  k.deviceId = 0;
  k.streamId = stream;
  k.start = kGpuBase + start;
  k.end = kGpuBase + end;
  k.name = name;
  k.gridX = 4, k.gridY = 2, k.gridZ = 1;
  k.blockX = 128, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  return k;
}

CUpti_ActivityAPI api(uint32_t corr, CUpti_CallbackId cbid, uint64_t start, uint64_t end) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.correlationId = corr;
  a.threadId = 77;
  a.start = kGpuBase + start;
  a.end = kGpuBase + end;
  return a;
}

CUpti_ActivityExternalCorrelation external(uint32_t corr, uint64_t node) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = node;
  e.correlationId = corr;
  return e;
}

// Two kernels of node 42 on stream 7 (launched), one copy of node 43, a memset, a kernel of node 44
// on stream 9 whose launch record is missing, a stream synchronize, a record of a kind we skip.
GpuActivity sample_activity() {
  Buffer b;
  b.add(api(11, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 100, 120));
  b.add(external(11, 42));
  b.add(kernel(11, 7, 300, 450, "_Z10add_kernelPfS_i"));
  b.add(api(12, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 130, 140));
  b.add(external(12, 42));
  b.add(kernel(12, 7, 460, 500, "_Z10add_kernelPfS_i"));
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 4096;
  m.streamId = 7;
  m.correlationId = 13;
  m.start = kGpuBase + 510;
  m.end = kGpuBase + 530;
  b.add(api(13, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 150, 160));
  b.add(external(13, 43));
  b.add(m);
  CUpti_ActivityMemset4 s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 256;
  s.value = 0;
  s.streamId = 7;
  s.correlationId = 14;
  s.start = kGpuBase + 540;
  s.end = kGpuBase + 545;
  b.add(s);
  b.add(external(15, 44));
  b.add(kernel(15, 9, 600, 700, "fused_relu"));
  CUpti_ActivitySynchronization2 y{};
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.correlationId = 16;
  y.streamId = 7;
  y.start = kGpuBase + 710;
  y.end = kGpuBase + 800;
  b.add(y);
  CUpti_ActivityMarker2 skip{};
  skip.kind = CUPTI_ACTIVITY_KIND_MARKER;
  b.add(skip);

  ActivityParser p;
  p.parse_buffer(b.data(), b.size());
  EXPECT_EQ(p.records(), 14u);
  EXPECT_EQ(p.skipped(), 1u);
  // CUPTI's clock sits 1e18 ns away from the host's; host = 10000 at GPU tick kGpuBase.
  return p.finish(ClockCalibration::from_pairs(10000, kGpuBase, 10000, kGpuBase), 3);
}

TEST(CuptiActivity, ParsesEachRecordKindOfABuffer) {
  const GpuActivity a = sample_activity();
  ASSERT_EQ(a.kernels.size(), 3u);
  const GpuKernelRecord& k = a.kernels[0];
  EXPECT_EQ(k.name, "add_kernel(float*, float*, int)");  // demangled
  EXPECT_EQ(k.correlation, 11u);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.node, 42u);
  EXPECT_EQ(k.start_gpu, kGpuBase + 300);  // kernels keep GPU ticks until the merge
  EXPECT_EQ(k.grid[0], 4u);
  EXPECT_EQ(k.grid[1], 2u);
  EXPECT_EQ(k.block[0], 128u);
  EXPECT_EQ(k.registers_per_thread, 32u);
  EXPECT_EQ(k.static_shared_bytes, 1024u);
  EXPECT_EQ(k.dynamic_shared_bytes, 2048u);
  EXPECT_EQ(a.kernels[2].name, "fused_relu");  // not mangled: kept as is
  EXPECT_EQ(a.kernels[2].node, 44u);
  ASSERT_EQ(a.memcpys.size(), 1u);
  EXPECT_EQ(a.memcpys[0].kind, MemcpyKind::HostToDevice);
  EXPECT_EQ(a.memcpys[0].bytes, 4096u);
  EXPECT_EQ(a.memcpys[0].node, 43u);
  ASSERT_EQ(a.memsets.size(), 1u);
  EXPECT_EQ(a.memsets[0].bytes, 256u);
  EXPECT_EQ(a.memsets[0].node, 0u);  // no external correlation record
  ASSERT_EQ(a.api_calls.size(), 3u);
  EXPECT_EQ(a.api_calls[0].name, "cudaLaunchKernel");
  EXPECT_EQ(a.api_calls[2].name, "cudaMemcpyAsync");
  EXPECT_EQ(a.api_calls[0].start_ns, 10100);  // API calls are mapped onto the host clock
  EXPECT_EQ(a.api_calls[0].end_ns, 10120);
  EXPECT_EQ(a.api_calls[0].thread, 77u);
  EXPECT_EQ(a.api_calls[0].node, 42u);
  ASSERT_EQ(a.syncs.size(), 1u);
  EXPECT_EQ(a.syncs[0].name, "stream synchronize");
  EXPECT_EQ(a.syncs[0].start_ns, 10710);
  EXPECT_EQ(a.dropped_records, 3u);
}

TEST(CuptiActivity, ExternalCorrelationInALaterBufferStillNamesTheNode) {
  Buffer first, second;
  first.add(kernel(21, 3, 10, 20, "k"));
  second.add(external(21, 99));
  ActivityParser p;
  p.parse_buffer(first.data(), first.size());
  p.parse_buffer(second.data(), second.size());
  p.parse_buffer(nullptr, 0);
  const GpuActivity a = p.finish({}, 0);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].node, 99u);
}

TEST(CuptiActivity, CalibrationKeepsNanosecondsAtCuptiMagnitudes) {
  const ClockCalibration c =
      ClockCalibration::from_pairs(5'000'000, kGpuBase, 5'000'000 + 200'000'000, kGpuBase + 200'000'000);
  EXPECT_DOUBLE_EQ(c.scale, 1.0);
  EXPECT_EQ(c.to_host(kGpuBase + 123), 5'000'123);
  EXPECT_EQ(c.to_host(kGpuBase - 7), 4'999'993);  // before the first pair
  const ClockCalibration fast = ClockCalibration::from_pairs(0, kGpuBase, 1000, kGpuBase + 500);
  EXPECT_EQ(fast.to_host(kGpuBase + 250), 500);
}

TEST(CuptiActivity, MergedTraceHasStreamTracksAndKernelsOfTheirNodes) {
  TraceBuilder b;
  const uint32_t host = b.add_track({TrackKind::HostThread, 1, 1, "modescope", "cuda api", 0});
  const int32_t n42 = b.add_node({42, "conv", "Conv", {42}, "", 0, 0});
  const int32_t n43 = b.add_node({43, "copy", "Identity", {43}, "", 0, 0});
  const int32_t n44 = b.add_node({44, "relu", "Relu", {44}, "", 0, 0});
  merge_gpu_activity(b, sample_activity(), host);
  TracePtr t = b.finish();
  EXPECT_EQ(t->meta("gpu_dropped_records"), "3");
  std::map<std::string, std::vector<const Event*>> by_track;
  for (const Event& e : t->events) by_track[t->tracks[e.track].name].push_back(&e);
  ASSERT_EQ(by_track["stream 7"].size(), 4u);  // two kernels, the copy, the memset
  ASSERT_EQ(by_track["stream 9"].size(), 1u);
  ASSERT_EQ(by_track["cuda api"].size(), 4u);  // three calls, one synchronization
  const Event& k0 = *by_track["stream 7"][0];
  EXPECT_EQ(t->tracks[k0.track].kind, TrackKind::GpuStream);
  EXPECT_EQ(t->str(k0.name), "add_kernel(float*, float*, int)");
  EXPECT_EQ(k0.node, n42);
  EXPECT_EQ(k0.ts_ns, 10300);  // calibrated
  EXPECT_EQ(k0.dur_ns, 150);
  EXPECT_EQ(t->str(k0.impl), "grid 4x2x1 block 128x1x1 regs 32 smem 1024+2048 B");
  EXPECT_EQ(by_track["stream 7"][2]->node, n43);
  EXPECT_EQ(by_track["stream 9"][0]->node, n44);  // through its external id alone
  EXPECT_EQ(t->flows.size(), 3u);                 // launch -> kernel, launch -> kernel, memcpy call -> copy
  for (const Flow& f : t->flows) EXPECT_EQ(t->events[f.from].node, t->events[f.to].node);
  const std::string json = to_chrome_json(*t);
  test::check_chrome_structure(json);
}

TEST(CuptiActivity, ErrorTextNamesTheCallAndTheReason) {
  const std::string s = cupti_error_text("cuptiActivityEnable(CONCURRENT_KERNEL)", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  EXPECT_NE(s.find("cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), std::string::npos)
      << s;
  EXPECT_NE(s.find("NVreg_RestrictProfilingToAdminUsers"), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos);
  EXPECT_EQ(runtime_api_name(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020), "cudaStreamSynchronize");
}

TEST(CuptiActivity, CollectorWithoutADeviceFailsInOneClearLine) {
  auto c = create_cupti_collector();
  ASSERT_TRUE(c) << c.status().message();
  CuptiCollector& col = **c;
  const Status s = col.start();
  if (s.is_ok()) {
    auto a = col.stop();
    EXPECT_TRUE(a) << a.status().message();
    GTEST_SKIP() << "a CUDA device is present: the no-device path is not reachable here";
  }
  EXPECT_FALSE(col.active());
  EXPECT_NE(s.message().find("CUPTI"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  col.push_external(5);  // harmless while inactive
  col.pop_external();
  EXPECT_FALSE(col.stop());
  // A second collector may try again after the first failed (the process-wide slot was released).
  auto again = create_cupti_collector();
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->start().message(), s.message());
}

// On a machine with a device (skipped here): a copy and a memset made through the CUDA runtime
// (reached with dlopen, so the test links no CUDA runtime) arrive with their node and host times.
TEST(CuptiActivity, RealDeviceCopiesCarryTheirNodeAndHostTimes) {
  auto c = create_cupti_collector();
  ASSERT_TRUE(c) << c.status().message();
  CuptiCollector& col = **c;
  const auto now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const int64_t t0 = now();
  if (Status s = col.start(); !s.is_ok()) GTEST_SKIP() << "no device: " << s.message();
  void* rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!rt) {
    (void)col.stop();
    GTEST_SKIP() << "libcudart.so.13 not found";
  }
  const auto cuda_malloc = reinterpret_cast<decltype(&cudaMalloc)>(dlsym(rt, "cudaMalloc"));
  const auto cuda_memset = reinterpret_cast<decltype(&cudaMemset)>(dlsym(rt, "cudaMemset"));
  const auto cuda_memcpy = reinterpret_cast<decltype(&cudaMemcpy)>(dlsym(rt, "cudaMemcpy"));
  const auto cuda_sync = reinterpret_cast<decltype(&cudaDeviceSynchronize)>(dlsym(rt, "cudaDeviceSynchronize"));
  const auto cuda_free = reinterpret_cast<decltype(&cudaFree)>(dlsym(rt, "cudaFree"));
  ASSERT_TRUE(cuda_malloc && cuda_memset && cuda_memcpy && cuda_sync && cuda_free);
  constexpr size_t kBytes = 1 << 20;
  void* d = nullptr;
  ASSERT_EQ(cuda_malloc(&d, kBytes), cudaSuccess);
  std::vector<char> host(kBytes);
  col.push_external(7);
  EXPECT_EQ(cuda_memset(d, 1, kBytes), cudaSuccess);
  EXPECT_EQ(cuda_memcpy(host.data(), d, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  col.pop_external();
  EXPECT_EQ(cuda_sync(), cudaSuccess);
  EXPECT_EQ(host[kBytes - 1], 1);
  cuda_free(d);
  auto a = col.stop();
  const int64_t t1 = now();
  ASSERT_TRUE(a) << a.status().message();
  ASSERT_GE(a->memsets.size(), 1u);
  EXPECT_EQ(a->memsets.back().node, 7u);
  ASSERT_GE(a->memcpys.size(), 1u);
  const GpuMemcpyRecord& m = a->memcpys.back();
  EXPECT_EQ(m.node, 7u);
  EXPECT_EQ(m.kind, MemcpyKind::DeviceToHost);
  EXPECT_EQ(m.bytes, kBytes);
  // Calibrated GPU times fall inside the host window around the collection.
  EXPECT_GE(a->clock.to_host(m.start_gpu), t0);
  EXPECT_LE(a->clock.to_host(m.end_gpu), t1);
  bool memcpy_call = false;
  for (const RuntimeApiRecord& r : a->api_calls) {
    EXPECT_GE(r.start_ns, t0) << r.name;
    EXPECT_LE(r.end_ns, t1) << r.name;
    if (r.name == "cudaMemcpy") {
      memcpy_call = true;
      EXPECT_EQ(r.node, 7u);
      EXPECT_EQ(r.correlation, m.correlation);
    }
  }
  EXPECT_TRUE(memcpy_call);
}

}  // namespace
}  // namespace ms::prof

#endif  // MODESCOPE_HAVE_CUDA
