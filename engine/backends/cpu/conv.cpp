// Conv, ConvTranspose and FusedConv (ai.modescope: Conv + activation, + residual sum + activation)
// kernels. All three run the one oneDNN convolution path (conv_onednn.h) for f32 and bf16 (bf16 src
// and weights, f32 accumulation inside oneDNN, bf16 dst) with 1-3 spatial axes: a Conv is a
// FusedConv without post-ops. They differ only in the activation layout they ask for. Other cases
// run the reference loops in conv_ref.cpp (a FusedConv: the Conv kernel, then its tail as one loop).
#include "engine/backends/cpu/conv_depthwise.h"
#include "engine/backends/cpu/conv_onednn.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/ops/blocked_layout.h"

namespace ms::cpu::nn {
namespace {

// Conv and ConvTranspose. bf16: activations in the layout the primitive prefers (its direct
// avx512_core_bf16 conv works on blocked layouts; over plain nchw oneDNN takes a gemm-based conv),
// reordered at the op's boundary, except a forward 1x1 conv: over plain nchw it is a plain matrix
// product, and the reorders would cost more (ResNet-50 batch-8 mixed-precision training step, 2
// cores: its 1x1 convs 156-166 ms blocked, 108-114 ms plain; the transposed 1x1 ones gain nothing).
// f32 keeps the plain layouts (the fused convs take the blocked ones), and takes the blocked ones
// where the layout pass chose them (activation_layout=blocked on a lone 3x3 ConvTranspose).
ConvLayout plain_op_layout(const runtime::KernelContext& ctx, const Tensor& x, const ops::WindowGeometry& g,
                           bool transpose) {
  bool pointwise = true;
  for (int64_t k : g.kernel) pointwise = pointwise && k == 1;
  ConvLayout l;
  l.preferred = (x.dtype() == DType::BF16 && (transpose || !pointwise)) ||
                ctx.node().attr_string("activation_layout", "") == "blocked";
  return l;
}

// FusedConv. 2-D convs run oneDNN's direct conv on the blocked layout with post-ops: over plain
// nchw oneDNN falls back to its gemm-based conv, slower than the direct one even with the reorders
// at the op's boundary. At O2 the layout pass removes those reorders between convs (src_blocked,
// dst_blocked, residual_blocked: nChw8c or nChw16c in memory, as layout_block says). "plain": the
// layout pass found the reorders
// cost more than the direct conv gains (a lone 1x1). Without the pass's choice, a conv (not
// grouped) of less than 5 MFLOPs is left plain as the pass would (conv_layout.cpp: the gemm-based
// conv is faster there), still one oneDNN conv with the post-ops fused into it.
ConvLayout fused_layout(const runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor& y) {
  const ir::Node& n = ctx.node();
  const std::string layout = n.attr_string("activation_layout", "");
  const bool small = ops::small_dense_conv(n.attr_int("group", 1), w.shape(), y.numel());
  ConvLayout l;
  l.preferred = layout == "blocked" || (layout.empty() && x.rank() == 4 && !small);
  l.src_blocked = l.preferred && n.attr_int("src_blocked", 0) != 0;
  l.dst_blocked = l.preferred && n.attr_int("dst_blocked", 0) != 0;
  l.residual_blocked = l.preferred && n.attr_int("residual_blocked", 0) != 0;
  l.block = n.attr_int("layout_block", 16);
  return l;
}

Status conv_kernel(runtime::KernelContext& ctx, bool transpose) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  if (auto dw = depthwise_again(ctx, {x, w, b, nullptr, y})) return *dw;
  if (auto again = conv_onednn_again(ctx, {x, w, b, nullptr, y}, "")) return *again;
  MS_ASSIGN_OR_RETURN(ops::WindowGeometry g,
                      geometry(ctx, transpose ? ops::WindowKind::ConvTranspose : ops::WindowKind::Conv, x.shape(),
                               Shape(w.shape().begin() + 2, w.shape().end())));
  const int64_t group = ctx.node().attr_int("group", 1);
  if (y.numel() == 0) return Status::ok();
  if (x.numel() == 0) {  // nothing to convolve: the output is the bias (or zero)
    std::memset(y.raw(), 0, y.nbytes());
    if (!b) return Status::ok();
  }
  if (onednn_conv_types(x, w, b, y) && g.spatial() <= 3 && x.numel() > 0) {
    const ConvArgs a{.x = x,
                     .w = w,
                     .b = b,
                     .residual = nullptr,
                     .y = y,
                     .g = g,
                     .group = group,
                     .transpose = transpose,
                     .layout = plain_op_layout(ctx, x, g, transpose)};
    Status s = conv_onednn(ctx, a);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  return transpose ? conv_transpose_reference(ctx, x, w, b, y, g, group) : conv_reference(ctx, x, w, b, y, g, group);
}

// A bf16 FusedConv's tail where oneDNN has no bf16 convs (AVX2): computed in f32 over the bf16
// conv output and the residual, rounded to bf16 once.
Status fused_conv_tail_bf16(runtime::KernelContext& ctx, Tensor& y, const Tensor* res,
                            const std::vector<ops::PostOp>& post) {
  const int64_t n = y.numel();
  if (res && res->dtype() != DType::BF16 && res->dtype() != DType::F32)
    return ctx.unsupported_case("fused post-ops need an f32 or bf16 residual");
  std::vector<float> acc(static_cast<size_t>(n)), resf(res ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; ++i) acc[static_cast<size_t>(i)] = static_cast<float>(y.data<bf16>()[i]);
  for (int64_t i = 0; res && i < n; ++i)
    resf[static_cast<size_t>(i)] =
        res->dtype() == DType::BF16 ? static_cast<float>(res->data<bf16>()[i]) : res->data<float>()[i];
  fused::apply_tail(acc.data(), n, nullptr, 1, res ? resf.data() : nullptr, post);
  for (int64_t i = 0; i < n; ++i) y.data<bf16>()[i] = bf16(acc[static_cast<size_t>(i)]);
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

// The fallback of a FusedConv oneDNN cannot run: the Conv kernel, then the tail in one loop. The
// residual may share the output's memory (in place): read it before the conv overwrites it.
Status fused_conv_fallback(runtime::KernelContext& ctx, const Tensor* r, const std::vector<ops::PostOp>& post) {
  Tensor& y = ctx.output(0);
  Tensor res;
  if (r) res = r->raw() == y.raw() ? r->clone() : *r;
  MS_RETURN_IF_ERROR(fused::run_anchor(ctx, "Conv", 3));
  if (y.dtype() == DType::BF16) return fused_conv_tail_bf16(ctx, y, r ? &res : nullptr, post);
  if (y.dtype() != DType::F32) return ctx.unsupported_case("fused post-ops need f32");
  fused::apply_tail(y.data<float>(), y.numel(), nullptr, 1, r ? res.data<float>() : nullptr, post);
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

Status fused_conv_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* r = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor& y = ctx.output(0);
  if (auto dw = depthwise_again(ctx, {x, w, b, r, y})) return *dw;
  if (auto again = conv_onednn_again(ctx, {x, w, b, r, y}, "fused:")) return *again;
  auto post = ops::parse_post_ops(ctx.node());
  if (!post) return post.status();
  if (y.numel() == 0) return Status::ok();
  if (onednn_conv_types(x, w, b, y) && x.numel() > 0 && x.rank() >= 3 && x.rank() <= 5) {
    auto g = geometry(ctx, ops::WindowKind::Conv, x.shape(), Shape(w.shape().begin() + 2, w.shape().end()));
    if (!g) return g.status();
    const ConvLayout layout = fused_layout(ctx, x, w, y);
    const ConvArgs a{.x = x,
                     .w = w,
                     .b = b,
                     .residual = r,
                     .y = y,
                     .g = *g,
                     .group = ctx.node().attr_int("group", 1),
                     .post = &*post,
                     .layout = layout,
                     .winograd = ctx.node().attr_string("algorithm", "") == "winograd",
                     .impl_prefix = "fused:"};
    Status s = conv_onednn(ctx, a);
    // Values kept blocked between convs have no plain fallback.
    const bool fixed = ctx.node().attr_int("src_blocked", 0) || ctx.node().attr_int("dst_blocked", 0) ||
                       ctx.node().attr_int("residual_blocked", 0);
    if (s.code() != ErrorCode::Unsupported || fixed) return s;
  }
  return fused_conv_fallback(ctx, r, *post);
}

}  // namespace

void register_conv_kernels(runtime::KernelRegistry& r) {
  r.add("Conv", [](runtime::KernelContext& c) { return conv_kernel(c, false); });
  r.add("ConvTranspose", [](runtime::KernelContext& c) { return conv_kernel(c, true); });
}

}  // namespace ms::cpu::nn

namespace ms::cpu::fused {

void register_fused_conv_kernels(runtime::KernelRegistry& r) {
  r.add("FusedConv", nn::fused_conv_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
