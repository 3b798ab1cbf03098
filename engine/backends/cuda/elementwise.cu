// Broadcasting binary ops, unary activations and the fused ops' epilogue (f32).
#include "engine/backends/cuda/kernels.cuh"

namespace ms::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 8 ? b : 65535 * 8);  // grid-stride loops cover the rest
}

// The op table's functions (runtime switch on the op; the table's math is host and device code).
__device__ __forceinline__ float apply_binary(ew::Op op, float a, float b) { return ew::apply_binary(op, a, b); }

__device__ __forceinline__ float apply_unary(int op, float x, float alpha, float beta) {
  return ew::apply_unary(static_cast<ew::Op>(op), x, alpha, beta);
}

__global__ void binary_same_kernel(ew::Op op, const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_binary(op, a[i], b[i]);
}

__global__ void binary_strided_kernel(ew::Op op, const float* a, const float* b, float* y, int64_t n, StridedDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int k = d.rank - 1; k >= 0; --k) {
      const int64_t idx = rem % d.dims[k];
      rem /= d.dims[k];
      ia += idx * d.a[k];
      ib += idx * d.b[k];
    }
    y[i] = apply_binary(op, a[ia], b[ib]);
  }
}

__global__ void unary_kernel(int op, const float* x, float* y, int64_t n, float alpha, float beta) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_unary(op, x[i], alpha, beta);
}

__global__ void epilogue_kernel(float* y, Epilogue e) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < e.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = y[i];
    if (e.bias) v += e.bias[(i / e.inner) % e.channels];
    for (int k = 0; k < e.count; ++k)
      v = e.kind[k] == kPostAdd ? v + e.residual[i] : apply_unary(e.kind[k], v, e.alpha[k], e.beta[k]);
    y[i] = v;
  }
}

}  // namespace

cudaError_t binary_f32(ew::Op op, const float* a, const float* b, float* y, int64_t n, const StridedDesc& d,
                       bool contiguous_same, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (contiguous_same)
    binary_same_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n);
  else
    binary_strided_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n, d);
  return cudaGetLastError();
}

cudaError_t unary_f32(ew::Op op, const float* x, float* y, int64_t n, float alpha, float beta, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<int>(op), x, y, n, alpha, beta);
  return cudaGetLastError();
}

cudaError_t epilogue_f32(float* y, const Epilogue& e, cudaStream_t s) {
  if (e.n == 0 || (!e.bias && e.count == 0)) return cudaSuccess;
  epilogue_kernel<<<blocks_for(e.n), kThreads, 0, s>>>(y, e);
  return cudaGetLastError();
}

}  // namespace ms::cuda
