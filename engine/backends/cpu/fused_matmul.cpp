// FusedGemm and FusedMatMul: the Gemm/MatMul kernel (oneDNN matmul), then bias and the post-op tail
// in one loop over the output (one dispatch instead of two or three, one extra pass over a small
// output instead of one per op).
#include <cstring>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/gemv.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/sgemm_packed.h"

namespace ms::cpu::fused {
namespace {

using dnnl::memory;

struct FusedMatmulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

// 2-D A [M,K] (or transposed) times weights [K,N] (or stored [N,K]) + bias [N] + eltwise post-ops
// (and a residual [M,N] summed at its place among them) in one oneDNN matmul whose weights are in
// the layout the primitive prefers: reordered once per weights buffer (constant initializers in a
// compiled graph), not packed again on every call. f32, or bf16 operands and output (a bf16 Graph's;
// f32 accumulation inside oneDNN, the bias f32 or bf16).
Status matmul_prepacked(runtime::KernelContext& ctx, const Tensor& a, bool ta, const Tensor& w, bool tw,
                        const Tensor* bias, const Tensor* residual, float alpha, Tensor& y,
                        const std::vector<ops::PostOp>& post) {
  const int64_t m = y.dim(0), n = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  const bool f32 = a.dtype() == DType::F32;
  const memory::data_type t = to_dnnl(a.dtype());
  // A matrix-vector product streams the weights at the cache's rate; a compiled graph's constant
  // weights go through the packed sgemm (packed once). Both write the product, then the tail runs.
  const bool gemv = f32 && m <= nn::kGemvMaxRows;
  if (gemv || (f32 && alpha == 1.f && nn::packed_sgemm_applies(w))) {
    Tensor res;
    if (residual) res = residual->raw() == y.raw() ? residual->clone() : *residual;  // in place: keep it
    Status s = Status::ok();
    if (gemv)
      nn::gemv_f32(a.data<float>(), ta ? 1 : k, ta ? m : 1, w.data<float>(), tw, m, n, k, alpha, false,
                   y.data<float>());
    else
      s = nn::packed_sgemm(ctx, a.data<float>(), ta, w, tw, m, n, k, false, y.data<float>());
    if (s.is_ok()) {
      apply_tail(y.data<float>(), y.numel(), bias ? bias->data<float>() : nullptr, n,
                 residual ? res.data<float>() : nullptr, post);
      ctx.set_impl(gemv ? "fused:gemv" : "fused:" + ctx.impl());
      return Status::ok();
    }
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  // The residual is summed from dst (oneDNN's sum post-op): placed there first unless it is there.
  if (residual && residual->raw() != y.raw()) std::memcpy(y.raw(), residual->raw(), y.nbytes());
  const memory::desc a_md({m, k}, t, ta ? memory::dims{1, m} : memory::dims{k, 1});
  const memory::desc w_user({k, n}, t, tw ? memory::dims{1, k} : memory::dims{n, 1});
  // A few rows (batch-1 inference) make the matmul a matrix-vector product that streams the weights
  // once whatever their layout: the stored layout then costs no reorder and no per-call check of a
  // cached reorder (fingerprinting the weights costs as much as a tenth of such a call).
  const bool few_rows = m < 8;
  const memory::desc w_any = few_rows ? w_user : memory::desc({k, n}, t, memory::format_tag::any);
  const memory::desc b_md({1, n}, bias ? to_dnnl(bias->dtype()) : t, memory::dims{n, 1});
  const memory::desc y_md = plain_desc(y.shape(), t);
  std::string key = std::string(few_rows ? "fmatmul-plain|" : "fmatmul|") + std::string(dtype_name(a.dtype())) +
                    (bias ? std::string(dtype_name(bias->dtype())) : "") + "|" + std::to_string(m) + "x" +
                    std::to_string(n) + "x" + std::to_string(k) + "|" + std::to_string(ta) + std::to_string(tw) +
                    (bias ? "b" : "") + (residual ? "r" : "") + "|" + std::to_string(alpha);
  key += post_ops_key(post);
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return nn::guard_onednn(ctx, "fused matmul", [&]() -> Status {
    auto mp = dnn.cached<FusedMatmulPrimitive>(key, [&] {
      dnnl::primitive_attr attr = nn::user_scratchpad_attr();
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      attr.set_post_ops(onednn_post_ops(post, /*sum_residual=*/residual != nullptr));
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_any, bias ? b_md : memory::desc(), y_md), attr,
                                      dnn.engine());
      return std::make_shared<FusedMatmulPrimitive>(FusedMatmulPrimitive{pd, dnnl::matmul(pd)});
    });
    memory wmem(w_user, dnn.engine(), w.raw());
    if (mp->pd.weights_desc() != w_user) {
      MS_ASSIGN_OR_RETURN(wmem, nn::prepared_weights(ctx, dnn, w, w_user, mp->pd.weights_desc()));
      if (w.buffer() && w.buffer()->frozen()) ctx.keeps_packed_copy_of(w);  // reordered once, found by address
    }
    Tensor holder;
    MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, mp->pd.scratchpad_desc(), holder));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(a_md, dnn.engine(), a.raw())},
                                         {DNNL_ARG_WEIGHTS, wmem},
                                         {DNNL_ARG_DST, memory(y_md, dnn.engine(), y.raw())},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(b_md, dnn.engine(), bias->raw()));
    mp->prim.execute(dnn.stream(), args);
    dnn.stream().wait();
    ctx.set_impl("fused:" + impl_name(mp->pd));
    return Status::ok();
  });
}

// The prepacked path takes f32 operands: 2-D ones, or (MatMul) an N-D A times 2-D weights, run as
// the 2-D product of A's rows [M..., K] -> [prod M, K] (a transformer's projections and MLP); a
// residual of the output's shape; and (Gemm) a C that is a bias over N with beta 1.
Status try_prepacked(runtime::KernelContext& ctx, bool gemm, Tensor& y, const std::vector<ops::PostOp>& post) {
  Tensor a = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const DType t = y.dtype();
  if ((t != DType::F32 && t != DType::BF16) || a.dtype() != t || w.dtype() != t || w.rank() != 2 || a.numel() == 0 ||
      w.numel() == 0)
    return ctx.unsupported_case("not f32 or bf16 with 2-D weights");
  // The bias of a bf16 product: f32 or bf16 (oneDNN takes either).
  auto bias_type_ok = [t](const Tensor& c) { return c.dtype() == t || c.dtype() == DType::F32; };
  const ir::Node& node = ctx.node();
  // FusedMatMul's transB (fold-weight-transpose): W is [N, K], read as its transpose.
  const bool matmul_tw = !gemm && node.attr_int("transB", 0) != 0;
  const int64_t wk = w.dim(matmul_tw ? 1 : 0), wn = w.dim(matmul_tw ? 0 : 1);
  Tensor y2 = y;
  if (!gemm && a.rank() > 2 && y.rank() == a.rank() && a.shape().back() == wk) {
    a = a.reshaped({a.numel() / wk, wk});
    y2 = y.reshaped({y.numel() / wn, wn});
  }
  if (a.rank() != 2 || y2.rank() != 2) return ctx.unsupported_case("not 2-D");
  const Tensor* residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor r2;
  if (residual) {
    if (residual->dtype() != t || residual->shape() != y.shape()) return ctx.unsupported_case("residual");
    r2 = residual->reshaped(y2.shape());
  }
  bool ta = false, tw = matmul_tw;
  float alpha = 1.f;
  const Tensor* bias = nullptr;
  if (gemm) {
    ta = node.attr_int("transA", 0) != 0;
    tw = node.attr_int("transB", 0) != 0;
    alpha = node.attr_float("alpha", 1.f);
    if (ctx.has_input(2)) {
      const Tensor& c = ctx.input(2);
      if (node.attr_float("beta", 1.f) != 1.f || !bias_type_ok(c) || c.numel() != y.dim(1) ||
          (c.rank() == 2 && c.dim(0) != 1) || c.rank() > 2)
        return ctx.unsupported_case("C is not a bias");
      // oneDNN's output scale multiplies the bias too; Gemm scales only A*B.
      if (alpha != 1.f) return ctx.unsupported_case("alpha with C");
      bias = &c;
    }
  } else if (ctx.has_input(2)) {
    bias = &ctx.input(2);
    if (!bias_type_ok(*bias) || bias->numel() != y2.dim(1)) return ctx.unsupported_case("bias not over N");
  }
  return matmul_prepacked(ctx, a, ta, w, tw, bias, residual ? &r2 : nullptr, alpha, y2, post);
}

// A bf16 node the one-primitive path does not take (batched weights, Gemm's alpha with C): the
// anchor's kernel, then the tail in f32 over a copy, rounded back to bf16.
Status bf16_unfused(runtime::KernelContext& ctx, bool gemm, Tensor& y, const std::vector<ops::PostOp>& post,
                    const Tensor* b) {
  const Tensor* r = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor res;
  if (r) res = f32_of(*r);  // a bf16 residual widened before the anchor writes y (maybe its buffer)
  MS_RETURN_IF_ERROR(run_anchor(ctx, gemm ? "Gemm" : "MatMul", gemm ? 3 : 2, b));
  Tensor bias;
  if (!gemm && ctx.has_input(2)) bias = f32_of(ctx.input(2));
  Tensor acc = f32_of(y);
  apply_tail(acc.data<float>(), acc.numel(), bias.defined() ? bias.data<float>() : nullptr,
             bias.defined() ? bias.numel() : 1, r ? res.data<float>() : nullptr, post);
  round_to_bf16(acc.data<float>(), y.data<bf16>(), y.numel());
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

Status fused_matmul_kernel(runtime::KernelContext& ctx, bool gemm) {
  auto post = ops::parse_post_ops(ctx.node());
  if (!post) return post.status();
  Tensor& y = ctx.output(0);
  if (!y.defined()) return ctx.fail("output shape unknown before the run");
  if (y.numel() == 0) return Status::ok();
  if (y.dtype() != DType::F32 && y.dtype() != DType::BF16)
    return ctx.unsupported_case("fused post-ops need f32 or bf16");
  {
    Status s = try_prepacked(ctx, gemm, y, *post);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  // The anchors below take B as stored: a transB product's weights (fold-weight-transpose's, which
  // the prepacked path takes but where oneDNN lacks the type, bf16 below AVX-512) transposed first.
  Tensor bt;
  if (!gemm && ctx.node().attr_int("transB", 0) != 0) {
    const Tensor& w = ctx.input(1);
    if (w.rank() != 2) return ctx.fail("transB needs 2-D weights");
    MS_ASSIGN_OR_RETURN(bt, ctx.scratch(w.dtype(), {w.dim(1), w.dim(0)}));
    const size_t es = dtype_size(w.dtype());
    const auto* src = static_cast<const char*>(w.raw());
    auto* dst = static_cast<char*>(bt.raw());
    for (int64_t i = 0; i < w.dim(0); ++i)
      for (int64_t j = 0; j < w.dim(1); ++j)
        std::memcpy(dst + static_cast<size_t>(j * w.dim(0) + i) * es, src + static_cast<size_t>(i * w.dim(1) + j) * es,
                    es);
  }
  const Tensor* b = bt.defined() ? &bt : nullptr;
  if (y.dtype() == DType::BF16) return bf16_unfused(ctx, gemm, y, *post, b);
  const Tensor* r = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor res;
  if (r) res = r->raw() == y.raw() ? r->clone() : *r;  // in place: keep the residual
  MS_RETURN_IF_ERROR(run_anchor(ctx, gemm ? "Gemm" : "MatMul", gemm ? 3 : 2, b));
  const Tensor* bias = !gemm && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  apply_tail(y.data<float>(), y.numel(), bias ? bias->data<float>() : nullptr, bias ? bias->numel() : 1,
             r ? res.data<float>() : nullptr, *post);
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

}  // namespace

Status prepacked_product(runtime::KernelContext& ctx, bool gemm) {
  Tensor& y = ctx.output(0);
  if (!y.defined() || y.numel() == 0) return ctx.unsupported_case("output not allocated");
  Status s = try_prepacked(ctx, gemm, y, {});
  if (s.is_ok() && ctx.impl().rfind("fused:", 0) == 0) ctx.set_impl(ctx.impl().substr(6));  // a plain product
  return s;
}

void register_fused_matmul_kernels(runtime::KernelRegistry& r) {
  r.add(
      "FusedGemm", [](runtime::KernelContext& c) { return fused_matmul_kernel(c, true); }, ops::kFusedDomain);
  r.add(
      "FusedMatMul", [](runtime::KernelContext& c) { return fused_matmul_kernel(c, false); }, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
