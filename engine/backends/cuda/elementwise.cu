// Broadcasting binary ops, unary activations and the fused ops' epilogue, in f32, f16 and bf16
// (low-precision values are widened to f32 for the op table's math and rounded once on the store).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "engine/backends/cuda/index.cuh"

namespace ms::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 8 ? b : 65535 * 8);  // grid-stride loops cover the rest
}

__device__ __forceinline__ float load(float v) { return v; }
__device__ __forceinline__ float load(__half v) { return __half2float(v); }
__device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T store(float v);
template <> __device__ __forceinline__ float store<float>(float v) { return v; }
template <> __device__ __forceinline__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// The op table's functions (runtime switch on the op; the table's math is host and device code).
__device__ __forceinline__ float apply_binary(ew::Op op, float a, float b) { return ew::apply_binary(op, a, b); }

__device__ __forceinline__ float apply_unary(int op, float x, float alpha, float beta) {
  return ew::apply_unary(static_cast<ew::Op>(op), x, alpha, beta);
}

template <class T> __global__ void binary_same_kernel(ew::Op op, const T* a, const T* b, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = store<T>(apply_binary(op, load(a[i]), load(b[i])));
}

template <class T>
__global__ void binary_strided_kernel(ew::Op op, const T* a, const T* b, T* y, int64_t n, StridedDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    flat_offsets(i, d.rank, d.dims, d.a, d.b, ia, ib);
    y[i] = store<T>(apply_binary(op, load(a[ia]), load(b[ib])));
  }
}

template <class T> __global__ void unary_kernel(int op, const T* x, T* y, int64_t n, float alpha, float beta) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = store<T>(apply_unary(op, load(x[i]), alpha, beta));
}

// Bias and residual are of y's type; the chain runs in f32 and rounds once.
template <class T> __global__ void epilogue_kernel(T* y, const T* bias, const T* residual, Epilogue e) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < e.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = load(y[i]);
    if (bias) v += load(bias[(i / e.inner) % e.channels]);
    for (int k = 0; k < e.count; ++k)
      v = e.kind[k] == kPostAdd ? v + load(residual[i]) : apply_unary(e.kind[k], v, e.alpha[k], e.beta[k]);
    y[i] = store<T>(v);
  }
}

template <class T>
cudaError_t binary_t(ew::Op op, const void* a, const void* b, void* y, int64_t n, const StridedDesc& d, bool same,
                     cudaStream_t s) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* py = static_cast<T*>(y);
  if (same)
    binary_same_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, pa, pb, py, n);
  else
    binary_strided_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, pa, pb, py, n, d);
  return cudaGetLastError();
}

template <class T>
cudaError_t unary_t(ew::Op op, const void* x, void* y, int64_t n, float alpha, float beta, cudaStream_t s) {
  unary_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<int>(op), static_cast<const T*>(x), static_cast<T*>(y),
                                                     n, alpha, beta);
  return cudaGetLastError();
}

// One block per plane of `inner` elements sharing a channel (a conv's output, NCHW): the channel and
// its bias are read once, and the loop over the plane needs no division.
template <class T> __global__ void epilogue_planes_kernel(T* y, const T* bias, const T* residual, Epilogue e) {
  const int64_t plane = blockIdx.x;
  const float b = bias ? load(bias[plane % e.channels]) : 0.f;
  T* yp = y + plane * e.inner;
  const T* rp = residual ? residual + plane * e.inner : nullptr;
  for (int64_t j = threadIdx.x; j < e.inner; j += blockDim.x) {
    float v = load(yp[j]) + b;
    for (int k = 0; k < e.count; ++k)
      v = e.kind[k] == kPostAdd ? v + load(rp[j]) : apply_unary(e.kind[k], v, e.alpha[k], e.beta[k]);
    yp[j] = store<T>(v);
  }
}

template <class T> cudaError_t epilogue_t(void* y, const Epilogue& e, cudaStream_t s) {
  const int64_t planes = e.n / e.inner;
  if (e.inner >= 32 && e.n % e.inner == 0 && planes <= 0x7fffffff) {
    const int threads = e.inner >= 256 ? 256 : (e.inner >= 128 ? 128 : 64);
    epilogue_planes_kernel<T><<<static_cast<unsigned>(planes), threads, 0, s>>>(
        static_cast<T*>(y), static_cast<const T*>(e.bias), static_cast<const T*>(e.residual), e);
  } else {
    epilogue_kernel<T><<<blocks_for(e.n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(e.bias),
                                                            static_cast<const T*>(e.residual), e);
  }
  return cudaGetLastError();
}

// One operand element of a chain, widened to f32.
__device__ __forceinline__ float load_operand(const ChainDesc& d, int o, int64_t off) {
  switch (d.type[o]) {
    case static_cast<int>(ScalarType::F16): return load(static_cast<const __half*>(d.ptr[o])[off]);
    case static_cast<int>(ScalarType::BF16): return load(static_cast<const __nv_bfloat16*>(d.ptr[o])[off]);
    default: return static_cast<const float*>(d.ptr[o])[off];
  }
}

template <class TI, class TO> __global__ void chain_kernel(const TI* x, TO* y, int64_t n, ChainDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = load(x[i]);
    for (int k = 0; k < d.links; ++k) {
      const int kind = d.kind[k], o = d.operand[k];
      if (o >= 0) {
        int64_t off = 0, rem = i;
        for (int a = d.rank - 1; a >= 0; --a) {
          off += (rem % d.dims[a]) * d.stride[o][a];
          rem /= d.dims[a];
        }
        const float b = load_operand(d, o, off);
        v = d.side[k] == 0 ? apply_binary(static_cast<ew::Op>(kind), v, b)
                           : apply_binary(static_cast<ew::Op>(kind), b, v);
      } else if (kind == kChainSquare) {
        v = v * v;
      } else if (kind == kChainRoundBf16) {
        v = __bfloat162float(__float2bfloat16_rn(v));
      } else if (kind == kChainQdqU8 || kind == kChainQdqS8) {
        const bool s8 = kind == kChainQdqS8;
        v = ew::quantize_dequantize(v, d.alpha[k], d.beta[k], s8 ? -128.f : 0.f, s8 ? 127.f : 255.f);
      } else {
        v = apply_unary(kind, v, d.alpha[k], d.beta[k]);
      }
    }
    y[i] = store<TO>(v);
  }
}

template <class TI>
cudaError_t chain_in(const void* x, ScalarType out, void* y, int64_t n, const ChainDesc& d, cudaStream_t s) {
  const TI* xi = static_cast<const TI*>(x);
  switch (out) {
    case ScalarType::F32:
      chain_kernel<TI, float><<<blocks_for(n), kThreads, 0, s>>>(xi, static_cast<float*>(y), n, d);
      break;
    case ScalarType::F16:
      chain_kernel<TI, __half><<<blocks_for(n), kThreads, 0, s>>>(xi, static_cast<__half*>(y), n, d);
      break;
    case ScalarType::BF16:
      chain_kernel<TI, __nv_bfloat16><<<blocks_for(n), kThreads, 0, s>>>(xi, static_cast<__nv_bfloat16*>(y), n, d);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t elementwise_chain(ScalarType in, const void* x, ScalarType out, void* y, int64_t n, const ChainDesc& d,
                              cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (in) {
    case ScalarType::F32: return chain_in<float>(x, out, y, n, d, s);
    case ScalarType::F16: return chain_in<__half>(x, out, y, n, d, s);
    case ScalarType::BF16: return chain_in<__nv_bfloat16>(x, out, y, n, d, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t binary(ew::Op op, ScalarType t, const void* a, const void* b, void* y, int64_t n, const StridedDesc& d,
                   bool contiguous_same, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ScalarType::F32: return binary_t<float>(op, a, b, y, n, d, contiguous_same, s);
    case ScalarType::F16: return binary_t<__half>(op, a, b, y, n, d, contiguous_same, s);
    case ScalarType::BF16: return binary_t<__nv_bfloat16>(op, a, b, y, n, d, contiguous_same, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t unary(ew::Op op, ScalarType t, const void* x, void* y, int64_t n, float alpha, float beta, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ScalarType::F32: return unary_t<float>(op, x, y, n, alpha, beta, s);
    case ScalarType::F16: return unary_t<__half>(op, x, y, n, alpha, beta, s);
    case ScalarType::BF16: return unary_t<__nv_bfloat16>(op, x, y, n, alpha, beta, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t epilogue(ScalarType t, void* y, const Epilogue& e, cudaStream_t s) {
  if (e.n == 0 || (!e.bias && e.count == 0)) return cudaSuccess;
  switch (t) {
    case ScalarType::F32: return epilogue_t<float>(y, e, s);
    case ScalarType::F16: return epilogue_t<__half>(y, e, s);
    case ScalarType::BF16: return epilogue_t<__nv_bfloat16>(y, e, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ms::cuda
