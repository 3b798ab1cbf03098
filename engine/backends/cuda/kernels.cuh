// Launchers of the CUDA backend's own kernels. Plain C++ (no engine headers) so the .cu files
// compile with nvcc alone; the ops in *_ops.cpp validate shapes and call these. Every launcher
// returns the launch's cudaError_t (cudaGetLastError after the launch).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/ops/elementwise_math.h"

namespace ms::cuda {

inline constexpr int kMaxRank = 8;

// Dims of the output and, per operand, its element strides broadcast to those dims (0 where the
// operand is broadcast).
struct StridedDesc {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a[kMaxRank] = {};
  int64_t b[kMaxRank] = {};
};

// ---- elementwise.cu ----
// Element types of the kernels that take several (F32, F16, BF16; I32 and I64 for Cast).
enum class ScalarType : int { F32, F16, BF16, I32, I64, Bool };

// The ops and their math are the op table's (ops/elementwise_math.h), computed in f32 for every
// float type `t` (F32, F16, BF16).
// y = op(a, b) for a binary op; `contiguous_same` skips index arithmetic when both operands have y's shape.
cudaError_t binary(ew::Op op, ScalarType t, const void* a, const void* b, void* y, int64_t n, const StridedDesc& d,
                   bool contiguous_same, cudaStream_t s);
// y = op(x, alpha, beta) for a unary op.
cudaError_t unary(ew::Op op, ScalarType t, const void* x, void* y, int64_t n, float alpha, float beta, cudaStream_t s);

// Epilogue of the fused ops: y = post_ops(y + bias[channel]) in place, channel = (i / inner) % channels;
// post-op kind -1 is "add the residual". Other kinds are ew::Op values of unary ops. Bias and
// residual have y's element type.
inline constexpr int kMaxPostOps = 8;
inline constexpr int kPostAdd = -1;
struct Epilogue {
  int64_t n = 0;
  int64_t channels = 1, inner = 1;
  const void* bias = nullptr;      // [channels] or null
  const void* residual = nullptr;  // same shape as y, for kPostAdd
  int count = 0;
  int kind[kMaxPostOps] = {};
  float alpha[kMaxPostOps] = {};
  float beta[kMaxPostOps] = {};
};
cudaError_t epilogue(ScalarType t, void* y, const Epilogue& e, cudaStream_t s);

// FusedElementwise: a chain of the op table's ops over the input, computed in f32 per element and
// rounded once on the store. A link's kind is an ew::Op (unary, or binary reading one operand with
// broadcast strides over the output's dims, the chain value on the `side` 0 = left), or one of the
// chain's own: kChainSquare (x * x), kChainRoundBf16 (a Cast to bf16: rounded there and back),
// kChainQdqU8 / kChainQdqS8 (QuantizeLinear then DequantizeLinear, scale alpha, zero point beta).
inline constexpr int kMaxChainLinks = 32;
inline constexpr int kMaxChainOperands = 8;
inline constexpr int kChainSquare = -2;
inline constexpr int kChainRoundBf16 = -3;
inline constexpr int kChainQdqU8 = -4;
inline constexpr int kChainQdqS8 = -5;
struct ChainDesc {
  int links = 0;
  int kind[kMaxChainLinks] = {};
  int operand[kMaxChainLinks] = {};  // binary links: the operand they read; -1 unary
  int side[kMaxChainLinks] = {};
  float alpha[kMaxChainLinks] = {};
  float beta[kMaxChainLinks] = {};
  int operands = 0;
  const void* ptr[kMaxChainOperands] = {};
  int type[kMaxChainOperands] = {};  // ScalarType (F32, F16, BF16)
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride[kMaxChainOperands][kMaxRank] = {};
};
cudaError_t elementwise_chain(ScalarType in, const void* x, ScalarType out, void* y, int64_t n, const ChainDesc& d,
                              cudaStream_t s);

// ---- reduce.cu ----
// Softmax / LogSoftmax over the middle axis of [outer, axis, inner].
cudaError_t softmax_f32(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log, cudaStream_t s);
enum class ReduceOp : int { Sum, Mean, Max, Min, SumSquare };
// Reduces the middle axis of [outer, r, inner].
cudaError_t reduce_f32(ReduceOp op, const float* x, float* y, int64_t outer, int64_t r, int64_t inner, cudaStream_t s);
// LayerNorm over the last `cols` of [rows, cols]; scale/bias of [cols] (bias may be null).
cudaError_t layer_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                           float eps, cudaStream_t s);
// Inference BatchNorm on [n, c, inner].
cudaError_t batch_norm_f32(const float* x, const float* scale, const float* bias, const float* mean, const float* var,
                           float* y, int64_t n, int64_t c, int64_t inner, float eps, cudaStream_t s);

// ---- data.cu ----
// dst[i] = src[sum_k idx_k * src_stride_k] for i over dims (row-major dst, dst_stride = contiguous
// unless given), elements of `elem` bytes (1, 2, 4 or 8). Covers Transpose, Slice, Expand, Concat
// (one call per input into a strided window of dst) and Pad (after a fill).
struct CopyDesc {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t src_stride[kMaxRank] = {};
  int64_t dst_stride[kMaxRank] = {};
};
cudaError_t strided_copy(const void* src, void* dst, int64_t n, const CopyDesc& d, int elem, cudaStream_t s);
cudaError_t fill(void* dst, int64_t n, int elem, uint64_t bits, cudaStream_t s);
// Gather along an axis: data [outer, axis_dim, inner], indices (int64, negative wrap) [count] ->
// out [outer, count, inner]. Out-of-range indices set *bad (device int, unless null: indices checked
// before) to 1 and write zeros.
cudaError_t gather(const void* data, const int64_t* indices, void* out, int64_t outer, int64_t axis_dim, int64_t count,
                   int64_t inner, int elem, int* bad, cudaStream_t s);
// Pad by index mapping: every output element reads the input element its mode maps it to, or
// `fill_bits` (constant mode) outside the input. Negative pads crop. Mode: 0 constant, 1 edge,
// 2 reflect (the edge not repeated), 3 wrap.
struct PadDesc {
  int rank = 0;
  int mode = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t in_stride[kMaxRank] = {};
  int64_t before[kMaxRank] = {};
};
cudaError_t pad(const void* src, void* dst, int64_t n, const PadDesc& d, int elem, uint64_t fill_bits, cudaStream_t s);
// y = cond ? a : b with broadcasting: `d.a`/`d.b` are a's and b's strides, `cond_stride` the
// condition's (bytes, nonzero = true), all over d.dims.
cudaError_t where(const uint8_t* cond, const int64_t* cond_stride, const void* a, const void* b, void* y, int64_t n,
                  const StridedDesc& d, int elem, cudaStream_t s);
cudaError_t cast(const void* src, ScalarType from, void* dst, ScalarType to, int64_t n, cudaStream_t s);
// y[i] (bytes, 0/1) = a OP b with broadcasting (strides in d.a / d.b), a and b of float type t.
enum class CompareOp : int { Equal, Less, Greater, LessOrEqual, GreaterOrEqual };
cudaError_t compare(CompareOp op, ScalarType t, const void* a, const void* b, uint8_t* y, int64_t n,
                    const StridedDesc& d, cudaStream_t s);
// y[i] = !x[i] over bytes (0/1).
cudaError_t logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t s);
// ScatterND without reduction, after y holds a copy of the data: for each of `rows` index tuples
// (int64, `depth` entries, negative ones wrap against `dims`), the slice of `slice` elements at that
// position of y becomes the update row. Out-of-range indices set *bad and write nothing.
cudaError_t scatter_nd(const int64_t* indices, const void* updates, void* y, int64_t rows, int depth,
                       const int64_t* dims, int64_t slice, int elem, int* bad, cudaStream_t s);
// OneHot: y[o, d, i] = (idx[o, i] == d, negative indices counting back from depth) ? on : off, for
// y of [outer, depth, inner] in f32.
cudaError_t one_hot(const int64_t* indices, float* y, int64_t outer, int64_t depth, int64_t inner, float off, float on,
                    cudaStream_t s);

}  // namespace ms::cuda
