// ConvGradWeight (ai.modescope): the weight gradient of a Conv. f32 and bf16 with 1-3 spatial axes
// run oneDNN's backward-weights convolution (activations and the gradient in the layouts it prefers,
// reordered at the op's boundary); other dtypes and shapes run a reference loop accumulated in
// acc_t<T>. Expressing dW as a forward Conv of the transposed input by the transposed gradient costs
// two transposes and runs a conv whose "kernel" is the whole output plane, which oneDNN's direct
// kernels are not built for: on ResNet-50 that was half of a training step.
#include <cstring>

#include "engine/backends/cpu/nn_onednn.h"
#include "engine/ops/grad_ops.h"

namespace ms::cpu {
namespace {

using dnnl::memory;

struct GradWeightPrimitive {
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
};

memory::dims dnnl_dims(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

// dW [M, C/g, k...] seen as oneDNN's (g,) O, I, k... weights: the same bytes, the group split off.
memory::desc weights_desc(const Shape& w, int64_t group, memory::data_type dt) {
  if (group == 1) return plain_desc(w, dt);
  Shape split{group, w[0] / group};
  split.insert(split.end(), w.begin() + 1, w.end());
  return plain_desc(split, dt);
}

Status grad_weight_onednn(runtime::KernelContext& ctx, const Tensor& x, const Tensor& gy, Tensor& gw,
                          const ops::WindowGeometry& g, int64_t group) {
  for (size_t i = 0; i < g.pads_begin.size(); ++i)
    if (g.pads_begin[i] < 0 || g.pads_end[i] < 0) return ctx.unsupported_case("negative padding");
  const memory::data_type dt = to_dnnl(x.dtype());
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  const std::string key = std::string("convbw|") + std::string(dtype_name(x.dtype())) + "|" + nn::key_of(x.shape()) +
                          "|" + nn::key_of(gy.shape()) + "|" + nn::key_of(gw.shape()) + "|" + nn::key_of(g.strides) +
                          "|" + nn::key_of(g.dilations) + "|" + nn::key_of(g.pads_begin) + "|" +
                          nn::key_of(g.pads_end) + "|" + std::to_string(group);
  return nn::guard_onednn(ctx, "convolution backward weights", [&]() -> Status {
    auto cp = dnn.cached<GradWeightPrimitive>(key, [&] {
      // A 1x1 kernel's gradient reads plain nchw (a matrix product), others the layouts the
      // primitive prefers, reordered here. ResNet-50 batch-8 training step, 2 cores: the 1x1 ones
      // bf16 147-158 ms blocked, 101-109 ms plain; f32 223-246 ms, 208-228 ms.
      bool pointwise = true;
      for (int64_t a = 2; a < gw.rank(); ++a) pointwise = pointwise && gw.dim(a) == 1;
      const memory::desc src =
          pointwise ? plain_desc(x.shape(), dt) : memory::desc(dnnl_dims(x.shape()), dt, memory::format_tag::any);
      const memory::desc dst =
          pointwise ? plain_desc(gy.shape(), dt) : memory::desc(dnnl_dims(gy.shape()), dt, memory::format_tag::any);
      ConvProblem p;
      p.src = src;
      p.dst = dst;
      p.weights = memory::desc(weights_desc(gw.shape(), group, dt).dims(), dt, memory::format_tag::any);
      p.dilations = dnnl_dims(g.dilations);
      for (auto& d : p.dilations) d -= 1;  // oneDNN counts the gaps
      p.strides = dnnl_dims(g.strides);
      p.pad_l = dnnl_dims(g.pads_begin);
      p.pad_r = dnnl_dims(g.pads_end);
      auto out = std::make_shared<GradWeightPrimitive>();
      out->pd = conv_backward_weights_pd(dnn.engine(), p, nn::user_scratchpad_attr());
      out->prim = dnnl::convolution_backward_weights(out->pd);
      return out;
    });
    Tensor scratch_holder, src_holder, dst_holder, w_holder;
    MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, cp->pd.scratchpad_desc(), scratch_holder));
    const memory::desc x_plain = plain_desc(x.shape(), dt), gy_plain = plain_desc(gy.shape(), dt);
    const memory::desc w_plain = weights_desc(gw.shape(), group, dt);
    memory x_mem = wrap(x, x_plain, dnn.engine()), gy_mem = wrap(gy, gy_plain, dnn.engine());
    memory w_mem = wrap(gw, w_plain, dnn.engine());
    memory src_mem = x_mem, dst_mem = gy_mem, diff_w = w_mem;
    if (cp->pd.src_desc() != x_plain) {
      MS_ASSIGN_OR_RETURN(src_mem, nn::make_scratchpad(ctx, cp->pd.src_desc(), src_holder));
      dnnl::reorder(x_mem, src_mem).execute(dnn.stream(), x_mem, src_mem);
    }
    if (cp->pd.diff_dst_desc() != gy_plain) {
      MS_ASSIGN_OR_RETURN(dst_mem, nn::make_scratchpad(ctx, cp->pd.diff_dst_desc(), dst_holder));
      dnnl::reorder(gy_mem, dst_mem).execute(dnn.stream(), gy_mem, dst_mem);
    }
    const bool reorder_w = cp->pd.diff_weights_desc() != w_plain;
    if (reorder_w) {
      MS_ASSIGN_OR_RETURN(diff_w, nn::make_scratchpad(ctx, cp->pd.diff_weights_desc(), w_holder));
    }
    cp->prim.execute(dnn.stream(), {{DNNL_ARG_SRC, src_mem},
                                    {DNNL_ARG_DIFF_DST, dst_mem},
                                    {DNNL_ARG_DIFF_WEIGHTS, diff_w},
                                    {DNNL_ARG_SCRATCHPAD, scratch}});
    if (reorder_w) dnnl::reorder(diff_w, w_mem).execute(dnn.stream(), diff_w, w_mem);
    dnn.stream().wait();
    ctx.set_impl(impl_name(cp->pd));
    return Status::ok();
  });
}

// dW[m, ic, k] = sum over n and output positions p of dY[n, m, p] * X[n, g*Cg + ic, table(p, k)]: one
// (m, ic) pair per task, so every task owns its weights.
template <class T>
void grad_weight_loop(const T* x, const T* gy, T* gw, int64_t n, int64_t c, int64_t m, int64_t group, int64_t in_size,
                      int64_t out_size, int64_t taps, const std::vector<int64_t>& table) {
  using A = nn::acc_t<T>;
  const int64_t cg = c / group, mg = m / group;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t om = 0; om < m; ++om)
    for (int64_t ic = 0; ic < cg; ++ic) {
      const int64_t ch = (om / mg) * cg + ic;
      std::vector<A> acc(static_cast<size_t>(taps), A(0));
      for (int64_t b = 0; b < n; ++b) {
        const T* xc = x + (b * c + ch) * in_size;
        const T* gp = gy + (b * m + om) * out_size;
        for (int64_t p = 0; p < out_size; ++p) {
          const A gv = static_cast<A>(gp[p]);
          const int64_t* row = table.data() + p * taps;
          for (int64_t kk = 0; kk < taps; ++kk)
            if (row[kk] >= 0) acc[static_cast<size_t>(kk)] += gv * static_cast<A>(xc[row[kk]]);
        }
      }
      T* wp = gw + (om * cg + ic) * taps;
      for (int64_t kk = 0; kk < taps; ++kk) wp[kk] = static_cast<T>(acc[static_cast<size_t>(kk)]);
    }
}

Status grad_weight_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& gy = ctx.input(1);
  Tensor& gw = ctx.output(0);
  const Shape kernel(gw.shape().begin() + 2, gw.shape().end());
  const Shape in(x.shape().begin() + 2, x.shape().end());
  MS_ASSIGN_OR_RETURN(ops::WindowGeometry g, nn::geometry(ctx, ops::WindowKind::Conv, x.shape(), kernel));
  const int64_t group = ctx.node().attr_int("group", 1);
  if (gw.numel() == 0) return Status::ok();
  if (x.numel() == 0 || gy.numel() == 0) {  // nothing was convolved: no gradient
    std::memset(gw.raw(), 0, gw.nbytes());
    return Status::ok();
  }
  if ((x.dtype() == DType::F32 || x.dtype() == DType::BF16) && g.spatial() <= 3) {
    Status s = grad_weight_onednn(ctx, x, gy, gw, g, group);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  const std::vector<int64_t> table = nn::window_table(in, g);
  const bool ok = nn::visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    grad_weight_loop<T>(x.data<T>(), gy.data<T>(), gw.data<T>(), x.dim(0), x.dim(1), gy.dim(1), group, numel(in),
                        numel(g.out), numel(g.kernel), table);
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

void register_conv_grad_kernels(runtime::KernelRegistry& r) {
  r.add("ConvGradWeight", grad_weight_kernel, autodiff::kGradDomain);
}

}  // namespace ms::cpu
