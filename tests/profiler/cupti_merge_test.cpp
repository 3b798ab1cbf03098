// The CUDA-free half of GPU recording: clock calibration and merging activity into a trace.
#include <gtest/gtest.h>

#include "profiler/io/chrome_trace.h"
#include "profiler/record/cupti_collector.h"
#include "test_util.h"

namespace ms::prof {
namespace {

TEST(Cupti, ClockCalibrationMapsGpuTicksOntoHostTime) {
  const ClockCalibration c = ClockCalibration::from_pairs(1000, 500, 3000, 1500);  // host runs 2x
  EXPECT_DOUBLE_EQ(c.scale, 2.0);
  EXPECT_EQ(c.to_host(500), 1000);
  EXPECT_EQ(c.to_host(1000), 2000);
  const ClockCalibration one = ClockCalibration::from_pairs(100, 40, 100, 40);
  EXPECT_DOUBLE_EQ(one.scale, 1.0);
  EXPECT_EQ(one.to_host(40), 100);
}

TEST(Cupti, ActivityBecomesStreamTracksWithFlowsFromTheLaunch) {
  TraceBuilder b;
  const uint32_t host = b.add_track({TrackKind::HostThread, 1, 1, "modescope", "host", 0});
  const int32_t node = b.add_node({42, "conv", "Conv", {42}, "", 0, 0});
  GpuActivity a;
  a.clock = ClockCalibration::from_pairs(10000, 0, 20000, 10000);
  a.api_calls.push_back({7, 1, 10100, 10150, "cudaLaunchKernel", 42});
  a.api_calls.push_back({8, 1, 10200, 10220, "cudaMemcpyAsync", 0});
  GpuKernelRecord k;
  k.correlation = 7;
  k.stream = 3;
  k.start_gpu = 300;
  k.end_gpu = 450;
  k.name = "conv_kernel";
  a.kernels.push_back(k);
  GpuMemcpyRecord m;
  m.correlation = 8;
  m.stream = 3;
  m.start_gpu = 500;
  m.end_gpu = 520;
  m.bytes = 4096;
  a.memcpys.push_back(m);
  a.dropped_records = 2;
  merge_gpu_activity(b, a, host);
  TracePtr t = b.finish();
  ASSERT_EQ(t->events.size(), 4u);
  ASSERT_EQ(t->flows.size(), 2u);
  const Event& launch = t->events[t->flows[0].from];
  const Event& kernel = t->events[t->flows[0].to];
  EXPECT_EQ(t->str(launch.name), "cudaLaunchKernel");
  EXPECT_EQ(t->str(kernel.name), "conv_kernel");
  EXPECT_EQ(kernel.ts_ns, 10300);
  EXPECT_EQ(kernel.dur_ns, 150);
  EXPECT_EQ(kernel.node, node);  // the kernel names the node whose op launched it
  EXPECT_EQ(t->tracks[kernel.track].kind, TrackKind::GpuStream);
  EXPECT_EQ(t->tracks[kernel.track].name, "stream 3");
  EXPECT_EQ(t->meta("gpu_dropped_records"), "2");
  // GPU tracks export and import like any other.
  const std::string json = to_chrome_json(*t);
  test::check_chrome_structure(json);
  auto back = import_chrome_trace_string(json);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(to_chrome_json(*back->trace), json);
}

}  // namespace
}  // namespace ms::prof
