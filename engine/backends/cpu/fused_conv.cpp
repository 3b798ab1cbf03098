// FusedConv: Conv + activation (+ residual sum + activation) as one oneDNN convolution with
// post-ops (eltwise, sum). The residual is copied into the output first unless the memory plan put
// the output over it already (in place). Cases oneDNN cannot take run the Conv kernel and the tail
// as one loop.
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/nn_onednn.h"

namespace ms::cpu::fused {
namespace {

using dnnl::memory;

struct FusedConvPrimitive {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::primitive prim;
  memory::desc user_weights;
};

// The Winograd implementations of a case (none where oneDNN has no implementation for it): the
// index of each in oneDNN's list of implementations, the scratch bytes it takes, whether it uses
// F(4x4,3x3).
struct WinogradChoice {
  struct Impl {
    int index = 0;
    size_t scratch = 0;
    bool large_tiles = false;
  };
  std::vector<Impl> impls;
};

memory::dims dims_of(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

// Weights (ONNX [M, C/g, k...]) as oneDNN sees them: [g, M/g, C/g, k...] for groups.
memory::desc user_weights_desc(const Tensor& w, int64_t group) {
  memory::dims d(w.shape().begin(), w.shape().end());
  if (group > 1) {
    d[0] /= group;
    d.insert(d.begin(), group);
  }
  const Shape st = contiguous_strides(Shape(d.begin(), d.end()));
  return memory::desc(d, memory::data_type::f32, memory::dims(st.begin(), st.end()));
}

Status conv_onednn(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* r,
                   Tensor& y, const ops::WindowGeometry& g, int64_t group, const std::vector<ops::PostOp>& post,
                   bool blocked_layout) {
  for (size_t i = 0; i < g.pads_end.size(); ++i)
    if (g.pads_end[i] < 0 || g.pads_begin[i] < 0) return ctx.unsupported_case("negative padding");
  const int64_t m = y.dim(1);
  // Values the layout pass keeps blocked between convs (nChw16c in memory, plain size).
  const bool src_blk = blocked_layout && ctx.node().attr_int("src_blocked", 0) != 0;
  const bool dst_blk = blocked_layout && ctx.node().attr_int("dst_blocked", 0) != 0;
  const bool res_blk = blocked_layout && ctx.node().attr_int("residual_blocked", 0) != 0;
  auto blocked_desc = [](const Shape& s) {
    return memory::desc(dims_of(s), memory::data_type::f32, memory::format_tag::nChw16c);
  };
  std::string key = "fconv|" + nn::key_of(x.shape()) + "|" + nn::key_of(w.shape()) + "|" + (b ? "b" : "") + "|" +
                    nn::key_of(g.strides) + "|" + nn::key_of(g.dilations) + "|" + nn::key_of(g.pads_begin) + "|" +
                    nn::key_of(g.pads_end) + "|" + std::to_string(group) + (blocked_layout ? "|blk" : "") +
                    (src_blk ? "|sb" : "") + (dst_blk ? "|db" : "");
  key += post_ops_key(post);
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return nn::guard_onednn(ctx, "fused convolution", [&]() -> Status {
    const memory::desc user_w = user_weights_desc(w, group);
    // The primitive descriptor for one algorithm, activations in the layout the primitive prefers
    // (blocked nChw16c for the jit direct convs, much faster than the gemm-based conv over plain
    // nchw) unless the layout pass fixed them; reordered at the op's boundary. `use` gets it while
    // the op descriptor and attributes it iterates over (next_impl) are alive.
    auto with_pd = [&](dnnl::algorithm alg, auto&& use) {
      const bool blocked = blocked_layout;
      const memory::desc src = src_blk ? blocked_desc(x.shape())
                               : blocked ? memory::desc(dims_of(x.shape()), memory::data_type::f32, memory::format_tag::any)
                                         : plain_desc(x.shape());
      const memory::desc dst = dst_blk ? blocked_desc(y.shape())
                               : blocked ? memory::desc(dims_of(y.shape()), memory::data_type::f32, memory::format_tag::any)
                                         : plain_desc(y.shape());
      const memory::desc any_w(user_w.dims(), memory::data_type::f32, memory::format_tag::any);
      const memory::desc bias = b ? plain_desc({m}) : memory::desc();
      memory::dims dil = dims_of(g.dilations);
      for (auto& d : dil) d -= 1;  // oneDNN counts the gaps
      dnnl::primitive_attr attr = nn::user_scratchpad_attr();
      attr.set_post_ops(onednn_post_ops(post, /*sum_residual=*/true));
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, any_w, bias, dst,
                                        dims_of(g.strides), dil, dims_of(g.pads_begin), dims_of(g.pads_end));
      dnnl::convolution_forward::primitive_desc pd(d, attr, dnn.engine());
      // oneDNN's first choice for a strided 1x1 conv copies the strided input for every thread
      // (scratch as large as the output's planes times the threads), live beside the largest
      // activations of a ResNet's downsampling blocks. Take a later jit implementation without
      // that scratch when one takes the same activation layouts.
      constexpr size_t kLargeScratch = size_t{256} << 10;
      if (alg == dnnl::algorithm::convolution_direct && blocked && pd.scratchpad_desc().get_size() >= kLargeScratch) {
        dnnl::convolution_forward::primitive_desc alt(d, attr, dnn.engine());
        while (alt.next_impl()) {
          const std::string impl = alt.impl_info_str();
          if (impl.rfind("jit", 0) != 0 && impl.rfind("brg", 0) != 0) continue;
          if (alt.src_desc() != pd.src_desc() || alt.dst_desc() != pd.dst_desc()) continue;
          if (alt.scratchpad_desc().get_size() * 8 > pd.scratchpad_desc().get_size()) continue;
          pd = alt;
          break;
        }
      }
      return use(pd);
    };
    auto build = [&](const dnnl::convolution_forward::primitive_desc& pd) {
      return std::make_shared<FusedConvPrimitive>(FusedConvPrimitive{pd, dnnl::convolution_forward(pd), user_w});
    };
    // Winograd (the conv-algorithm pass's mark at O2): F(2x2,3x3) needs 2.25x fewer multiplications
    // than the direct conv, F(4x4,3x3) 4x, but they transform the activations through a scratch of
    // up to tens of MiB. Winograd runs only where that scratch fits the room the memory plan leaves
    // at this step (ctx.scratch_budget(): at most 5% over the values' lower bound); otherwise, or
    // where oneDNN has no Winograd implementation for the case, the direct conv runs.
    std::shared_ptr<FusedConvPrimitive> cp;
    if (blocked_layout && ctx.node().attr_string("algorithm", "") == "winograd") {
      // oneDNN's Winograd implementations for the case (F(2x2,3x3) and F(4x4,3x3) where the ISA has
      // them) that take the activation layouts fixed at compile time, with their scratch sizes.
      auto wino = dnn.cached<WinogradChoice>(key + "|wino", [&] {
        auto c = std::make_shared<WinogradChoice>();
        try {
          with_pd(dnnl::algorithm::convolution_winograd, [&](dnnl::convolution_forward::primitive_desc& pd) {
            int index = 0;
            do {
              const std::string impl = pd.impl_info_str();
              const bool layouts_ok = (!src_blk || pd.src_desc() == blocked_desc(x.shape())) &&
                                      (!dst_blk || pd.dst_desc() == blocked_desc(y.shape()));
              // Scratch: the transforms', plus the reorders at the op's boundary of activations not
              // blocked already.
              const size_t bytes = pd.scratchpad_desc().get_size() + (src_blk ? 0 : pd.src_desc().get_size()) +
                                   (dst_blk ? 0 : pd.dst_desc().get_size());
              if (layouts_ok && impl.find("wino") != std::string::npos)
                c->impls.push_back({index, bytes, impl.find("4x3") != std::string::npos});
              ++index;
            } while (pd.next_impl());
            return 0;
          });
        } catch (const dnnl::error&) {
          c->impls.clear();  // no Winograd implementation for this case (ISA, shape or post-ops)
        }
        return c;
      });
      // The larger tiles (F(4x4,3x3)) multiply least but need the most scratch: those where they fit,
      // else the first implementation that fits.
      const WinogradChoice::Impl* pick = nullptr;
      for (const auto& im : wino->impls)
        if (im.scratch <= ctx.scratch_budget() && (!pick || (im.large_tiles && !pick->large_tiles))) pick = &im;
      if (pick)
        cp = dnn.cached<FusedConvPrimitive>(key + "|wino" + std::to_string(pick->index), [&] {
          return with_pd(dnnl::algorithm::convolution_winograd, [&](dnnl::convolution_forward::primitive_desc& pd) {
            for (int i = 0; i < pick->index; ++i) pd.next_impl();
            return build(pd);
          });
        });
    }
    if (!cp)
      cp = dnn.cached<FusedConvPrimitive>(key, [&] { return with_pd(dnnl::algorithm::convolution_direct, build); });
    const memory::desc x_desc = src_blk ? blocked_desc(x.shape()) : plain_desc(x.shape());
    const memory::desc y_desc = dst_blk ? blocked_desc(y.shape()) : plain_desc(y.shape());
    if ((src_blk && cp->pd.src_desc() != x_desc) || (dst_blk && cp->pd.dst_desc() != y_desc))
      return Status::error(ErrorCode::Internal, "the convolution primitive does not take the blocked layout chosen at compile time");
    const bool reorder_src = cp->pd.src_desc() != x_desc, reorder_dst = cp->pd.dst_desc() != y_desc;
    memory x_mem = wrap(x, x_desc, dnn.engine()), y_mem = wrap(y, y_desc, dnn.engine());
    Tensor src_holder, dst_holder, res_holder;
    memory src_mem = x_mem, dst_mem = y_mem;
    if (reorder_src) {
      MS_ASSIGN_OR_RETURN(src_mem, nn::make_scratchpad(ctx, cp->pd.src_desc(), src_holder));
      dnnl::reorder(x_mem, src_mem).execute(dnn.stream(), x_mem, src_mem);
    }
    if (reorder_dst) {
      MS_ASSIGN_OR_RETURN(dst_mem, nn::make_scratchpad(ctx, cp->pd.dst_desc(), dst_holder));
    }
    if (r) {  // the sum post-op reads the residual from dst, in dst's layout
      const memory::desc r_desc = res_blk ? blocked_desc(r->shape()) : plain_desc(r->shape());
      const Tensor* res = r;
      if (r->raw() == dst_mem.get_data_handle() && r_desc != dst_mem.get_desc()) {
        res_holder = r->clone();  // in place but in another layout: reorder from a copy
        res = &res_holder;
      }
      if (res->raw() != dst_mem.get_data_handle()) {
        memory r_mem = wrap(*res, r_desc, dnn.engine());
        if (r_desc == dst_mem.get_desc()) std::memcpy(dst_mem.get_data_handle(), res->raw(), res->nbytes());
        else dnnl::reorder(r_mem, dst_mem).execute(dnn.stream(), r_mem, dst_mem);
      }
    }
    MS_ASSIGN_OR_RETURN(memory wmem, nn::prepared_weights(ctx, dnn, w, cp->user_weights, cp->pd.weights_desc()));
    Tensor scratch_holder;
    MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, cp->pd.scratchpad_desc(), scratch_holder));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_mem},
                                         {DNNL_ARG_WEIGHTS, wmem},
                                         {DNNL_ARG_DST, dst_mem},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (b) args.emplace(DNNL_ARG_BIAS, wrap(*b, plain_desc({m}), dnn.engine()));
    cp->prim.execute(dnn.stream(), args);
    if (reorder_dst) dnnl::reorder(dst_mem, y_mem).execute(dnn.stream(), dst_mem, y_mem);
    dnn.stream().wait();
    ctx.set_impl("fused:" + impl_name(cp->pd));
    return Status::ok();
  });
}

Status fused_conv_kernel(runtime::KernelContext& ctx) {
  auto post = ops::parse_post_ops(ctx.node());
  if (!post) return post.status();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* r = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return Status::ok();
  // 2-D convs always run oneDNN's direct conv on the blocked layout with post-ops: over plain nchw
  // oneDNN falls back to its gemm-based conv, slower than the direct one even with the reorders
  // at the op's boundary. At O2 the layout pass removes those reorders between convs.
  // "plain": the layout pass found the reorders cost more than the direct conv gains (a lone 1x1).
  // Without the pass's choice, a conv (not grouped) of less than 5 MFLOPs is left plain as the pass
  // would (conv_layout.cpp: the gemm-based conv is faster there).
  const std::string layout = ctx.node().attr_string("activation_layout", "");
  const bool small = ops::small_dense_conv(ctx.node().attr_int("group", 1), w.shape(), y.numel());
  const bool blocked = layout == "blocked" || (layout.empty() && x.rank() == 4 && !small);
  // Plain layout: still one oneDNN conv (gemm-based over nchw) with the post-ops fused into it.
  if (x.dtype() == DType::F32 && x.numel() > 0 && x.rank() >= 3 && x.rank() <= 5 && w.dtype() == DType::F32) {
    auto g = nn::geometry(ctx, ops::WindowKind::Conv, x.shape(), Shape(w.shape().begin() + 2, w.shape().end()));
    if (!g) return g.status();
    Status s = conv_onednn(ctx, x, w, b, r, y, *g, ctx.node().attr_int("group", 1), *post, blocked);
    // Values kept blocked between convs have no plain fallback.
    const bool fixed = ctx.node().attr_int("src_blocked", 0) || ctx.node().attr_int("dst_blocked", 0) ||
                       ctx.node().attr_int("residual_blocked", 0);
    if (s.code() != ErrorCode::Unsupported || fixed) return s;
  }
  // Fallback: the Conv kernel, then the tail in one loop. The residual may share the output's
  // memory (in place): read it before the conv overwrites it.
  Tensor res;
  if (r) res = r->raw() == y.raw() ? r->clone() : *r;
  MS_RETURN_IF_ERROR(run_anchor(ctx, "Conv", 3));
  if (y.dtype() != DType::F32) return ctx.unsupported_case("fused post-ops need f32");
  apply_tail(y.data<float>(), y.numel(), nullptr, 1, r ? res.data<float>() : nullptr, *post);
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

}  // namespace

void register_fused_conv_kernels(runtime::KernelRegistry& r) { r.add("FusedConv", fused_conv_kernel, ops::kFusedDomain); }

}  // namespace ms::cpu::fused
