// Softmax/LogSoftmax, reductions over any axes, LayerNormalization, inference BatchNormalization and
// GlobalAveragePool on CUDA (f32; reductions and GlobalAveragePool also f16/bf16, through f32; other
// cases take the CPU fallback).
#include <algorithm>

#include "engine/backends/cuda/ops_util.h"

namespace ms::cuda {
namespace {

// [outer, r, inner] split of `shape` around the axes [a0, a1].
void split3(const Shape& shape, int64_t a0, int64_t a1, int64_t& outer, int64_t& r, int64_t& inner) {
  outer = r = inner = 1;
  for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k) {
    const int64_t d = shape[static_cast<size_t>(k)];
    (k < a0 ? outer : (k <= a1 ? r : inner)) *= d;
  }
}

template <bool kLog> Status softmax(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t rank = static_cast<int64_t>(x0.shape().size());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", ctx.opset() >= 13 ? -1 : 1), rank);
  // Before opset 13 the input is coerced to 2-D at `axis`: the same as one axis only when it is last.
  if (x0.dtype() != DType::F32 || !y.defined() || rank == 0 || (ctx.opset() < 13 && axis != rank - 1))
    return cpu_fallback(ctx);
  int64_t outer, r, inner;
  split3(x0.shape(), axis, axis, outer, r, inner);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl(kLog ? "cuda:log_softmax" : "cuda:softmax");
  return launched(ctx,
                  softmax_f32(x->data<float>(), y.data<float>(), outer, r, inner, kLog, cuda_backend(ctx).stream()),
                  "softmax");
}

// Axes of a Reduce* node (attribute before opset 13/18, else the optional second input, which is an
// integer tensor and so host-readable). Empty: all axes (unless noop_with_empty_axes).
bool reduce_axes(runtime::KernelContext& ctx, int64_t rank, std::vector<int64_t>& axes) {
  const ir::Node& n = ctx.node();
  axes = n.attr_ints("axes");
  if (ctx.has_input(1)) {
    const Tensor& a = ctx.input(1);
    if (a.dtype() != DType::I64) return false;
    auto h = host_copy(ctx, a);
    if (!h) return false;
    axes.assign(h->data<int64_t>(), h->data<int64_t>() + h->numel());
  }
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0)) return false;
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  for (auto& a : axes) a = normalize_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return !axes.empty() && axes.front() >= 0 && axes.back() < rank;
}

// A float input as f32 in device memory: itself, or a widened copy of an f16/bf16 one.
Expected<Tensor> as_f32(runtime::KernelContext& ctx, const Tensor& x) {
  if (x.dtype() == DType::F32) return x;
  MS_ASSIGN_OR_RETURN(Tensor w, ctx.scratch(DType::F32, x.shape()));
  MS_ASSIGN_OR_RETURN(ScalarType from, scalar_type(x.dtype()));
  MS_RETURN_IF_ERROR(
      launched(ctx, cast(x.raw(), from, w.raw(), ScalarType::F32, x.numel(), cuda_backend(ctx).stream()), "widen"));
  return w;
}

// Runs `body(x32, y32)` on f32 views of input 0 and output 0: directly for f32, else through a
// widened input and an f32 result rounded into y.
template <class Body> Status through_f32(runtime::KernelContext& ctx, const Tensor& x, Tensor& y, Body body) {
  MS_ASSIGN_OR_RETURN(Tensor x32, as_f32(ctx, x));
  if (y.dtype() == DType::F32) return body(x32, y);
  MS_ASSIGN_OR_RETURN(Tensor y32, ctx.scratch(DType::F32, y.shape()));
  MS_RETURN_IF_ERROR(body(x32, y32));
  MS_ASSIGN_OR_RETURN(ScalarType to, scalar_type(y.dtype()));
  return launched(ctx, cast(y32.raw(), ScalarType::F32, y.raw(), to, y.numel(), cuda_backend(ctx).stream()), "narrow");
}

// `x` with the kept axes first and the reduced ones last, in scratch: [outer, r] with the output's
// element order (the kept axes keep theirs).
Expected<Tensor> reduced_last(runtime::KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> order;
  for (int64_t k = 0; k < rank; ++k)
    if (!std::binary_search(axes.begin(), axes.end(), k)) order.push_back(k);
  order.insert(order.end(), axes.begin(), axes.end());
  Shape dims(static_cast<size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) dims[static_cast<size_t>(k)] = x.shape()[static_cast<size_t>(order[k])];
  MS_ASSIGN_OR_RETURN(Tensor moved, ctx.scratch(x.dtype(), dims));
  const Shape xs = row_major_strides(x.shape()), ms = row_major_strides(dims);
  CopyDesc d;
  d.rank = static_cast<int>(rank);
  for (int64_t k = 0; k < rank; ++k) {
    d.dims[k] = dims[static_cast<size_t>(k)];
    d.src_stride[k] = xs[static_cast<size_t>(order[k])];
    d.dst_stride[k] = ms[static_cast<size_t>(k)];
  }
  MS_RETURN_IF_ERROR(launched(ctx,
                              strided_copy(x.raw(), moved.raw(), x.numel(), d, static_cast<int>(dtype_size(x.dtype())),
                                           cuda_backend(ctx).stream()),
                              "reduce layout"));
  return moved;
}

template <ReduceOp kOp> Status reduce(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t rank = static_cast<int64_t>(x0.shape().size());
  std::vector<int64_t> axes;
  if (!is_device_float(x0.dtype()) || !y.defined() || y.dtype() != x0.dtype() || rank == 0 || rank > kMaxRank ||
      !reduce_axes(ctx, rank, axes))
    return cpu_fallback(ctx);
  int64_t outer = 1, r = 1, inner = 1;
  const bool contiguous = axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  if (contiguous) {
    split3(x0.shape(), axes.front(), axes.back(), outer, r, inner);
  } else {
    for (int64_t k = 0; k < rank; ++k)
      (std::binary_search(axes.begin(), axes.end(), k) ? r : outer) *= x0.shape()[static_cast<size_t>(k)];
  }
  if (r == 0) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  Tensor src = *x;
  if (!contiguous) {
    MS_ASSIGN_OR_RETURN(src, reduced_last(ctx, *x, axes));
  }
  ctx.set_impl(contiguous ? "cuda:reduce" : "cuda:reduce_strided");
  return through_f32(ctx, src, y, [&](const Tensor& x32, Tensor& y32) {
    return launched(ctx,
                    reduce_f32(kOp, x32.data<float>(), y32.data<float>(), outer, r, inner, cuda_backend(ctx).stream()),
                    "reduce");
  });
}

Status global_avg_pool(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (!is_device_float(x0.dtype()) || !y.defined() || y.dtype() != x0.dtype() || x0.shape().size() < 3)
    return cpu_fallback(ctx);
  const int64_t nc = x0.shape()[0] * x0.shape()[1];
  const int64_t hw = x0.numel() / std::max<int64_t>(nc, 1);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:global_avg_pool");
  return through_f32(ctx, *x, y, [&](const Tensor& x32, Tensor& y32) {
    return launched(
        ctx, reduce_f32(ReduceOp::Mean, x32.data<float>(), y32.data<float>(), nc, hw, 1, cuda_backend(ctx).stream()),
        "global_avg_pool");
  });
}

// LayerNormalization over the axes from `axis` on; f16/bf16 (a mixed-precision graph's, where the
// decomposed form fused after amp-cast) through f32 with the scale and bias widened too.
Status layer_norm(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t rank = static_cast<int64_t>(x0.shape().size());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), rank);
  // Mean / InvStdDev outputs (training) stay on the CPU.
  if (!is_device_float(x0.dtype()) || !y.defined() || y.dtype() != x0.dtype() || ctx.num_outputs() > 1 || rank == 0)
    return cpu_fallback(ctx);
  int64_t rows = 1, cols = 1;
  for (int64_t k = 0; k < rank; ++k) (k < axis ? rows : cols) *= x0.shape()[static_cast<size_t>(k)];
  if (ctx.input(1).numel() != cols || (ctx.has_input(2) && ctx.input(2).numel() != cols) ||
      !is_device_float(ctx.input(1).dtype()) || (ctx.has_input(2) && !is_device_float(ctx.input(2).dtype())))
    return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* scale0, in.get(1));
  MS_ASSIGN_OR_RETURN(Tensor scale, as_f32(ctx, *scale0));
  Tensor bias;
  if (ctx.has_input(2)) {
    MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(2));
    MS_ASSIGN_OR_RETURN(bias, as_f32(ctx, *b));
  }
  ctx.set_impl(x0.dtype() == DType::F32 ? "cuda:layer_norm" : "cuda:layer_norm_via_f32");
  return through_f32(ctx, *x, y, [&](const Tensor& x32, Tensor& y32) {
    return launched(ctx,
                    layer_norm_f32(x32.data<float>(), scale.data<float>(),
                                   bias.defined() ? bias.data<float>() : nullptr, y32.data<float>(), rows, cols,
                                   ctx.node().attr_float("epsilon", 1e-5f), cuda_backend(ctx).stream()),
                    "layer_norm");
  });
}

Status batch_norm(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  // Training mode (running statistics outputs) stays on the CPU.
  if (x0.dtype() != DType::F32 || !y.defined() || ctx.num_outputs() > 1 || x0.shape().size() < 2 ||
      ctx.node().attr_int("training_mode", 0))
    return cpu_fallback(ctx);
  const int64_t n = x0.shape()[0], c = x0.shape()[1];
  const int64_t inner = x0.numel() / std::max<int64_t>(n * c, 1);
  DeviceInputs in(ctx);
  const Tensor* p[5];
  for (size_t i = 0; i < 5; ++i) {
    MS_ASSIGN_OR_RETURN(p[i], in.get(i));
    if (i > 0 && (p[i]->numel() != c || p[i]->dtype() != DType::F32)) return cpu_fallback(ctx);
  }
  ctx.set_impl("cuda:batch_norm");
  return launched(ctx,
                  batch_norm_f32(p[0]->data<float>(), p[1]->data<float>(), p[2]->data<float>(), p[3]->data<float>(),
                                 p[4]->data<float>(), y.data<float>(), n, c, inner,
                                 ctx.node().attr_float("epsilon", 1e-5f), cuda_backend(ctx).stream()),
                  "batch_norm");
}

}  // namespace

void register_nn_ops(runtime::KernelRegistry& r) {
  r.add("Softmax", &softmax<false>);
  r.add("LogSoftmax", &softmax<true>);
  r.add("ReduceSum", &reduce<ReduceOp::Sum>);
  r.add("ReduceMean", &reduce<ReduceOp::Mean>);
  r.add("ReduceMax", &reduce<ReduceOp::Max>);
  r.add("ReduceMin", &reduce<ReduceOp::Min>);
  r.add("ReduceSumSquare", &reduce<ReduceOp::SumSquare>);
  r.add("GlobalAveragePool", &global_avg_pool);
  r.add("LayerNormalization", &layer_norm);
  r.add("BatchNormalization", &batch_norm);
}

}  // namespace ms::cuda
