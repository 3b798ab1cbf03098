// Softmax, reductions over one middle axis, LayerNorm and inference BatchNorm (f32). One block per
// reduced row; block-wide reductions through shared memory.
#include <float.h>
#include <math.h>

#include "engine/backends/cuda/kernels.cuh"

namespace ms::cuda {
namespace {

constexpr int kThreads = 256;

// Sum (or max) of `v` over the block; every thread gets the result.
template <bool kMax> __device__ float block_reduce(float v) {
  __shared__ float buf[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_down_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  __syncthreads();  // buf may still be read by a previous call
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  const int nwarps = (blockDim.x + 31) / 32;
  v = threadIdx.x < nwarps ? buf[threadIdx.x] : (kMax ? -FLT_MAX : 0.f);
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) {
      const float other = __shfl_down_sync(0xffffffffu, v, o);
      v = kMax ? fmaxf(v, other) : v + other;
    }
  if (threadIdx.x == 0) buf[0] = v;
  __syncthreads();
  return buf[0];
}

// Row r of [outer, axis, inner] is (o, *, i) with r = o * inner + i.
__global__ void softmax_kernel(const float* x, float* y, int64_t axis, int64_t inner, bool log) {
  const int64_t row = blockIdx.x;
  const int64_t o = row / inner, in = row % inner;
  const float* xr = x + o * axis * inner + in;
  float* yr = y + o * axis * inner + in;
  float m = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < axis; k += blockDim.x) m = fmaxf(m, xr[k * inner]);
  m = block_reduce<true>(m);
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < axis; k += blockDim.x) sum += expf(xr[k * inner] - m);
  sum = block_reduce<false>(sum);
  const float lse = logf(sum);
  for (int64_t k = threadIdx.x; k < axis; k += blockDim.x) {
    const float z = xr[k * inner] - m;
    yr[k * inner] = log ? z - lse : expf(z) / sum;
  }
}

__global__ void reduce_kernel(ReduceOp op, const float* x, float* y, int64_t r, int64_t inner) {
  const int64_t row = blockIdx.x;
  const int64_t o = row / inner, in = row % inner;
  const float* xr = x + o * r * inner + in;
  const bool is_max = op == ReduceOp::Max, is_min = op == ReduceOp::Min;
  float acc = is_max ? -FLT_MAX : (is_min ? FLT_MAX : 0.f);
  for (int64_t k = threadIdx.x; k < r; k += blockDim.x) {
    const float v = xr[k * inner];
    if (is_max)
      acc = fmaxf(acc, v);
    else if (is_min)
      acc = fminf(acc, v);
    else
      acc += op == ReduceOp::SumSquare ? v * v : v;
  }
  if (is_max)
    acc = block_reduce<true>(acc);
  else if (is_min)
    acc = -block_reduce<true>(-acc);
  else
    acc = block_reduce<false>(acc);
  if (threadIdx.x == 0) y[row] = op == ReduceOp::Mean ? acc / static_cast<float>(r) : acc;
}

__global__ void layer_norm_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t cols,
                                  float eps) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) s += xr[k];
  const float mean = block_reduce<false>(s) / static_cast<float>(cols);
  float v = 0.f;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
    const float d = xr[k] - mean;
    v += d * d;
  }
  const float rstd = rsqrtf(block_reduce<false>(v) / static_cast<float>(cols) + eps);
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
    yr[k] = (xr[k] - mean) * rstd * scale[k] + (bias ? bias[k] : 0.f);
}

__global__ void batch_norm_kernel(const float* x, const float* scale, const float* bias, const float* mean,
                                  const float* var, float* y, int64_t total, int64_t c, int64_t inner, float eps) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ch = (i / inner) % c;
    y[i] = (x[i] - mean[ch]) * rsqrtf(var[ch] + eps) * scale[ch] + bias[ch];
  }
}

bool grid_ok(int64_t rows) { return rows > 0 && rows <= 0x7fffffff; }

}  // namespace

cudaError_t softmax_f32(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log,
                        cudaStream_t s) {
  if (!grid_ok(outer * inner) || axis == 0) return outer * inner == 0 ? cudaSuccess : cudaErrorInvalidValue;
  softmax_kernel<<<static_cast<unsigned>(outer * inner), kThreads, 0, s>>>(x, y, axis, inner, log);
  return cudaGetLastError();
}

cudaError_t reduce_f32(ReduceOp op, const float* x, float* y, int64_t outer, int64_t r, int64_t inner, cudaStream_t s) {
  if (!grid_ok(outer * inner)) return outer * inner == 0 ? cudaSuccess : cudaErrorInvalidValue;
  reduce_kernel<<<static_cast<unsigned>(outer * inner), kThreads, 0, s>>>(op, x, y, r, inner);
  return cudaGetLastError();
}

cudaError_t layer_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                           float eps, cudaStream_t s) {
  if (!grid_ok(rows)) return rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, scale, bias, y, cols, eps);
  return cudaGetLastError();
}

cudaError_t batch_norm_f32(const float* x, const float* scale, const float* bias, const float* mean, const float* var,
                           float* y, int64_t n, int64_t c, int64_t inner, float eps, cudaStream_t s) {
  const int64_t total = n * c * inner;
  if (total == 0) return cudaSuccess;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  batch_norm_kernel<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), kThreads, 0, s>>>(
      x, scale, bias, mean, var, y, total, c, inner, eps);
  return cudaGetLastError();
}

}  // namespace ms::cuda
