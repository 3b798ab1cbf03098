// CUDA backend: cuDNN (convolution, pooling), cuBLASLt (Gemm/MatMul), own kernels (kernels.cuh) for
// the rest of the common op set; every other op runs its CPU kernel, with the inputs explicitly
// prefetched to the host first and the step marked "cpu-fallback" in the profile (never silently).
//
// Memory: float tensors live in device memory (cudaMalloc), from a block-splitting caching allocator
// with per-stream pools in eager runs (runtime/block_allocator.h) and one planned arena in Graph runs.
// Integer and bool values of eager runs (shapes, indices, masks) live in host memory, where shape
// inference and CPU kernels read them; kernels upload what they need. Host code never reads device
// memory directly: the CPU fallback copies, and executors return host tensors.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/block_allocator.h"
#include "engine/runtime/capture.h"

namespace ms::cuda {

// Why CUDA cannot be used here ("" when it can): no driver, no device, driver older than the runtime.
std::string probe_device();

// Whole-graph replay through CUDA Graphs: stream capture on the backend's stream (this thread only).
class CudaBackend final : public runtime::Backend, public runtime::GraphCapture {
 public:
  // Fails with one line naming the reason when no usable device exists.
  static Expected<std::unique_ptr<CudaBackend>> create(int threads);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Device device() const override { return {DeviceType::CUDA, device_}; }
  std::string description() const override { return description_; }
  runtime::Allocator& allocator() override { return *caching_; }
  runtime::Allocator& arena_allocator() override { return *device_raw_; }
  runtime::Allocator& allocator_for(DType t) override;
  runtime::KernelFn find_kernel(const ir::Node& node) const override;
  bool is_fallback(runtime::KernelFn fn) const override;
  void set_threads(int n) override { cpu_->set_threads(n); }
  int threads() const override { return cpu_->threads(); }
  int num_streams() const override { return 1; }
  // bf16 tensor cores from Ampere (sm_80) on: cuDNN convs, cuBLASLt products, our elementwise kernels.
  bool native_bf16() const override { return props_.major >= 8; }
  bool bf16_matrix_units() const override { return props_.major >= 8; }
  runtime::Backend* folding_backend() override { return cpu_.get(); }
  // FusedElementwise has a kernel here (one pass per chain, the op table's math); the pass makes
  // chains on the device with MODESCOPE_CUDA_FUSE_ELEMENTWISE=1 (measured against single ops first).
  bool runs_fused_elementwise() const override;
  void synchronize() override;
  runtime::MemoryInfo memory_info() const override;
  Status copy_to_host(const Tensor& src, Tensor& dst) override;
  Status copy_from_host(const Tensor& src, Tensor& dst) override;

  std::string why_not_capturable(const ir::Node& node) const override;
  Expected<Tensor> resident(const Tensor& host) override { return to_device(host); }
  Status begin_capture() override;
  Expected<std::unique_ptr<runtime::CapturedRun>> end_capture(bool keep) override;
  int max_streams() const override { return kMaxStreams; }
  Status use_stream(int k) override;
  Status stream_wait(int waiter, int producer) override;

  // The stream kernels enqueue on now (the backend's own unless a Graph run put a branch on another).
  cudaStream_t stream() const { return current_; }
  cublasLtHandle_t cublaslt() const { return lt_; }
  cudnnHandle_t cudnn() const { return dnn_; }
  cpu::CpuBackend& cpu() { return *cpu_; }
  runtime::BlockAllocator& block_allocator() { return *caching_; }
  const cudaDeviceProp& props() const { return props_; }

  // A device-accessible view of `t`: itself when it already lives in CUDA memory, else a copy made
  // on the stream. Constants (initializers) are uploaded once and cached while their buffer lives.
  Expected<Tensor> to_device(const Tensor& t);
  // A constant conv filter [K, C, R, S] in device memory as cuDNN's NHWC filter (KRSC), made once
  // and cached while `w`'s buffer lives (`w` in device memory, never written: a constant).
  Expected<Tensor> filter_nhwc(const Tensor& w);

  // Device copies kept (uploaded constants and NHWC filters). Those made from a buffer that has
  // gone are dropped before the next copy is made, so closing a model and opening another gives
  // its weights' device memory back.
  size_t cached_uploads();

  // Kernels registered for CUDA (op types; the rest fall back to the CPU).
  static const runtime::KernelRegistry& kernels();

 private:
  CudaBackend() = default;
  Status make_streams(int k);  // streams (and their events) 0..k exist
  void drop_gone_uploads();    // upload_mu_ held
  int device_ = 0;
  cudaDeviceProp props_{};
  std::string description_;
  static constexpr int kMaxStreams = 4;
  cudaStream_t stream_ = nullptr;      // stream 0
  cudaStream_t current_ = nullptr;     // where work goes now
  std::vector<cudaStream_t> streams_;  // [0] = stream_, more made on first use
  std::vector<cudaEvent_t> events_;    // per stream, re-recorded for each wait
  cublasLtHandle_t lt_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  std::unique_ptr<cpu::CpuBackend> cpu_;
  std::unique_ptr<runtime::Allocator> device_raw_;    // cudaMalloc (arenas)
  std::unique_ptr<runtime::BlockAllocator> caching_;  // eager device pool
  std::unique_ptr<runtime::CachingAllocator> host_;   // eager integer/bool values
  std::mutex upload_mu_;
  struct Upload {
    std::weak_ptr<Buffer> source;
    Tensor device;
  };
  std::unordered_map<const void*, Upload> uploads_;       // by the host address of the constant's bytes
  std::unordered_map<const void*, Upload> nhwc_filters_;  // by the constant's device address
};

// The CUDA backend a kernel runs on (kernels registered here only ever run on it).
inline CudaBackend& cuda_backend(runtime::KernelContext& ctx) { return static_cast<CudaBackend&>(ctx.backend()); }

// Kernel families (*_ops.cpp).
void register_elementwise_ops(runtime::KernelRegistry& r);  // elementwise_ops.cpp
void register_nn_ops(runtime::KernelRegistry& r);           // nn_ops.cpp (softmax, norms, reductions)
void register_data_ops(runtime::KernelRegistry& r);         // data_ops.cpp
void register_logic_ops(runtime::KernelRegistry& r);        // logic_ops.cpp (masks, scatters, constants)
void register_blas_ops(runtime::KernelRegistry& r);         // blas_ops.cpp (cuBLASLt)
void register_cudnn_ops(runtime::KernelRegistry& r);        // cudnn_ops.cpp
// Runs the node's CPU kernel (fallback.cpp); returned by find_kernel for ops without a CUDA kernel.
// Device inputs are copied to the host and float results back, each such move noted as a fallback;
// an op whose inputs and outputs are all host integer or bool tensors (shape arithmetic) runs where
// its values are, impl "host:...", and is no fallback.
Status cpu_fallback(runtime::KernelContext& ctx);
// The kernel of the shape-arithmetic ops (Range, Equal, Mod, ScatterND, ...): cpu_fallback under
// another name, so a compiled graph does not count them as fallbacks before they run.
Status host_op(runtime::KernelContext& ctx);
// Shape and Size: the CPU kernel on the inputs where they are (it reads dims, never data).
Status metadata_op(runtime::KernelContext& ctx);

// Inputs of a kernel in device memory: uploads host inputs (graph inputs, constants) on the way.
class DeviceInputs {
 public:
  explicit DeviceInputs(runtime::KernelContext& ctx) : ctx_(ctx) {}
  // Input i in device memory (an error names the node when the upload fails).
  Expected<const Tensor*> get(size_t i);

 private:
  runtime::KernelContext& ctx_;
  std::map<size_t, Tensor> held_;
};

}  // namespace ms::cuda
