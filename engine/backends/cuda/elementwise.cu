// Broadcasting binary ops, unary activations and the fused ops' epilogue (f32).
#include <math.h>

#include "engine/backends/cuda/kernels.cuh"

namespace ms::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 8 ? b : 65535 * 8);  // grid-stride loops cover the rest
}

__device__ __forceinline__ float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Pow: return powf(a, b);
    case BinaryOp::Max: return fmaxf(a, b);
    case BinaryOp::Min: return fminf(a, b);
    case BinaryOp::PRelu: return a >= 0.f ? a : a * b;
  }
  return 0.f;
}

__device__ __forceinline__ float apply_unary(int op, float x, float alpha, float beta) {
  switch (static_cast<UnaryOp>(op)) {
    case UnaryOp::Relu: return x > 0.f ? x : 0.f;
    case UnaryOp::Sigmoid: return 1.f / (1.f + __expf(-x));
    case UnaryOp::Tanh: return tanhf(x);
    case UnaryOp::Exp: return expf(x);
    case UnaryOp::Log: return logf(x);
    case UnaryOp::Sqrt: return sqrtf(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Abs: return fabsf(x);
    case UnaryOp::Erf: return erff(x);
    case UnaryOp::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case UnaryOp::Reciprocal: return 1.f / x;
    case UnaryOp::Floor: return floorf(x);
    case UnaryOp::Ceil: return ceilf(x);
    case UnaryOp::Softplus: return x > 20.f ? x : log1pf(expf(x));
    case UnaryOp::Sin: return sinf(x);
    case UnaryOp::Cos: return cosf(x);
    case UnaryOp::LeakyRelu: return x >= 0.f ? x : alpha * x;
    case UnaryOp::Elu: return x >= 0.f ? x : alpha * (expf(x) - 1.f);
    case UnaryOp::Clip: return fminf(fmaxf(x, alpha), beta);
    case UnaryOp::HardSigmoid: return fminf(fmaxf(alpha * x + beta, 0.f), 1.f);
    case UnaryOp::HardSwish: return x * fminf(fmaxf(x / 6.f + 0.5f, 0.f), 1.f);
    case UnaryOp::Identity: return x;
    case UnaryOp::Sign: return x > 0.f ? 1.f : (x < 0.f ? -1.f : x);  // NaN and 0 stay
  }
  return x;
}

__global__ void binary_same_kernel(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_binary(op, a[i], b[i]);
}

__global__ void binary_strided_kernel(BinaryOp op, const float* a, const float* b, float* y, int64_t n, StridedDesc d) {
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

cudaError_t binary_f32(BinaryOp op, const float* a, const float* b, float* y, int64_t n, const StridedDesc& d,
                       bool contiguous_same, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (contiguous_same)
    binary_same_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n);
  else
    binary_strided_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n, d);
  return cudaGetLastError();
}

cudaError_t unary_f32(UnaryOp op, const float* x, float* y, int64_t n, float alpha, float beta, cudaStream_t s) {
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
