#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_create.h"

#include <cudnn.h>

#include <cstdlib>
#include <cstring>

#include "engine/backends/cuda/cublaslt_library.h"
#include "engine/backends/cuda/cuda_common.h"
#include "engine/backends/cuda/ops_util.h"
#include "engine/runtime/custom_kernels.h"

namespace ms::cuda {

Status cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  cudaGetLastError();  // also left as the "last error": cleared so the next launch check does not report it
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Internal;
  return Status::error(code, std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                                 ") at " + file + ":" + std::to_string(line));
}

Status cublas_error(cublasStatus_t e, const char* call, const char* file, int line) {
  return Status::error(ErrorCode::Internal, std::string(call) + " failed: cuBLAS status " +
                                                std::to_string(static_cast<int>(e)) + " at " + file + ":" +
                                                std::to_string(line));
}

Status cudnn_error(cudnnStatus_t e, const char* call, const char* file, int line) {
  return Status::error(ErrorCode::Internal, std::string(call) + " failed: " + cudnnGetErrorString(e) + " at " + file +
                                                ":" + std::to_string(line));
}

std::map<std::string, std::string> cuda_library_versions() {
  auto dotted = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  const bool has_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  const size_t cudnn = cudnnGetVersion();
  return {{"cuda_runtime", dotted(runtime)},
          {"cuda_driver", has_driver ? dotted(driver) : "none"},
          {"cudnn", std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) + "." +
                        std::to_string(cudnn % 100)}};
}

std::string probe_device() {
  int driver = 0, runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const cudaError_t de = cudaDriverGetVersion(&driver);
  if (de != cudaSuccess) return "no CUDA driver (cudaDriverGetVersion: " + std::string(cudaGetErrorString(de)) + ")";
  if (driver == 0) return "no CUDA driver installed (libcuda.so.1 not found)";
  if (driver < runtime)
    return "the CUDA driver supports CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
           " but this build needs " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
           " (update the driver)";
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess) return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(ce) + ")";
  if (count == 0) return "no CUDA device";
  return "";
}

namespace {

// Plain device memory.
class DeviceAllocator final : public runtime::Allocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  Device device() const override { return {DeviceType::CUDA, device_}; }
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
      cudaGetLastError();  // a failed allocation is not sticky; clear it for the next call
      return nullptr;
    }
    return p;
  }
  void deallocate(void* p, size_t) override { cudaFree(p); }
  runtime::AllocatorStats stats() const override { return {}; }

 private:
  int device_;
};

}  // namespace

Expected<std::unique_ptr<CudaBackend>> CudaBackend::create(int threads) {
  const std::string why = probe_device();
  if (!why.empty()) return Status::error(ErrorCode::Unsupported, why);
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  MS_CUDA_CHECK(cudaSetDevice(b->device_));
  MS_CUDA_CHECK(cudaGetDeviceProperties(&b->props_, b->device_));
  MS_CUDA_CHECK(cudaStreamCreateWithFlags(&b->stream_, cudaStreamNonBlocking));
  std::string no_blas;
  const CublasLt* lt = open_cublaslt(&no_blas);
  if (!lt) return Status::error(ErrorCode::Unsupported, "CUDA device found, but " + no_blas);
  MS_CUBLAS_CHECK(lt->create(&b->lt_));
  MS_CUDNN_CHECK(cudnnCreate(&b->dnn_));
  MS_CUDNN_CHECK(cudnnSetStream(b->dnn_, b->stream_));
  b->current_ = b->stream_;
  b->streams_ = {b->stream_};
  b->events_.assign(1, nullptr);
  MS_CUDA_CHECK(cudaEventCreateWithFlags(&b->events_[0], cudaEventDisableTiming));
  b->cpu_ = std::make_unique<cpu::CpuBackend>(threads);
  b->device_raw_ = std::make_unique<DeviceAllocator>(b->device_);
  b->caching_ = std::make_unique<runtime::BlockAllocator>(std::make_unique<DeviceAllocator>(b->device_));
  b->host_ = std::make_unique<runtime::CachingAllocator>(std::make_unique<runtime::HostAllocator>());
  int driver = 0;
  cudaDriverGetVersion(&driver);
  const size_t cudnn = cudnnGetVersion();
  b->description_ = "cuda (" + std::string(b->props_.name) + ", sm_" + std::to_string(b->props_.major) +
                    std::to_string(b->props_.minor) + ", " + std::to_string(b->props_.multiProcessorCount) +
                    " SMs, driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
                    ", cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) + ")";
  return b;
}

CudaBackend::~CudaBackend() {
  for (cudaStream_t st : streams_) cudaStreamSynchronize(st);
  for (cudaEvent_t e : events_)
    if (e) cudaEventDestroy(e);
  for (size_t k = 1; k < streams_.size(); ++k) cudaStreamDestroy(streams_[k]);
  uploads_.clear();
  caching_.reset();
  if (dnn_) cudnnDestroy(dnn_);
  if (lt_) cublaslt_api().destroy(lt_);
  if (stream_) cudaStreamDestroy(stream_);
}

const runtime::KernelRegistry& CudaBackend::kernels() {
  static const runtime::KernelRegistry* reg = [] {
    auto* r = new runtime::KernelRegistry();
    register_elementwise_ops(*r);
    register_nn_ops(*r);
    register_data_ops(*r);
    register_logic_ops(*r);
    register_blas_ops(*r);
    register_cudnn_ops(*r);
    return r;
  }();
  return *reg;
}

runtime::KernelFn CudaBackend::find_kernel(const ir::Node& node) const {
  if (runtime::KernelFn k = kernels().find(node.op_type, node.domain)) return k;
  // Ops added at run time (plugins): their CUDA kernel, else their CPU one on host copies.
  if (runtime::KernelFn k = runtime::find_custom_kernel(node.op_type, node.domain, DeviceType::CUDA)) return k;
  const bool on_cpu = cpu::CpuBackend::kernels().find(node.op_type, node.domain) ||
                      runtime::find_custom_kernel(node.op_type, node.domain, DeviceType::CPU);
  return on_cpu ? &cpu_fallback : nullptr;
}

bool CudaBackend::is_fallback(runtime::KernelFn fn) const { return fn == &cpu_fallback; }

void CudaBackend::synchronize() {
  for (cudaStream_t st : streams_) cudaStreamSynchronize(st);
}

Status CudaBackend::make_streams(int k) {
  if (k < 0 || k >= kMaxStreams) return internal_error("stream " + std::to_string(k) + " out of range");
  while (static_cast<int>(streams_.size()) <= k) {
    cudaStream_t st = nullptr;
    cudaEvent_t e = nullptr;
    MS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    streams_.push_back(st);
    MS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  return Status::ok();
}

Status CudaBackend::use_stream(int k) {
  MS_RETURN_IF_ERROR(make_streams(k));
  if (current_ != streams_[static_cast<size_t>(k)]) {
    current_ = streams_[static_cast<size_t>(k)];
    MS_CUDNN_CHECK(cudnnSetStream(dnn_, current_));
  }
  return Status::ok();
}

Status CudaBackend::stream_wait(int waiter, int producer) {
  if (waiter == producer) return Status::ok();
  MS_RETURN_IF_ERROR(make_streams(std::max(waiter, producer)));
  cudaEvent_t e = events_[static_cast<size_t>(producer)];
  MS_CUDA_CHECK(cudaEventRecord(e, streams_[static_cast<size_t>(producer)]));
  MS_CUDA_CHECK(cudaStreamWaitEvent(streams_[static_cast<size_t>(waiter)], e, 0));
  return Status::ok();
}

runtime::Allocator& CudaBackend::allocator_for(DType t) {
  return is_float(t) ? static_cast<runtime::Allocator&>(*caching_) : *host_;
}

runtime::MemoryInfo CudaBackend::memory_info() const {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return {};
  return {total, free};
}

Status CudaBackend::copy_to_host(const Tensor& src, Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) return internal_error("copy_to_host: size mismatch");
  if (!src.nbytes()) return Status::ok();
  MS_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, current_));
  MS_CUDA_CHECK(cudaStreamSynchronize(current_));
  return Status::ok();
}

Status CudaBackend::copy_from_host(const Tensor& src, Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) return internal_error("copy_from_host: size mismatch");
  if (!src.nbytes()) return Status::ok();
  MS_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, current_));
  return Status::ok();
}

Expected<Tensor> CudaBackend::to_device(const Tensor& t) {
  if (!t.defined() || t.device().type == DeviceType::CUDA) return t;
  // By the host address of the tensor's bytes: views of one buffer (constants a pass carved out of
  // one slab, a weight's column parts) are different uploads.
  const void* key = t.raw();
  {
    std::lock_guard<std::mutex> lock(upload_mu_);
    auto it = uploads_.find(key);
    // The cached copy is valid while the same buffer is alive (a freed address may be reused).
    if (it != uploads_.end() && it->second.source.lock() == t.buffer() && it->second.device.shape() == t.shape() &&
        it->second.device.dtype() == t.dtype())
      return it->second.device;
    drop_gone_uploads();  // before the allocation below, which may reuse their memory
  }
  void* p = caching_->allocate(t.nbytes());
  if (!p && t.nbytes())
    return Status::error(ErrorCode::OutOfMemory,
                         "uploading " + std::to_string(t.nbytes()) + " bytes: " + caching_->last_error());
  auto* alloc = caching_.get();
  auto buf = std::make_shared<Buffer>(p, t.nbytes(), device(), [alloc](void* d, size_t n) { alloc->deallocate(d, n); });
  Tensor dev(std::move(buf), t.dtype(), t.shape());
  MS_RETURN_IF_ERROR(copy_from_host(t, dev));
  std::lock_guard<std::mutex> lock(upload_mu_);
  uploads_[key] = Upload{t.buffer(), dev};
  return dev;
}

void CudaBackend::drop_gone_uploads() {
  std::erase_if(uploads_, [](const auto& kv) { return kv.second.source.expired(); });
  std::erase_if(nhwc_filters_, [](const auto& kv) { return kv.second.source.expired(); });
}

size_t CudaBackend::cached_uploads() {
  std::lock_guard<std::mutex> lock(upload_mu_);
  return uploads_.size() + nhwc_filters_.size();
}

bool CudaBackend::runs_fused_elementwise() const {
  static const bool on = [] {
    const char* v = std::getenv("MODESCOPE_CUDA_FUSE_ELEMENTWISE");
    return v && std::string(v) == "1";
  }();
  return on;
}

Expected<Tensor> CudaBackend::filter_nhwc(const Tensor& w) {
  if (w.rank() != 4 || w.device().type != DeviceType::CUDA)
    return Status::error(ErrorCode::InvalidArgument, "an NHWC filter is made from a 4-D device tensor");
  const Shape krsc{w.dim(0), w.dim(2), w.dim(3), w.dim(1)};
  {
    std::lock_guard<std::mutex> lock(upload_mu_);
    auto it = nhwc_filters_.find(w.raw());
    if (it != nhwc_filters_.end() && it->second.source.lock() == w.buffer() && it->second.device.shape() == krsc &&
        it->second.device.dtype() == w.dtype())
      return it->second.device;
    drop_gone_uploads();
  }
  void* p = caching_->allocate(w.nbytes());
  if (!p && w.nbytes())
    return Status::error(ErrorCode::OutOfMemory, "an NHWC copy of a conv filter (" + std::to_string(w.nbytes()) +
                                                     " bytes): " + caching_->last_error());
  auto* alloc = caching_.get();
  auto buf = std::make_shared<Buffer>(p, w.nbytes(), device(), [alloc](void* d, size_t n) { alloc->deallocate(d, n); });
  Tensor out(std::move(buf), w.dtype(), krsc);
  MS_CUDA_CHECK(strided_copy(w.raw(), out.raw(), w.numel(), nhwc_copy_desc(w.shape(), true),
                             static_cast<int>(dtype_size(w.dtype())), current_));
  // Made once, outside any capture (a graph's first run is eager); later kernels on other streams
  // read it too.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  MS_CUDA_CHECK(cudaStreamIsCapturing(current_, &capturing));
  if (capturing == cudaStreamCaptureStatusNone) MS_CUDA_CHECK(cudaStreamSynchronize(current_));
  std::lock_guard<std::mutex> lock(upload_mu_);
  nhwc_filters_[w.raw()] = Upload{w.buffer(), out};
  return out;
}

namespace {

class CudaGraphRun final : public runtime::CapturedRun {
 public:
  CudaGraphRun(cudaGraph_t g, cudaGraphExec_t exec, size_t nodes, cudaStream_t stream)
      : graph_(g), exec_(exec), nodes_(nodes), stream_(stream) {}
  ~CudaGraphRun() override {
    cudaStreamSynchronize(stream_);
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  Status launch() override {
    MS_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
    return Status::ok();
  }
  size_t nodes() const override { return nodes_; }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  size_t nodes_;
  cudaStream_t stream_;
};

}  // namespace

std::string CudaBackend::why_not_capturable(const ir::Node& node) const {
  if (!kernels().find(node.op_type, node.domain)) return "runs on the CPU";
  return "";
}

Status CudaBackend::begin_capture() {
  MS_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  return Status::ok();
}

Expected<std::unique_ptr<runtime::CapturedRun>> CudaBackend::end_capture(bool keep) {
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &g);
  if (!keep || e != cudaSuccess) {
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();  // an invalidated capture is not sticky; clear it for the step-by-step run
    if (!keep) return Status::error(ErrorCode::Cancelled, "recording discarded");
    return cuda_error(e, "cudaStreamEndCapture", __FILE__, __LINE__);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ie = cudaGraphInstantiate(&exec, g, 0);
  if (ie != cudaSuccess) {
    cudaGraphDestroy(g);
    cudaGetLastError();
    return cuda_error(ie, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  size_t n = 0;
  cudaGraphGetNodes(g, nullptr, &n);
  return std::unique_ptr<runtime::CapturedRun>(std::make_unique<CudaGraphRun>(g, exec, n, stream_));
}

Expected<const Tensor*> DeviceInputs::get(size_t i) {
  const Tensor& t = ctx_.input(i);
  if (t.device().type == DeviceType::CUDA) return &t;
  auto d = cuda_backend(ctx_).to_device(t);
  if (!d) return ctx_.fail("input " + std::to_string(i) + ": " + d.status().message());
  auto [it, _] = held_.insert_or_assign(i, std::move(*d));
  return &it->second;
}

}  // namespace ms::cuda

namespace ms::cuda {

Expected<std::unique_ptr<runtime::Backend>> create_cuda_backend(int threads) {
  auto b = CudaBackend::create(threads);
  if (!b) return std::move(b).take_status();
  return std::unique_ptr<runtime::Backend>(std::move(*b));
}

}  // namespace ms::cuda
