// Gemm, MatMul and the compiler's FusedGemm/FusedMatMul on cuBLASLt (f32 with f32 compute and no
// TF32, so results match the CPU reference within the usual tolerance; bf16 and f16 operands on the
// tensor cores, accumulating in f32), then one epilogue kernel for the bias, activations and
// residual of the fused forms.
//
// Row-major Y[M,N] = A[M,K] B[K,N] is column-major Y^T = B^T A^T: cuBLASLt gets B as its first
// operand and A as its second, both read as column-major with their row-major leading dimensions.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <tuple>

#include "engine/backends/cuda/cublaslt_library.h"
#include "engine/backends/cuda/ops_util.h"
#include "engine/core/lru_cache.h"

namespace ms::cuda {
namespace {

constexpr size_t kWorkspace = 8 << 20;

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_y = 0;  // elements; 0 = broadcast across the batch
  // Alignment in bytes that A, B and Y all have (4..256). cuBLASLt's heuristic assumes 256 unless
  // told; an algorithm picked for 256 fails with INVALID_VALUE on operands at a 64-byte arena
  // offset or inside a view.
  uint32_t align = 256;
  cudaDataType_t type = CUDA_R_32F;  // of A, B and Y alike
  bool operator<(const GemmShape& o) const {
    return std::tie(m, n, k, ta, tb, batch, stride_a, stride_b, stride_y, align, type) <
           std::tie(o.m, o.n, o.k, o.ta, o.tb, o.batch, o.stride_a, o.stride_b, o.stride_y, o.align, o.type);
  }
};

// Descriptors and the heuristic's algorithm, made once per shape and destroyed with the plan.
struct GemmPlan {
  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() {
    for (cublasLtMatrixLayout_t l : {la, lb, ly})
      if (l) cublaslt_api().layout_destroy(l);
    if (op) cublaslt_api().desc_destroy(op);
  }
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ly = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// Plans kept, the least recently used going first (descriptors and an algorithm: a few KB each).
constexpr size_t kMaxPlans = 1024;

Status make_layout(cublasLtMatrixLayout_t* l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                   int64_t batch, int64_t stride) {
  MS_CUBLAS_CHECK(cublaslt_api().layout_create(l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    MS_CUBLAS_CHECK(cublaslt_api().layout_set_attribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    MS_CUBLAS_CHECK(
        cublaslt_api().layout_set_attribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return Status::ok();
}

Expected<std::shared_ptr<const GemmPlan>> plan_for(CudaBackend& be, const GemmShape& s) {
  static std::mutex mu;
  // Never destroyed: no descriptor is destroyed while the process exits.
  static auto& plans = *new LruCache<GemmShape, std::shared_ptr<const GemmPlan>>(kMaxPlans);
  std::lock_guard<std::mutex> lock(mu);
  if (const std::shared_ptr<const GemmPlan>* hit = plans.find(s)) return *hit;
  auto plan = std::make_shared<GemmPlan>();
  GemmPlan& p = *plan;
  MS_CUBLAS_CHECK(cublaslt_api().desc_create(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Column-major roles: first operand = B (N x K after its op), second = A (K x M after its op).
  const cublasOperation_t op_first = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  MS_CUBLAS_CHECK(cublaslt_api().desc_set_attribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  MS_CUBLAS_CHECK(cublaslt_api().desc_set_attribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
  // B row-major [K,N] (or [N,K] when transposed) read column-major: N x K with ld N (or K x N, ld K).
  MS_RETURN_IF_ERROR(
      make_layout(&p.la, s.type, s.tb ? s.k : s.n, s.tb ? s.n : s.k, s.tb ? s.k : s.n, s.batch, s.stride_b));
  MS_RETURN_IF_ERROR(
      make_layout(&p.lb, s.type, s.ta ? s.m : s.k, s.ta ? s.k : s.m, s.ta ? s.m : s.k, s.batch, s.stride_a));
  MS_RETURN_IF_ERROR(make_layout(&p.ly, s.type, s.n, s.m, s.n, s.batch, s.stride_y));
  cublasLtMatmulPreference_t pref = nullptr;
  MS_CUBLAS_CHECK(cublaslt_api().preference_create(&pref));
  const size_t ws = kWorkspace;
  MS_CUBLAS_CHECK(
      cublaslt_api().preference_set_attribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    MS_CUBLAS_CHECK(cublaslt_api().preference_set_attribute(pref, attr, &s.align, sizeof(s.align)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t hs =
      cublaslt_api().algo_get_heuristic(be.cublaslt(), p.op, p.la, p.lb, p.ly, p.ly, pref, 1, &result, &found);
  cublaslt_api().preference_destroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
    return Status::error(ErrorCode::Unsupported, "cuBLASLt has no algorithm for M=" + std::to_string(s.m) +
                                                     " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k));
  p.algo = result.algo;
  p.workspace = result.workspaceSize;
  return plans.put(s, std::move(plan));
}

// Largest power of two (at most 256) that divides every address.
uint32_t common_alignment(std::initializer_list<const void*> ptrs) {
  uint32_t a = 256;
  for (const void* p : ptrs) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    while (a > 4 && v % a) a /= 2;
  }
  return a;
}

// Y = alpha * op(A) op(B) + beta * Y on the stream.
Status run_gemm(runtime::KernelContext& ctx, const GemmShape& shape, const void* a, const void* b, void* y, float alpha,
                float beta) {
  CudaBackend& be = cuda_backend(ctx);
  GemmShape s = shape;
  s.align = common_alignment({a, b, y});
  MS_ASSIGN_OR_RETURN(std::shared_ptr<const GemmPlan> p, plan_for(be, s));
  Tensor ws;
  void* ws_ptr = nullptr;
  if (p->workspace) {  // 256-byte aligned inside a slightly larger scratch
    MS_ASSIGN_OR_RETURN(ws, device_scratch(ctx, p->workspace + 256));
    const auto v = reinterpret_cast<uintptr_t>(ws.raw());
    ws_ptr = reinterpret_cast<void*>((v + 255) / 256 * 256);
  }
  MS_CUBLAS_CHECK(cublaslt_api().matmul(be.cublaslt(), p->op, &alpha, b, p->la, a, p->lb, &beta, y, p->ly, y, p->ly,
                                        &p->algo, ws_ptr, p->workspace, be.stream()));
  return Status::ok();
}

// Y <- broadcast(C) (Gemm's C, unidirectionally broadcastable to [M,N]).
Status fill_broadcast(runtime::KernelContext& ctx, const Tensor& c, Tensor& y) {
  CopyDesc d;
  d.rank = static_cast<int>(y.shape().size());
  if (!broadcast_strides(y.shape(), c.shape(), d.src_stride)) return ctx.unsupported_case("C rank");
  const Shape ys = row_major_strides(y.shape());
  for (int k = 0; k < d.rank; ++k) {
    d.dims[k] = y.shape()[static_cast<size_t>(k)];
    d.dst_stride[k] = ys[static_cast<size_t>(k)];
  }
  return launched(
      ctx,
      strided_copy(c.raw(), y.raw(), y.numel(), d, static_cast<int>(dtype_size(y.dtype())), cuda_backend(ctx).stream()),
      "gemm C");
}

// MatMul shapes: 2-D x 2-D, N-D x 2-D (batch folded into M), N-D x N-D with equal batch dims.
bool matmul_shape(const Shape& as, const Shape& bs, GemmShape& g) {
  if (as.size() < 2 || bs.size() < 2) return false;
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) return false;
  int64_t batch_a = 1, batch_b = 1;
  for (size_t i = 0; i + 2 < as.size(); ++i) batch_a *= as[i];
  for (size_t i = 0; i + 2 < bs.size(); ++i) batch_b *= bs[i];
  g.n = n;
  g.k = k;
  if (batch_b == 1 && bs.size() == 2) {
    g.m = m * batch_a;
    return true;
  }
  if (as.size() != bs.size() || batch_a != batch_b) return false;
  for (size_t i = 0; i + 2 < as.size(); ++i)
    if (as[i] != bs[i]) return false;
  g.m = m;
  g.batch = batch_a;
  g.stride_a = m * k;
  g.stride_b = k * n;
  g.stride_y = m * n;
  return true;
}

Status epilogue(runtime::KernelContext& ctx, Tensor& y, const void* bias, int64_t channels, int64_t inner,
                const void* residual, const std::vector<ops::PostOp>& post) {
  Epilogue e;
  e.n = y.numel();
  e.bias = bias;
  e.channels = channels;
  e.inner = inner;
  e.residual = residual;
  MS_RETURN_IF_ERROR(set_post_ops(ctx, post, e));
  return launched(ctx, cuda::epilogue(*scalar_type(y.dtype()), y.raw(), e, cuda_backend(ctx).stream()), "epilogue");
}

Status matmul_like(runtime::KernelContext& ctx, bool gemm, bool fused) {
  Tensor& y = ctx.output(0);
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  if (!y.defined() || !is_device_float(y.dtype()) || a0.dtype() != y.dtype() || b0.dtype() != y.dtype())
    return cpu_fallback(ctx);
  if (y.numel() == 0) return Status::ok();
  std::vector<ops::PostOp> post;
  if (fused) {
    auto p = ops::parse_post_ops(ctx.node());
    if (!p) return p.status();
    post = std::move(*p);
  }
  const ir::Node& node = ctx.node();
  GemmShape g;
  g.type = y.dtype() == DType::F32 ? CUDA_R_32F : y.dtype() == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
  float alpha = 1.f, beta = 0.f;
  if (gemm) {
    if (a0.rank() != 2 || b0.rank() != 2) return cpu_fallback(ctx);
    g.ta = node.attr_int("transA", 0) != 0;
    g.tb = node.attr_int("transB", 0) != 0;
    g.m = g.ta ? a0.dim(1) : a0.dim(0);
    g.k = g.ta ? a0.dim(0) : a0.dim(1);
    g.n = g.tb ? b0.dim(0) : b0.dim(1);
    alpha = node.attr_float("alpha", 1.f);
  } else if (node.attr_int("transB", 0) != 0 || !matmul_shape(a0.shape(), b0.shape(), g)) {
    // transB: a CPU pipeline's FusedMatMul (fold-weight-transpose), which device pipelines do not make.
    return cpu_fallback(ctx);
  }
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* a, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(1));
  Tensor residual;
  const size_t r_index = 3;
  if (fused && ctx.has_input(r_index)) {
    MS_ASSIGN_OR_RETURN(const Tensor* r, in.get(r_index));
    MS_ASSIGN_OR_RETURN(residual, keep_residual(ctx, *r, y));
    if (residual.dtype() != y.dtype()) return cpu_fallback(ctx);
  }
  const void* bias = nullptr;
  if (gemm && ctx.has_input(2)) {
    MS_ASSIGN_OR_RETURN(const Tensor* c, in.get(2));
    if (c->dtype() != y.dtype()) return cpu_fallback(ctx);
    MS_RETURN_IF_ERROR(fill_broadcast(ctx, *c, y));
    beta = node.attr_float("beta", 1.f);
  } else if (!gemm && ctx.has_input(2)) {
    MS_ASSIGN_OR_RETURN(const Tensor* c, in.get(2));
    if (c->dtype() != y.dtype() || c->numel() != g.n) return cpu_fallback(ctx);
    bias = c->raw();
  }
  MS_RETURN_IF_ERROR(run_gemm(ctx, g, a->raw(), b->raw(), y.raw(), alpha, beta));
  if (bias || !post.empty())
    MS_RETURN_IF_ERROR(epilogue(ctx, y, bias, g.n, 1, residual.defined() ? residual.raw() : nullptr, post));
  ctx.set_impl(fused ? "cuda:cublaslt+epilogue" : "cuda:cublaslt");
  return Status::ok();
}

}  // namespace

void register_blas_ops(runtime::KernelRegistry& r) {
  r.add("Gemm", [](runtime::KernelContext& c) { return matmul_like(c, true, false); });
  r.add("MatMul", [](runtime::KernelContext& c) { return matmul_like(c, false, false); });
  r.add(
      "FusedGemm", [](runtime::KernelContext& c) { return matmul_like(c, true, true); }, ops::kFusedDomain);
  r.add(
      "FusedMatMul", [](runtime::KernelContext& c) { return matmul_like(c, false, true); }, ops::kFusedDomain);
}

}  // namespace ms::cuda
