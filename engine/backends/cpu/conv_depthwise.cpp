#include "engine/backends/cpu/conv_depthwise.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/depthwise_row.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::nn {
namespace {

#define LOADV(p) MS_LOADV(V, p)

template <class V>
[[gnu::always_inline]] inline void dw_rows(const float* x, const float* w, const float* bias, float* y,
                                           const DepthwiseProblem& p, const std::vector<ops::PostOp>& post,
                                           int64_t row0, int64_t row1) {
  constexpr int B = kLanes<V>;
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t plane = row / p.oh, r = row % p.oh;  // plane: (image, channel block)
    const int64_t c = plane % (p.channels / B);
    const float* xc = x + plane * p.ih * p.iw * B;
    const float* wc = w + c * p.kh * p.kw * B;
    float* yr = y + row * p.ow * B;
    const V bv = bias ? LOADV(bias + c * B) : V{};
    const float* rows[kMaxDepthwiseKernel];
    const int64_t ih0 = r * p.sh - p.ph;
    for (int64_t i = 0; i < p.kh; ++i) rows[i] = ih0 + i >= 0 && ih0 + i < p.ih ? xc + (ih0 + i) * p.iw * B : nullptr;
    const DwRow geom{.iw = p.iw, .ow = p.ow, .kh = p.kh, .kw = p.kw, .sw = p.sw, .pw = p.pw};
    depthwise_row_any<V>(rows, wc, bv, yr, geom, /*clamp=*/false, V{}, V{});
    // The row's activations while it is in L1 (rows are short: one loop, one thread).
    if (!post.empty()) fused::apply_tail(yr, p.ow * B, nullptr, 1, nullptr, post);
  }
}

MS_TARGET_AVX512 void dw_rows_avx512(const float* x, const float* w, const float* b, float* y,
                                     const DepthwiseProblem& p, const std::vector<ops::PostOp>& post, int64_t r0,
                                     int64_t r1) {
  dw_rows<vec16>(x, w, b, y, p, post, r0, r1);
}
MS_TARGET_AVX2 void dw_rows_avx2(const float* x, const float* w, const float* b, float* y, const DepthwiseProblem& p,
                                 const std::vector<ops::PostOp>& post, int64_t r0, int64_t r1) {
  dw_rows<vec8>(x, w, b, y, p, post, r0, r1);
}
// Without the instruction set the block was chosen for (a capped width in tests): the same vectors
// of the block's width, as the baseline compiles them.
void dw_rows_plain(const float* x, const float* w, const float* b, float* y, const DepthwiseProblem& p,
                   const std::vector<ops::PostOp>& post, int64_t r0, int64_t r1) {
  if (p.block == 16)
    dw_rows<vec16>(x, w, b, y, p, post, r0, r1);
  else
    dw_rows<vec8>(x, w, b, y, p, post, r0, r1);
}

#undef LOADV

// What a depthwise node keeps between calls: the parsed call and its packed weights.
struct DepthwiseMemo {
  std::string op_type, domain;
  std::map<std::string, ir::Attribute> attrs;
  Shape x, w, y;
  bool has_bias = false;
  DepthwiseProblem p;
  std::vector<ops::PostOp> post;
  std::weak_ptr<Buffer> w_source;  // the frozen weights the packed ones were made from
  size_t w_offset = 0;
  std::vector<float> packed;
  std::string impl;
};

// MODESCOPE_DEPTHWISE: "onednn" (oneDNN's for every depthwise conv), "ours" (ours wherever it
// applies), else the default choice.
enum class Choice { Default, OneDnn, Ours };
Choice depthwise_choice() {
  static const Choice c = [] {
    const char* e = std::getenv("MODESCOPE_DEPTHWISE");
    const std::string v = e ? e : "";
    return v == "onednn" ? Choice::OneDnn : v == "ours" ? Choice::Ours : Choice::Default;
  }();
  return c;
}

// An activation oneDNN 2.6's jit depthwise conv computes slowly in its injector (Swish, Sigmoid) or
// not at all (Gelu: its reference conv, or our loop over the result after the primitive).
bool slow_in_onednn(const std::vector<ops::PostOp>& post) {
  for (const auto& p : post)
    if (p.kind == ops::PostOp::Kind::Swish || p.kind == ops::PostOp::Kind::Sigmoid || p.kind == ops::PostOp::Kind::Gelu)
      return true;
  return false;
}

Status run(runtime::KernelContext& ctx, const DepthwiseMemo& m, const Tensor& x, const Tensor& w, const Tensor* b,
           Tensor& y) {
  std::vector<float> own;
  const float* packed = m.packed.data();
  if (m.packed.empty() || !w.buffer() || w.byte_offset() != m.w_offset || m.w_source.lock() != w.buffer()) {
    if (w.buffer() && w.buffer()->released())
      return internal_error("depthwise conv: its weights were released once packed");
    own = pack_depthwise_weights(w.data<float>(), m.p.channels, m.p.kh, m.p.kw, m.p.block);
    packed = own.data();
  } else {
    ctx.keeps_packed_copy_of(w);
  }
  depthwise_blocked(x.data<float>(), packed, b ? b->data<float>() : nullptr, y.data<float>(), m.p, m.post);
  ctx.set_impl(m.impl);
  return Status::ok();
}

}  // namespace

void depthwise_blocked(const float* x, const float* w_packed, const float* bias, float* y, const DepthwiseProblem& p,
                       const std::vector<ops::PostOp>& post) {
  const int64_t rows = p.batch * (p.channels / p.block) * p.oh;
  const int width = simd_width();
  auto body = [&](int64_t r0, int64_t r1) {
    if (p.block == 16 && width >= 16)
      dw_rows_avx512(x, w_packed, bias, y, p, post, r0, r1);
    else if (p.block == 8 && width >= 8)
      dw_rows_avx2(x, w_packed, bias, y, p, post, r0, r1);
    else
      dw_rows_plain(x, w_packed, bias, y, p, post, r0, r1);
  };
  // Rows in contiguous runs per thread (neighbouring rows share input rows); one thread for small
  // convs, whose fork would cost more than it saves.
  const double macs = static_cast<double>(rows) * static_cast<double>(p.ow * p.block * p.kh * p.kw);
  const int threads = macs < 2e5 ? 1 : omp_get_max_threads();
  if (threads < 2 || rows < 2) {
    body(0, rows);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t n = omp_get_num_threads(), t = omp_get_thread_num();
    body(rows * t / n, rows * (t + 1) / n);
  }
}

std::vector<float> pack_depthwise_weights(const float* w, int64_t channels, int64_t kh, int64_t kw, int64_t block) {
  std::vector<float> out(static_cast<size_t>(channels * kh * kw));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < kh * kw; ++t)
      out[static_cast<size_t>(((c / block) * kh * kw + t) * block + c % block)] = w[c * kh * kw + t];
  return out;
}

bool depthwise_applies(const ConvArgs& a) {
  const Choice choice = depthwise_choice();
  if (choice == Choice::OneDnn || a.transpose || a.x.rank() != 4 || a.w.rank() != 4) return false;
  // By default where oneDNN's activation is the slow part, and on large outputs (56x56 or more),
  // where ours was faster with a Relu or Clip too: MobileNetV2's ReLU6 ones at two threads (minima of
  // 4 x 200 runs), 56x56 71 against 98 us, 112x112 stride 2 75 against 87; at 14x14 and 7x7 oneDNN's
  // was faster, 20-23 against 20-25 us.
  const bool large = a.y.rank() == 4 && a.y.dim(2) * a.y.dim(3) >= 56 * 56;
  if (choice == Choice::Default && !large && (!a.post || !slow_in_onednn(*a.post))) return false;
  if (a.x.dtype() != DType::F32 || a.w.dtype() != DType::F32 || a.y.dtype() != DType::F32) return false;
  if (a.b && (a.b->dtype() != DType::F32 || a.b->numel() != a.w.dim(0))) return false;
  const int64_t c = a.x.dim(1);
  if (a.group != c || a.w.dim(0) != c || a.w.dim(1) != 1 || a.y.dim(1) != c) return false;
  const ConvLayout& l = a.layout;
  if (!l.preferred || !l.src_blocked || !l.dst_blocked || (l.block != 8 && l.block != 16) || c % l.block != 0)
    return false;
  if (a.residual || a.g.pads_begin.size() != 2) return false;
  if (a.post)
    for (const auto& p : *a.post)
      if (p.kind == ops::PostOp::Kind::Add) return false;
  if (a.w.dim(2) > kMaxDepthwiseKernel) return false;
  for (size_t i = 0; i < 2; ++i)
    if (a.g.dilations[i] != 1 || a.g.strides[i] < 1 || a.g.pads_begin[i] < 0 || a.g.pads_end[i] < 0) return false;
  // The output is what the geometry gives (no crop), padding at most the kernel's.
  const int64_t kh = a.w.dim(2), kw = a.w.dim(3);
  return a.g.pads_begin[0] < kh && a.g.pads_begin[1] < kw &&
         a.y.dim(2) == (a.x.dim(2) + a.g.pads_begin[0] + a.g.pads_end[0] - kh) / a.g.strides[0] + 1 &&
         a.y.dim(3) == (a.x.dim(3) + a.g.pads_begin[1] + a.g.pads_end[1] - kw) / a.g.strides[1] + 1;
}

Status depthwise_conv(runtime::KernelContext& ctx, const ConvArgs& a) {
  auto m = std::make_shared<DepthwiseMemo>();
  const ir::Node& node = ctx.node();
  m->op_type = node.op_type;
  m->domain = node.domain;
  m->attrs = node.attrs;
  m->x = a.x.shape();
  m->w = a.w.shape();
  m->y = a.y.shape();
  m->has_bias = a.b != nullptr;
  m->p = DepthwiseProblem{.batch = a.x.dim(0),
                          .channels = a.x.dim(1),
                          .block = a.layout.block,
                          .ih = a.x.dim(2),
                          .iw = a.x.dim(3),
                          .oh = a.y.dim(2),
                          .ow = a.y.dim(3),
                          .kh = a.w.dim(2),
                          .kw = a.w.dim(3),
                          .sh = a.g.strides[0],
                          .sw = a.g.strides[1],
                          .ph = a.g.pads_begin[0],
                          .pw = a.g.pads_begin[1]};
  if (a.post) m->post = *a.post;
  m->impl = std::string(a.impl_prefix) + "depthwise:" + (a.layout.block == 16 ? "avx512" : "avx2") +
            (m->post.empty() ? "" : "+row-tail");
  if (a.w.buffer() && a.w.buffer()->frozen()) {
    m->packed = pack_depthwise_weights(a.w.data<float>(), m->p.channels, m->p.kh, m->p.kw, m->p.block);
    m->w_source = a.w.buffer();
    m->w_offset = a.w.byte_offset();
  }
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  dnn.set_memo(&node, nullptr);  // an earlier oneDNN memo must not take the next call
  dnn.set_memo(&node, m, /*kind=*/1);
  return run(ctx, *m, a.x, a.w, a.b, a.y);
}

std::optional<Status> depthwise_again(runtime::KernelContext& ctx, const ConvTensors& t) {
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  auto m = std::static_pointer_cast<const DepthwiseMemo>(dnn.memo(&ctx.node(), /*kind=*/1));
  if (!m) return std::nullopt;
  const ir::Node& node = ctx.node();
  if (t.residual || (t.b != nullptr) != m->has_bias || t.x.shape() != m->x || t.w.shape() != m->w ||
      t.y.shape() != m->y || t.x.dtype() != DType::F32 || t.w.dtype() != DType::F32 || t.y.dtype() != DType::F32 ||
      (t.b && t.b->dtype() != DType::F32) || node.op_type != m->op_type || node.domain != m->domain ||
      !same_conv_attrs(node.attrs, m->attrs))
    return std::nullopt;
  return run(ctx, *m, t.x, t.w, t.b, t.y);
}

}  // namespace ms::cpu::nn
