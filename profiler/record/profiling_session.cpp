#include "profiler/record/profiling_session.h"

#include <chrono>

namespace ms::prof {

// The recorder, then `also`; while GPU activity is on, each op's NodeId is pushed as CUPTI's
// external correlation so the GPU work it launches names its node even when kernels run long after
// the op returned. In one-run mode, the run's begin and end bracket the GPU activity.
class ProfilingSession::Observer final : public runtime::RunObserver {
 public:
  explicit Observer(ProfilingSession& s) : s_(s), also_(s.options_.also) {}
  bool one_run = false;
  bool correlate = false;

  void on_run_begin(const runtime::RunInfo& i) override {
    if (one_run) s_.start_gpu();
    s_.recorder_.on_run_begin(i);
    if (also_) also_->on_run_begin(i);
  }
  void on_run_end(const runtime::RunInfo& i) override {
    s_.recorder_.on_run_end(i);
    if (also_) also_->on_run_end(i);
    if (one_run) s_.stop_gpu();
  }
  void on_op_begin(const ir::Node& n) override {
    s_.recorder_.on_op_begin(n);
    if (also_) also_->on_op_begin(n);
    if (correlate) s_.gpu_->push_external(n.id.value);
  }
  void on_op_end(const ir::Node& n) override {
    if (correlate) s_.gpu_->pop_external();
    s_.recorder_.on_op_end(n);
    if (also_) also_->on_op_end(n);
  }
  void on_kernel_begin(const ir::Node& n, std::string_view impl) override {
    s_.recorder_.on_kernel_begin(n, impl);
    if (also_) also_->on_kernel_begin(n, impl);
  }
  void on_kernel_impl(const ir::Node& n, std::string_view impl) override {
    s_.recorder_.on_kernel_impl(n, impl);
    if (also_) also_->on_kernel_impl(n, impl);
  }
  void on_kernel_end(const ir::Node& n) override {
    s_.recorder_.on_kernel_end(n);
    if (also_) also_->on_kernel_end(n);
  }
  void on_alloc(const runtime::MemoryEvent& e) override {
    s_.recorder_.on_alloc(e);
    if (also_) also_->on_alloc(e);
  }
  void on_free(const runtime::MemoryEvent& e) override {
    s_.recorder_.on_free(e);
    if (also_) also_->on_free(e);
  }

 private:
  ProfilingSession& s_;
  runtime::RunObserver* also_;
};

ProfilingSession::ProfilingSession(runtime::Backend& backend, ProfilingOptions options)
    : backend_(backend),
      options_(std::move(options)),
      recorder_(options_.recorder),
      observer_(std::make_unique<Observer>(*this)) {}

ProfilingSession::~ProfilingSession() {
  if (gpu_ && gpu_->active()) (void)gpu_->stop();
}

runtime::RunObserver& ProfilingSession::observer() { return *observer_; }

runtime::RunObserver& ProfilingSession::observer_for_one_run() {
  observer_->one_run = true;
  return *observer_;
}

bool ProfilingSession::gpu_active() const { return gpu_ && gpu_->active(); }

void ProfilingSession::start_gpu() {
  if (gpu_tried_) return;
  gpu_tried_ = true;
  if (!options_.gpu_activity || backend_.device().type != DeviceType::CUDA) return;
  auto made = options_.gpu_collector ? options_.gpu_collector() : create_cupti_collector();
  if (!made) {
    gpu_note_ = made.status().message();
    return;
  }
  gpu_ = std::move(*made);
  backend_.synchronize();  // earlier work (warm-up, uploads) stays out of the activity
  if (Status s = gpu_->start(); !s.is_ok()) {
    gpu_note_ = s.message();
    return;
  }
  observer_->correlate = true;
}

void ProfilingSession::stop_gpu() {
  if (!gpu_active()) return;
  observer_->correlate = false;
  backend_.synchronize();
  auto a = gpu_->stop();
  if (!a) {
    gpu_note_ = a.status().message();
    return;
  }
  activity_ = std::make_unique<GpuActivity>(std::move(*a));
  gpu_records_ = activity_->kernels.size() + activity_->memcpys.size() + activity_->memsets.size();
}

TracePtr ProfilingSession::build(BuildContext ctx) {
  stop_gpu();
  ctx.metadata["device"] = backend_.description();
  if (activity_) {
    ctx.gpu = activity_.get();
    ctx.metadata["gpu_activity"] = "cupti";
  } else if (!gpu_note_.empty()) {
    ctx.metadata["gpu_activity"] = "none";
    ctx.metadata["gpu_note"] = "GPU kernels missing: " + gpu_note_;
  }
  const auto t0 = std::chrono::steady_clock::now();
  TracePtr trace = recorder_.build(ctx);
  build_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return trace;
}

}  // namespace ms::prof
