#include <omp.h>

#include <algorithm>

#include "engine/backends/cpu/attention_fast.h"
#include "engine/backends/cpu/elementwise_table_loop.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::fused {

namespace {

// One post-op over a block, with the kind switched once outside the loop so each loop is a plain
// vectorizable pass (a per-element switch over the post-op list ran at a few ns per element,
// slower than the separate eager kernels it replaces).
MS_SIMD_CLONES void apply_one(float* __restrict y, int64_t n, const float* __restrict residual, const ops::PostOp& p) {
  switch (p.kind) {
    case ops::PostOp::Kind::Add:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] += residual[i];
      return;
    case ops::PostOp::Kind::Relu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] = ew::relu(y[i]);
      return;
    case ops::PostOp::Kind::LeakyRelu: {
      const float a = p.alpha;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] = ew::leaky_relu(y[i], a);
      return;
    }
    case ops::PostOp::Kind::Clip: {
      const float lo = p.alpha, hi = p.beta;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] = ew::clip(y[i], lo, hi);
      return;
    }
    case ops::PostOp::Kind::Sigmoid: return table_unary_f32<ew::Op::Sigmoid>(y, y, n, p.alpha, p.beta);
    case ops::PostOp::Kind::Tanh: return table_unary_f32<ew::Op::Tanh>(y, y, n, p.alpha, p.beta);
    case ops::PostOp::Kind::Elu: return table_unary_f32<ew::Op::Elu>(y, y, n, p.alpha, p.beta);
    case ops::PostOp::Kind::Gelu: return table_unary_f32<ew::Op::Gelu>(y, y, n, p.alpha, p.beta);
    case ops::PostOp::Kind::HardSigmoid: return table_unary_f32<ew::Op::HardSigmoid>(y, y, n, p.alpha, p.beta);
    case ops::PostOp::Kind::HardSwish: return table_unary_f32<ew::Op::HardSwish>(y, y, n, p.alpha, p.beta);
    case ops::PostOp::Kind::Swish: return table_unary_f32<ew::Op::Swish>(y, y, n, p.alpha, p.beta);
    default:
      for (int64_t i = 0; i < n; ++i) y[i] = ops::apply_activation(p, y[i]);
      return;
  }
}

// y[0, n) += bias[0, n).
MS_SIMD_CLONES void add_bias(float* __restrict y, const float* __restrict bias, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += bias[i];
}

}  // namespace

void apply_tail(float* y, int64_t n, const float* bias, int64_t bias_n, const float* residual,
                const std::vector<ops::PostOp>& post) {
  if (!bias && post.empty()) return;
  // Blocks small enough to stay in L1/L2 while every post-op passes over them.
  constexpr int64_t kBlock = 4096;
  auto body = [&](int64_t s, int64_t e) {
    for (int64_t b0 = s; b0 < e; b0 += kBlock) {
      const int64_t len = std::min(kBlock, e - b0);
      float* yb = y + b0;
      if (bias)  // runs of the bias vector (no division per element)
        for (int64_t i = 0, j = b0 % bias_n; i < len; j = 0) {
          const int64_t run = std::min(len - i, bias_n - j);
          add_bias(yb + i, bias + j, run);
          i += run;
        }
      for (const auto& p : post) apply_one(yb, len, residual ? residual + b0 : nullptr, p);
    }
  };
  constexpr int64_t kGrain = 1 << 15;
  if (n < 2 * kGrain || omp_get_max_threads() < 2) {
    body(0, n);
    return;
  }
  const int64_t chunks = (n + kGrain - 1) / kGrain;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) body(c * kGrain, std::min(n, (c + 1) * kGrain));
}

namespace {

// One oneDNN eltwise post-op for an activation (HardSigmoid takes two: see onednn_post_ops).
bool onednn_eltwise(const ops::PostOp& p, dnnl::algorithm& alg, float& a, float& b) {
  a = 0;
  b = 0;
  switch (p.kind) {
    case ops::PostOp::Kind::Gelu:
      alg = p.alpha != 0.f ? dnnl::algorithm::eltwise_gelu_tanh : dnnl::algorithm::eltwise_gelu_erf;
      return true;
    case ops::PostOp::Kind::HardSwish: alg = dnnl::algorithm::eltwise_hardswish; return true;
    case ops::PostOp::Kind::Swish:
      alg = dnnl::algorithm::eltwise_swish;
      a = p.alpha;
      return true;
    case ops::PostOp::Kind::Relu: alg = dnnl::algorithm::eltwise_relu; return true;
    case ops::PostOp::Kind::LeakyRelu:
      alg = dnnl::algorithm::eltwise_relu;
      a = p.alpha;
      return true;
    case ops::PostOp::Kind::Sigmoid: alg = dnnl::algorithm::eltwise_logistic; return true;
    case ops::PostOp::Kind::Tanh: alg = dnnl::algorithm::eltwise_tanh; return true;
    case ops::PostOp::Kind::Elu:
      alg = dnnl::algorithm::eltwise_elu;
      a = p.alpha;
      return true;
    case ops::PostOp::Kind::Clip:
      alg = dnnl::algorithm::eltwise_clip;
      a = p.alpha;
      b = p.beta;
      return true;
    default: return false;
  }
}

}  // namespace

dnnl::post_ops onednn_post_ops(const std::vector<ops::PostOp>& post, bool sum_residual) {
  dnnl::post_ops po;
  for (const auto& p : post) {
    dnnl::algorithm alg;
    float a, b;
    if (p.kind == ops::PostOp::Kind::Add) {
      if (sum_residual) po.append_sum(1.0f);
    } else if (p.kind == ops::PostOp::Kind::HardSigmoid) {  // clip(alpha x + beta, 0, 1)
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, p.alpha, p.beta);
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.f, 1.f);
    } else if (onednn_eltwise(p, alg, a, b)) {
      po.append_eltwise(1.0f, alg, a, b);
    }
  }
  return po;
}

std::string post_ops_key(const std::vector<ops::PostOp>& post) {
  std::string key;
  for (const auto& p : post)
    key +=
        "|" + std::to_string(static_cast<int>(p.kind)) + ":" + std::to_string(p.alpha) + ":" + std::to_string(p.beta);
  return key;
}

Status run_anchor(runtime::KernelContext& ctx, const char* op_type, size_t n_inputs, const Tensor* b) {
  runtime::KernelFn k = CpuBackend::kernels().find(op_type);
  if (!k) return ctx.unsupported_case(std::string("no kernel for ") + op_type);
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < n_inputs; ++i) ins.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  if (b && ins.size() > 1) ins[1] = b;
  while (!ins.empty() && !ins.back()) ins.pop_back();
  struct Forward final : runtime::OutputAllocator {
    explicit Forward(runtime::KernelContext& c) : ctx(c) {}
    Expected<Tensor> allocate(size_t i, DType dt, const Shape& s) override {
      auto t = ctx.allocate_output(i, dt, s);
      if (!t) return std::move(t).take_status();
      return **t;
    }
    Expected<Tensor> scratch(DType dt, const Shape& s) override { return ctx.scratch(dt, s); }
    runtime::KernelContext& ctx;
  } alloc(ctx);
  std::vector<Tensor> outs{ctx.output(0)};
  runtime::KernelContext inner(ctx.node(), ctx.opset() < 11 ? 13 : ctx.opset(), ctx.backend(), ins, outs, alloc,
                               ctx.subgraphs());
  MS_RETURN_IF_ERROR(k(inner));
  if (!ctx.output(0).defined()) ctx.set_output(0, outs[0]);
  ctx.set_impl(inner.impl());
  return Status::ok();
}

void register_fused_conv_kernels(runtime::KernelRegistry& r);
void register_fused_matmul_kernels(runtime::KernelRegistry& r);
void register_fused_elementwise_kernels(runtime::KernelRegistry& r);
void register_fused_pool_kernels(runtime::KernelRegistry& r);
void register_fused_squeeze_excite_kernels(runtime::KernelRegistry& r);

}  // namespace ms::cpu::fused

namespace ms::cpu::nn {
void register_inverted_residual_kernel(runtime::KernelRegistry& r);
}

namespace ms::cpu {
void register_fused_kernels(runtime::KernelRegistry& r) {
  fused::register_fused_conv_kernels(r);
  fused::register_fused_matmul_kernels(r);
  fused::register_fused_elementwise_kernels(r);
  fused::register_fused_pool_kernels(r);
  fused::register_fused_squeeze_excite_kernels(r);
  register_fused_attention_kernel(r);
  nn::register_inverted_residual_kernel(r);
}
}  // namespace ms::cpu
