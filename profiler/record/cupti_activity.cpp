// The CUPTI activity collector. CUPTI's buffer callbacks are process-wide, so one collector records
// at a time (g_active); the completed-buffer callback only queues the buffer under a short mutex
// and returns, and stop() parses the queue after a forced flush. Buffers therefore stay allocated
// until stop(): about 216 bytes per kernel, 40 per API call.
#include "profiler/record/cupti_activity.h"

#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <utility>

namespace ms::prof {

namespace {

constexpr size_t kBufferBytes = 4u << 20;
// Below this span the two clock pairs are too close for a reliable rate: offset only. CUPTI's
// timestamps and CLOCK_MONOTONIC both count nanoseconds, so the rate is 1 up to drift.
constexpr uint64_t kMinRateSpanNs = 100'000'000;

int64_t host_now_ns() {  // the Recorder's clock
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct ClockPair {
  int64_t host = 0;
  uint64_t gpu = 0;
};

// A CUPTI timestamp bracketed by two host readings; the host time is their midpoint.
Expected<ClockPair> clock_pair() {
  const int64_t h0 = host_now_ns();
  uint64_t g = 0;
  const CUptiResult r = cuptiGetTimestamp(&g);
  const int64_t h1 = host_now_ns();
  if (r != CUPTI_SUCCESS) return internal_error("CUPTI: " + cupti_error_text("cuptiGetTimestamp", r));
  return ClockPair{h0 + (h1 - h0) / 2, g};
}

// CUPTI reports a missing driver or device as CUPTI_ERROR_UNKNOWN from the first enable; ask the
// driver first (through dlopen: linking libcuda would stop the program from starting without it).
Status check_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return unsupported(std::string("CUPTI: no CUDA driver (dlopen libcuda.so.1: ") + (why ? why : "not found") + ")");
  }
  using InitFn = CUresult (*)(unsigned);
  using CountFn = CUresult (*)(int*);
  using NameFn = CUresult (*)(CUresult, const char**);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto err_name = reinterpret_cast<NameFn>(dlsym(lib, "cuGetErrorName"));
  auto err_text = reinterpret_cast<NameFn>(dlsym(lib, "cuGetErrorString"));
  if (!init || !count) return unsupported("CUPTI: libcuda.so.1 lacks cuInit/cuDeviceGetCount (not a CUDA driver)");
  auto describe = [&](const char* call, CUresult r) {
    const char *name = nullptr, *text = nullptr;
    if (err_name) err_name(r, &name);
    if (err_text) err_text(r, &text);
    return std::string("CUPTI: ") + call + ": " + (name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) +
           (text ? std::string(" (") + text + ")" : "");
  };
  // The library stays loaded: CUPTI and the CUDA backend use it anyway.
  if (CUresult r = init(0); r != CUDA_SUCCESS) return unsupported(describe("cuInit", r));
  int n = 0;
  if (CUresult r = count(&n); r != CUDA_SUCCESS) return unsupported(describe("cuDeviceGetCount", r));
  if (n == 0) return unsupported("CUPTI: cuDeviceGetCount: no CUDA device");
  return Status::ok();
}

class CuptiActivityCollector;
std::atomic<CuptiActivityCollector*> g_active{nullptr};

struct KindName {
  CUpti_ActivityKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"},
};

class CuptiActivityCollector final : public CuptiCollector {
 public:
  ~CuptiActivityCollector() override {
    if (active_) (void)stop();
    for (auto& p : pending_) std::free(p.first);
  }

  Status start() override {
    if (active_) return invalid_argument("CUPTI collector: start() while already recording");
    if (Status s = check_driver(); !s.is_ok()) return s;
    CuptiActivityCollector* expected = nullptr;
    if (!g_active.compare_exchange_strong(expected, this))
      return invalid_argument("CUPTI collector: another collector is recording in this process");
    auto fail = [&](const char* call, CUptiResult r) {
      disable_all();
      g_active.store(nullptr);
      return unsupported("CUPTI: " + cupti_error_text(call, r));
    };
    if (CUptiResult r = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed); r != CUPTI_SUCCESS)
      return fail("cuptiActivityRegisterCallbacks", r);
    for (const KindName& k : kKinds) {
      if (CUptiResult r = cuptiActivityEnable(k.kind); r != CUPTI_SUCCESS) {
        const std::string call = std::string("cuptiActivityEnable(") + k.name + ")";
        return fail(call.c_str(), r);
      }
      enabled_.push_back(k.kind);
    }
    auto p = clock_pair();
    if (!p) {
      disable_all();
      g_active.store(nullptr);
      return std::move(p).take_status();
    }
    first_ = *p;
    active_ = true;
    return Status::ok();
  }

  Expected<GpuActivity> stop() override {
    if (!active_) return invalid_argument("CUPTI collector: stop() without a successful start()");
    // Forced flush hands back every buffer, also partly filled ones; records of work still running
    // on the GPU would be incomplete, so callers synchronize the device first.
    const CUptiResult fr = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    auto last = clock_pair();
    disable_all();
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // what arrived while disabling
    g_active.store(nullptr);
    active_ = false;
    std::vector<std::pair<uint8_t*, size_t>> buffers;
    uint64_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      buffers.swap(pending_);
      dropped = dropped_;
      dropped_ = 0;
    }
    ActivityParser parser;
    for (auto& [buf, valid] : buffers) {
      parser.parse_buffer(buf, valid);
      std::free(buf);
    }
    if (fr != CUPTI_SUCCESS) return internal_error("CUPTI: " + cupti_error_text("cuptiActivityFlushAll", fr));
    if (!last) return std::move(last).take_status();
    const ClockPair b = *last;
    const ClockCalibration clock = b.gpu > first_.gpu && b.gpu - first_.gpu >= kMinRateSpanNs
                                       ? ClockCalibration::from_pairs(first_.host, first_.gpu, b.host, b.gpu)
                                       : ClockCalibration::from_pairs(first_.host, first_.gpu, first_.host, first_.gpu);
    return parser.finish(clock, dropped);
  }

  bool active() const override { return active_; }

  void push_external(uint64_t id) override {
    if (active_) cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  }
  void pop_external() override {
    uint64_t last = 0;
    if (active_) cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }

 private:
  void disable_all() {
    for (CUpti_ActivityKind k : enabled_) (void)cuptiActivityDisable(k);
    enabled_.clear();
  }

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    // CUPTI requires 8-byte alignment; records are then written back to back.
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
  }

  static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t /*size*/,
                                        size_t valid) {
    CuptiActivityCollector* c = g_active.load();
    size_t dropped = 0;
    (void)cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
    if (!c) {  // after stop(): nobody wants these records
      std::free(buffer);
      return;
    }
    std::lock_guard<std::mutex> lock(c->mu_);
    c->dropped_ += dropped;
    if (buffer && valid > 0)
      c->pending_.emplace_back(buffer, valid);
    else
      std::free(buffer);
  }

  std::mutex mu_;  // pending_ and dropped_ (the callback holds it for one push)
  std::vector<std::pair<uint8_t*, size_t>> pending_;
  uint64_t dropped_ = 0;
  std::vector<CUpti_ActivityKind> enabled_;
  ClockPair first_;
  std::atomic<bool> active_{false};
};

}  // namespace

Expected<std::unique_ptr<CuptiCollector>> create_cupti_collector() {
  return std::unique_ptr<CuptiCollector>(std::make_unique<CuptiActivityCollector>());
}

}  // namespace ms::prof
