// FusedGemm and FusedMatMul: the Gemm/MatMul kernel (oneDNN matmul), then bias and the post-op tail
// in one loop over the output (one dispatch instead of two or three, one extra pass over a small
// output instead of one per op).
#include "engine/backends/cpu/fused_internal.h"

namespace ms::cpu::fused {
namespace {

Status fused_matmul_kernel(runtime::KernelContext& ctx, bool gemm) {
  auto post = ops::parse_post_ops(ctx.node());
  if (!post) return post.status();
  Tensor& y = ctx.output(0);
  if (!y.defined()) return ctx.fail("output shape unknown before the run");
  if (y.numel() == 0) return Status::ok();
  if (y.dtype() != DType::F32) return ctx.unsupported_case("fused post-ops need f32");
  const Tensor* r = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor res;
  if (r) res = r->raw() == y.raw() ? r->clone() : *r;  // in place: keep the residual
  MS_RETURN_IF_ERROR(run_anchor(ctx, gemm ? "Gemm" : "MatMul", gemm ? 3 : 2));
  const Tensor* bias = !gemm && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  apply_tail(y.data<float>(), y.numel(), bias ? bias->data<float>() : nullptr, bias ? bias->numel() : 1,
             r ? res.data<float>() : nullptr, *post);
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

}  // namespace

void register_fused_matmul_kernels(runtime::KernelRegistry& r) {
  r.add("FusedGemm", [](runtime::KernelContext& c) { return fused_matmul_kernel(c, true); }, ops::kFusedDomain);
  r.add("FusedMatMul", [](runtime::KernelContext& c) { return fused_matmul_kernel(c, false); }, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
