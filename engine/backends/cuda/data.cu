// Data movement: strided copies (Transpose, Slice, Split, Expand, Concat), Pad, Where, fills, Gather, Cast.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "engine/backends/cuda/index.cuh"

namespace ms::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 8 ? b : 65535 * 8);
}

template <class T> __global__ void strided_copy_kernel(const T* src, T* dst, int64_t n, CopyDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t is, id;
    flat_offsets(i, d.rank, d.dims, d.src_stride, d.dst_stride, is, id);
    dst[id] = src[is];
  }
}

template <class T> __global__ void fill_kernel(T* dst, int64_t n, T v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = v;
}

template <class T>
__global__ void gather_kernel(const T* data, const int64_t* idx, T* out, int64_t n, int64_t axis_dim, int64_t count,
                              int64_t inner, int* bad) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t in = i % inner;
    const int64_t c = (i / inner) % count;
    const int64_t o = i / (inner * count);
    int64_t k = idx[c];
    if (k < 0) k += axis_dim;
    if (k < 0 || k >= axis_dim) {
      if (bad) *bad = 1;
      out[i] = T{};
    } else {
      out[i] = data[(o * axis_dim + k) * inner + in];
    }
  }
}

template <class T> __device__ float to_f32(T v) { return static_cast<float>(v); }
template <> __device__ float to_f32<__half>(__half v) { return __half2float(v); }
template <> __device__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ T from_f32(float v) { return static_cast<T>(v); }
template <> __device__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Index of output position o of a padded axis in the input, or -1 (constant mode, outside).
__device__ int64_t pad_source(int64_t o, int64_t before, int64_t n, int mode) {
  int64_t x = o - before;
  if (x >= 0 && x < n) return x;
  if (mode == 0 || n == 0) return -1;
  if (mode == 3) return ((x % n) + n) % n;
  if (mode == 1 || n == 1) return x < 0 ? 0 : n - 1;
  const int64_t p = 2 * (n - 1);  // reflect: period 2(n-1)
  x = ((x % p) + p) % p;
  return x >= n ? p - x : x;
}

template <class T> __global__ void pad_kernel(const T* src, T* dst, int64_t n, PadDesc d, T fill) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, is = 0;
    bool inside = true;
    for (int k = d.rank - 1; k >= 0; --k) {
      const int64_t o = rem % d.out_dims[k];
      rem /= d.out_dims[k];
      const int64_t x = pad_source(o, d.before[k], d.in_dims[k], d.mode);
      if (x < 0) inside = false;
      is += x * d.in_stride[k];
    }
    dst[i] = inside ? src[is] : fill;
  }
}

template <class T>
__global__ void where_kernel(const uint8_t* cond, StridedDesc c, const T* a, const T* b, T* y, int64_t n,
                             StridedDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t ic, ia, ib, unused;
    flat_offsets(i, d.rank, d.dims, d.a, d.b, ia, ib);
    flat_offsets(i, d.rank, d.dims, c.a, c.a, ic, unused);
    y[i] = cond[ic] ? a[ia] : b[ib];
  }
}

template <class T>
__global__ void compare_kernel(CompareOp op, const T* a, const T* b, uint8_t* y, int64_t n, StridedDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    flat_offsets(i, d.rank, d.dims, d.a, d.b, ia, ib);
    const float x = static_cast<float>(a[ia]), z = static_cast<float>(b[ib]);
    bool r = false;
    switch (op) {
      case CompareOp::Equal: r = x == z; break;
      case CompareOp::Less: r = x < z; break;
      case CompareOp::Greater: r = x > z; break;
      case CompareOp::LessOrEqual: r = x <= z; break;
      case CompareOp::GreaterOrEqual: r = x >= z; break;
    }
    y[i] = r ? 1 : 0;
  }
}

__global__ void not_kernel(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = x[i] ? 0 : 1;
}

struct ScatterDims {
  int64_t d[kMaxRank];
};

template <class T>
__global__ void scatter_nd_kernel(const int64_t* idx, const T* upd, T* y, int64_t n, int depth, ScatterDims dims,
                                  int64_t slice, int* bad) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / slice, within = i % slice;
    int64_t off = 0;
    bool ok = true;
    for (int k = 0; k < depth; ++k) {
      int64_t v = idx[row * depth + k];
      if (v < 0) v += dims.d[k];
      if (v < 0 || v >= dims.d[k]) ok = false;
      off = off * dims.d[k] + v;
    }
    if (!ok) {
      *bad = 1;
      continue;
    }
    y[off * slice + within] = upd[i];
  }
}

__global__ void one_hot_kernel(const int64_t* idx, float* y, int64_t n, int64_t depth, int64_t inner, float off,
                               float on) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t in = i % inner, dd = (i / inner) % depth, o = i / (inner * depth);
    int64_t v = idx[o * inner + in];
    if (v < 0) v += depth;
    y[i] = v == dd ? on : off;
  }
}

template <class S, class D> __global__ void cast_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32<S>(src[i]));
}

// int <-> int casts keep every bit of an int64 that fits; float paths go through f32.
__global__ void cast_i64_i32(const int64_t* src, int32_t* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = static_cast<int32_t>(src[i]);
}
__global__ void cast_i32_i64(const int32_t* src, int64_t* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

template <class S> cudaError_t cast_from(const S* src, void* dst, ScalarType to, int64_t n, cudaStream_t s) {
  switch (to) {
    case ScalarType::F32:
      cast_kernel<S, float><<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<float*>(dst), n);
      break;
    case ScalarType::F16:
      cast_kernel<S, __half><<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<__half*>(dst), n);
      break;
    case ScalarType::BF16:
      cast_kernel<S, __nv_bfloat16><<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<__nv_bfloat16*>(dst), n);
      break;
    case ScalarType::I32:
      cast_kernel<S, int32_t><<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<int32_t*>(dst), n);
      break;
    case ScalarType::I64:
      cast_kernel<S, int64_t><<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<int64_t*>(dst), n);
      break;
    case ScalarType::Bool: return cudaErrorInvalidValue;  // to bool: a host value
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t strided_copy(const void* src, void* dst, int64_t n, const CopyDesc& d, int elem, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (elem) {
    case 1:
      strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint8_t*>(src),
                                                             static_cast<uint8_t*>(dst), n, d);
      break;
    case 2:
      strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src),
                                                             static_cast<uint16_t*>(dst), n, d);
      break;
    case 4:
      strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src),
                                                             static_cast<uint32_t*>(dst), n, d);
      break;
    case 8:
      strided_copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint64_t*>(src),
                                                             static_cast<uint64_t*>(dst), n, d);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t fill(void* dst, int64_t n, int elem, uint64_t bits, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (elem) {
    case 1:
      fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<uint8_t*>(dst), n, static_cast<uint8_t>(bits));
      break;
    case 2:
      fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<uint16_t*>(dst), n, static_cast<uint16_t>(bits));
      break;
    case 4:
      fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<uint32_t*>(dst), n, static_cast<uint32_t>(bits));
      break;
    case 8: fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<uint64_t*>(dst), n, bits); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t pad(const void* src, void* dst, int64_t n, const PadDesc& d, int elem, uint64_t fill_bits, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (elem) {
    case 1:
      pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), n, d,
                                                    static_cast<uint8_t>(fill_bits));
      break;
    case 2:
      pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), n,
                                                    d, static_cast<uint16_t>(fill_bits));
      break;
    case 4:
      pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), n,
                                                    d, static_cast<uint32_t>(fill_bits));
      break;
    case 8:
      pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), n,
                                                    d, fill_bits);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t where(const uint8_t* cond, const int64_t* cond_stride, const void* a, const void* b, void* y, int64_t n,
                  const StridedDesc& d, int elem, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  StridedDesc c;
  c.rank = d.rank;
  for (int k = 0; k < d.rank; ++k) c.a[k] = cond_stride[k];
  switch (elem) {
    case 2:
      where_kernel<<<blocks_for(n), kThreads, 0, s>>>(cond, c, static_cast<const uint16_t*>(a),
                                                      static_cast<const uint16_t*>(b), static_cast<uint16_t*>(y), n, d);
      break;
    case 4:
      where_kernel<<<blocks_for(n), kThreads, 0, s>>>(cond, c, static_cast<const uint32_t*>(a),
                                                      static_cast<const uint32_t*>(b), static_cast<uint32_t*>(y), n, d);
      break;
    case 8:
      where_kernel<<<blocks_for(n), kThreads, 0, s>>>(cond, c, static_cast<const uint64_t*>(a),
                                                      static_cast<const uint64_t*>(b), static_cast<uint64_t*>(y), n, d);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t compare(CompareOp op, ScalarType t, const void* a, const void* b, uint8_t* y, int64_t n,
                    const StridedDesc& d, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ScalarType::F32:
      compare_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const float*>(a), static_cast<const float*>(b),
                                                        y, n, d);
      break;
    case ScalarType::F16:
      compare_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const __half*>(a),
                                                        static_cast<const __half*>(b), y, n, d);
      break;
    case ScalarType::BF16:
      compare_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const __nv_bfloat16*>(a),
                                                        static_cast<const __nv_bfloat16*>(b), y, n, d);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  not_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t scatter_nd(const int64_t* indices, const void* updates, void* y, int64_t rows, int depth,
                       const int64_t* dims, int64_t slice, int elem, int* bad, cudaStream_t s) {
  const int64_t n = rows * slice;
  if (n == 0) return cudaSuccess;
  if (depth < 0 || depth > kMaxRank) return cudaErrorInvalidValue;
  ScatterDims sd{};
  for (int k = 0; k < depth; ++k) sd.d[k] = dims[k];
  switch (elem) {
    case 2:
      scatter_nd_kernel<<<blocks_for(n), kThreads, 0, s>>>(indices, static_cast<const uint16_t*>(updates),
                                                           static_cast<uint16_t*>(y), n, depth, sd, slice, bad);
      break;
    case 4:
      scatter_nd_kernel<<<blocks_for(n), kThreads, 0, s>>>(indices, static_cast<const uint32_t*>(updates),
                                                           static_cast<uint32_t*>(y), n, depth, sd, slice, bad);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t one_hot(const int64_t* indices, float* y, int64_t outer, int64_t depth, int64_t inner, float off, float on,
                    cudaStream_t s) {
  const int64_t n = outer * depth * inner;
  if (n == 0) return cudaSuccess;
  one_hot_kernel<<<blocks_for(n), kThreads, 0, s>>>(indices, y, n, depth, inner, off, on);
  return cudaGetLastError();
}

cudaError_t gather(const void* data, const int64_t* indices, void* out, int64_t outer, int64_t axis_dim, int64_t count,
                   int64_t inner, int elem, int* bad, cudaStream_t s) {
  const int64_t n = outer * count * inner;
  if (n == 0) return cudaSuccess;
  switch (elem) {
    case 2:
      gather_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(data), indices,
                                                       static_cast<uint16_t*>(out), n, axis_dim, count, inner, bad);
      break;
    case 4:
      gather_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(data), indices,
                                                       static_cast<uint32_t*>(out), n, axis_dim, count, inner, bad);
      break;
    case 8:
      gather_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint64_t*>(data), indices,
                                                       static_cast<uint64_t*>(out), n, axis_dim, count, inner, bad);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t cast(const void* src, ScalarType from, void* dst, ScalarType to, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (from == ScalarType::I64 && to == ScalarType::I32) {
    cast_i64_i32<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int64_t*>(src), static_cast<int32_t*>(dst), n);
    return cudaGetLastError();
  }
  if (from == ScalarType::I32 && to == ScalarType::I64) {
    cast_i32_i64<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int32_t*>(src), static_cast<int64_t*>(dst), n);
    return cudaGetLastError();
  }
  switch (from) {
    case ScalarType::F32: return cast_from(static_cast<const float*>(src), dst, to, n, s);
    case ScalarType::F16: return cast_from(static_cast<const __half*>(src), dst, to, n, s);
    case ScalarType::BF16: return cast_from(static_cast<const __nv_bfloat16*>(src), dst, to, n, s);
    case ScalarType::I32: return cast_from(static_cast<const int32_t*>(src), dst, to, n, s);
    case ScalarType::I64: return cast_from(static_cast<const int64_t*>(src), dst, to, n, s);
    case ScalarType::Bool: return cast_from(static_cast<const uint8_t*>(src), dst, to, n, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace ms::cuda
