// Helpers shared by the CUDA op wrappers (host side).
#pragma once

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_common.h"
#include "engine/backends/cuda/kernels.cuh"
#include "engine/ops/fused.h"

namespace ms::cuda {

// Broadcast strides of `in` against `out` (right-aligned, 0 where broadcast). False above kMaxRank.
inline bool broadcast_strides(const Shape& out, const Shape& in, int64_t* strides) {
  const int r = static_cast<int>(out.size());
  if (r > kMaxRank || in.size() > out.size()) return false;
  int64_t s = 1;
  for (int k = r - 1; k >= 0; --k) {
    const int ik = k - (r - static_cast<int>(in.size()));
    const int64_t d = ik >= 0 ? in[static_cast<size_t>(ik)] : 1;
    strides[k] = d == 1 ? 0 : s;
    s *= d;
  }
  return true;
}

// The strided description of a two-operand op over `out`: its dims and each operand's broadcast
// strides. False above kMaxRank.
inline bool broadcast_desc(const Shape& out, const Shape& a, const Shape& b, StridedDesc& d) {
  d.rank = static_cast<int>(out.size());
  if (!broadcast_strides(out, a, d.a) || !broadcast_strides(out, b, d.b)) return false;
  for (int k = 0; k < d.rank; ++k) d.dims[k] = out[static_cast<size_t>(k)];
  return true;
}

inline Shape row_major_strides(const Shape& dims) {
  Shape st(dims.size(), 1);
  for (int k = static_cast<int>(dims.size()) - 2; k >= 0; --k)
    st[static_cast<size_t>(k)] = st[static_cast<size_t>(k) + 1] * dims[static_cast<size_t>(k) + 1];
  return st;
}

// The copy that moves a 4-D tensor of logical dims [N, C, H, W] from NCHW to NHWC (to_nhwc) or back;
// a conv filter [K, C, R, S] goes to cuDNN's NHWC filter layout (KRSC) the same way.
inline CopyDesc nhwc_copy_desc(const Shape& s, bool to_nhwc) {
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  CopyDesc d;
  d.rank = 4;
  const int64_t dims_to[4] = {n, h, w, c}, src_to[4] = {c * h * w, w, 1, h * w};
  const int64_t dims_back[4] = {n, c, h, w}, src_back[4] = {h * w * c, 1, w * c, c};
  for (int k = 0; k < 4; ++k) {
    d.dims[k] = to_nhwc ? dims_to[k] : dims_back[k];
    d.src_stride[k] = to_nhwc ? src_to[k] : src_back[k];
  }
  int64_t st = 1;
  for (int k = 3; k >= 0; --k) {
    d.dst_stride[k] = st;
    st *= d.dims[k];
  }
  return d;
}

// Float dtypes the device kernels compute (f32, and f16/bf16 widened to f32 in registers).
inline bool is_device_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// The kernels' element type of a dtype (float and the index types Cast moves).
inline Expected<ScalarType> scalar_type(DType t) {
  switch (t) {
    case DType::F32: return ScalarType::F32;
    case DType::F16: return ScalarType::F16;
    case DType::BF16: return ScalarType::BF16;
    case DType::I32: return ScalarType::I32;
    case DType::I64: return ScalarType::I64;
    case DType::Bool: return ScalarType::Bool;
    default: return Status::error(ErrorCode::Unsupported, "no device kernels for " + std::string(dtype_name(t)));
  }
}

inline int64_t normalize_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Scratch bytes in device memory. Eager scratch comes from the allocator of its dtype, and integer
// dtypes live on the host there, so byte buffers (workspaces, flags) are asked for as floats.
inline Expected<Tensor> device_scratch(runtime::KernelContext& ctx, size_t bytes) {
  return ctx.scratch(DType::F32, {static_cast<int64_t>((bytes + 3) / 4)});
}

// Launch result -> Status naming the node and the kernel.
inline Status launched(runtime::KernelContext& ctx, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return ctx.fail(std::string(what) + " launch failed: " + cudaGetErrorString(e));
}

// Output i allocated (inferred shapes are preallocated; this covers the rest).
inline Expected<Tensor*> out(runtime::KernelContext& ctx, size_t i, DType dtype, const Shape& shape) {
  return ctx.allocate_output(i, dtype, shape);
}

// A small tensor's contents on the host (a copy after the stream drains when it lives on the device).
inline Expected<Tensor> host_copy(runtime::KernelContext& ctx, const Tensor& t) {
  if (t.device().is_cpu()) return t;
  Tensor h = Tensor::empty(t.dtype(), t.shape());
  CudaBackend& be = cuda_backend(ctx);
  if (t.nbytes()) MS_CUDA_CHECK(cudaMemcpyAsync(h.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, be.stream()));
  MS_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  return h;
}

// A fused op's residual: a residual that shares the output's memory (in-place plan) is copied away
// before Y is written.
inline Expected<Tensor> keep_residual(runtime::KernelContext& ctx, const Tensor& r, const Tensor& y) {
  if (r.raw() != y.raw()) return r;
  MS_ASSIGN_OR_RETURN(Tensor copy, ctx.scratch(r.dtype(), r.shape()));
  MS_CUDA_CHECK(cudaMemcpyAsync(copy.raw(), r.raw(), r.nbytes(), cudaMemcpyDefault, cuda_backend(ctx).stream()));
  return copy;
}

// The fused ops' post-ops as epilogue steps.
inline Status set_post_ops(runtime::KernelContext& ctx, const std::vector<ops::PostOp>& post, Epilogue& e) {
  if (post.size() > static_cast<size_t>(kMaxPostOps)) return ctx.unsupported_case("too many post-ops");
  e.count = 0;
  for (const auto& p : post) {
    const int kind = p.kind == ops::PostOp::Kind::Add ? kPostAdd : static_cast<int>(ops::post_op_math(p.kind));
    e.kind[e.count] = kind;
    e.alpha[e.count] = p.alpha;
    e.beta[e.count] = p.beta;
    ++e.count;
  }
  return Status::ok();
}

}  // namespace ms::cuda
