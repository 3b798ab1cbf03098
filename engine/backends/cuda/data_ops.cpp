// Data movement on CUDA: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity), Transpose, Concat,
// Split, Slice, Expand, Pad (every mode), Where, Dropout (inference), Gather and Cast for
// floating-point data. Integer tensors (shapes, indices) stay with the CPU
// kernels, which run synchronised, so host code that reads them never races a device kernel.
#include <algorithm>
#include <cstring>

#include "engine/backends/cpu/tensor_internal.h"
#include "engine/backends/cuda/ops_util.h"
#include "engine/ops/tensor_internal.h"

namespace ms::cuda {
namespace {

// A view shares its input's buffer; the CPU kernel only sets the output's shape (it reads the
// shape input, an integer tensor, never the data). A preallocated output (Graph-mode arena) is a
// device copy instead.
Status view(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.defined() && y.raw() != x.raw()) {
    DeviceInputs in(ctx);
    MS_ASSIGN_OR_RETURN(const Tensor* dx, in.get(0));
    ctx.set_impl("cuda:copy");
    MS_CUDA_CHECK(cudaMemcpyAsync(y.raw(), dx->raw(), y.nbytes(), cudaMemcpyDefault, cuda_backend(ctx).stream()));
    return Status::ok();
  }
  // The CPU kernel reads the shape input: it must be in host memory (else the fallback copies it).
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && !ctx.input(i).device().is_cpu()) return cpu_fallback(ctx);
  const ir::Node& node = ctx.node();
  runtime::KernelFn k = cpu::CpuBackend::kernels().find(node.op_type, node.domain);
  if (!k) return ctx.unsupported_case("no kernel for view op '" + node.op_type + "'");
  runtime::KernelContext cpu_ctx(node, ctx.opset(), cuda_backend(ctx).cpu(), ctx.input_ptrs(), ctx.outputs(),
                                 ctx.output_allocator(), ctx.subgraphs());
  ctx.set_impl("view");
  return k(cpu_ctx);
}

Status transpose(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t r = static_cast<int64_t>(x0.shape().size());
  if (!is_device_float(x0.dtype()) || !y.defined() || r > kMaxRank) return cpu_fallback(ctx);
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (int64_t k = r - 1; k >= 0; --k) perm.push_back(k);
  const Shape xs = row_major_strides(x0.shape());
  CopyDesc d;
  d.rank = static_cast<int>(r);
  const Shape ys = row_major_strides(y.shape());
  for (int64_t k = 0; k < r; ++k) {
    const int64_t p = normalize_axis(perm[static_cast<size_t>(k)], r);
    if (p < 0 || p >= r) return ctx.fail("perm out of range");
    d.dims[k] = y.shape()[static_cast<size_t>(k)];
    d.src_stride[k] = xs[static_cast<size_t>(p)];
    d.dst_stride[k] = ys[static_cast<size_t>(k)];
  }
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:transpose");
  return launched(ctx,
                  strided_copy(x->raw(), y.raw(), y.numel(), d, static_cast<int>(dtype_size(y.dtype())),
                               cuda_backend(ctx).stream()),
                  "transpose");
}

Status concat(runtime::KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  if (!y.defined() || !is_device_float(y.dtype()) || y.shape().size() > kMaxRank) return cpu_fallback(ctx);
  const int64_t r = static_cast<int64_t>(y.shape().size());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  const Shape ys = row_major_strides(y.shape());
  DeviceInputs in(ctx);
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(i));
    CopyDesc d;
    d.rank = static_cast<int>(r);
    const Shape xs = row_major_strides(x->shape());
    for (int64_t k = 0; k < r; ++k) {
      d.dims[k] = x->shape()[static_cast<size_t>(k)];
      d.src_stride[k] = xs[static_cast<size_t>(k)];
      d.dst_stride[k] = ys[static_cast<size_t>(k)];
    }
    char* dst = static_cast<char*>(y.raw()) +
                offset * ys[static_cast<size_t>(axis)] * static_cast<int64_t>(dtype_size(y.dtype()));
    MS_RETURN_IF_ERROR(launched(
        ctx,
        strided_copy(x->raw(), dst, x->numel(), d, static_cast<int>(dtype_size(y.dtype())), cuda_backend(ctx).stream()),
        "concat"));
    offset += x->shape()[static_cast<size_t>(axis)];
  }
  ctx.set_impl("cuda:concat");
  return Status::ok();
}

// Indices that live on the host (constants, shape arithmetic) are checked there before the launch,
// so the kernel needs no answer back and can be recorded into a CUDA Graph; device indices set a
// device flag read after the stream drains.
Status gather(runtime::KernelContext& ctx) {
  const Tensor& data0 = ctx.input(0);
  const Tensor& idx0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (!y.defined() || !is_device_float(data0.dtype()) || idx0.dtype() != DType::I64) return cpu_fallback(ctx);
  const int64_t r = static_cast<int64_t>(data0.shape().size());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  const int64_t axis_dim = data0.shape()[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= data0.shape()[static_cast<size_t>(k)];
  for (int64_t k = axis + 1; k < r; ++k) inner *= data0.shape()[static_cast<size_t>(k)];
  const bool host_indices = idx0.device().is_cpu();
  if (host_indices)
    for (int64_t i = 0; i < idx0.numel(); ++i) {
      const int64_t v = idx0.data<int64_t>()[i];
      if (v < -axis_dim || v >= axis_dim)
        return ctx.fail("index " + std::to_string(v) + " out of range for axis " + std::to_string(axis) + " of size " +
                        std::to_string(axis_dim));
    }
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* data, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* idx, in.get(1));
  CudaBackend& be = cuda_backend(ctx);
  Tensor flag;
  if (!host_indices) {
    MS_ASSIGN_OR_RETURN(flag, device_scratch(ctx, sizeof(int)));
    MS_CUDA_CHECK(cudaMemsetAsync(flag.raw(), 0, sizeof(int), be.stream()));
  }
  MS_RETURN_IF_ERROR(launched(ctx,
                              cuda::gather(data->raw(), idx->data<int64_t>(), y.raw(), outer, axis_dim, idx0.numel(),
                                           inner, static_cast<int>(dtype_size(y.dtype())),
                                           host_indices ? nullptr : static_cast<int*>(flag.raw()), be.stream()),
                              "gather"));
  ctx.set_impl("cuda:gather");
  if (host_indices) return Status::ok();
  int bad = 0;
  MS_CUDA_CHECK(cudaMemcpyAsync(&bad, flag.raw(), sizeof(int), cudaMemcpyDefault, be.stream()));
  MS_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  if (bad) return ctx.fail("index out of range for axis " + std::to_string(axis));
  return Status::ok();
}

Status cast(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  // Float, integer or bool to float on the device; integer results (shapes, indices) are host values.
  // The same type (a Cast to bool of a device mask): a device copy.
  if (y.defined() && y.dtype() == x0.dtype() && !x0.device().is_cpu()) {
    ctx.set_impl("cuda:copy");
    if (y.raw() != x0.raw() && y.nbytes())
      MS_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x0.raw(), y.nbytes(), cudaMemcpyDefault, cuda_backend(ctx).stream()));
    return Status::ok();
  }
  const bool from_int = x0.dtype() == DType::I64 || x0.dtype() == DType::I32 || x0.dtype() == DType::Bool;
  if (!y.defined() || !(is_device_float(x0.dtype()) || from_int) || !is_device_float(y.dtype()))
    return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(ScalarType from, scalar_type(x0.dtype()));
  MS_ASSIGN_OR_RETURN(ScalarType to, scalar_type(y.dtype()));
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:cast");
  return launched(ctx, cuda::cast(x->raw(), from, y.raw(), to, y.numel(), cuda_backend(ctx).stream()), "cast");
}

// Integer parameters (Slice's starts/ends/axes/steps, Pad's pads, Expand's shape, Split's sizes):
// read on the host, where integer tensors live.
Expected<std::vector<int64_t>> host_ints(runtime::KernelContext& ctx, size_t i) {
  MS_ASSIGN_OR_RETURN(Tensor h, host_copy(ctx, ctx.input(i)));
  return h.to_int_vector();
}

// Copies `d` from `src` (element offset `src_off`) into `dst`, or nothing when the output already
// is that window of the input.
Status copy_window(runtime::KernelContext& ctx, const Tensor& x, int64_t src_off, Tensor& y, const CopyDesc& d,
                   const char* what) {
  const int64_t es = static_cast<int64_t>(dtype_size(y.dtype()));
  const char* from = static_cast<const char*>(x.raw()) + src_off * es;
  if (y.numel() == 0 || y.raw() == from) return Status::ok();
  return launched(ctx, strided_copy(from, y.raw(), y.numel(), d, static_cast<int>(es), cuda_backend(ctx).stream()),
                  what);
}

Status slice(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (!is_device_float(x0.dtype()) || x0.rank() > kMaxRank) return cpu_fallback(ctx);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)  // the arguments are read on the host
    if (ctx.has_input(i) && !ctx.input(i).device().is_cpu()) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(cpu::tensor::SliceGeometry g, cpu::tensor::slice_geometry(ctx));
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, x0.dtype(), g.shape));
  if (y->shape() != g.shape)
    return ctx.fail("output " + shape_to_string(y->shape()) + " does not match slice " + shape_to_string(g.shape));
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  const Shape ys = row_major_strides(g.shape);
  CopyDesc d;
  d.rank = static_cast<int>(g.shape.size());
  for (size_t k = 0; k < g.shape.size(); ++k) {
    d.dims[k] = g.shape[k];
    d.src_stride[k] = g.src_strides[k];
    d.dst_stride[k] = ys[k];
  }
  ctx.set_impl("cuda:slice");
  return copy_window(ctx, *x, g.base, *y, d, "slice");
}

Status split(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (!is_device_float(x0.dtype()) || x0.rank() > kMaxRank) return cpu_fallback(ctx);
  for (size_t i = 0; i < ctx.num_outputs(); ++i)
    if (!ctx.output(i).defined()) return cpu_fallback(ctx);  // sizes not inferred: the CPU kernel works them out
  const int64_t r = static_cast<int64_t>(x0.rank());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  if (axis < 0 || axis >= r) return ctx.fail("axis out of range");
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  const Shape xs = row_major_strides(x0.shape());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    Tensor& y = ctx.output(i);
    if (static_cast<int64_t>(y.rank()) != r) return ctx.fail("output " + std::to_string(i) + " rank differs");
    const Shape ys = row_major_strides(y.shape());
    CopyDesc d;
    d.rank = static_cast<int>(r);
    for (int64_t k = 0; k < r; ++k) {
      d.dims[k] = y.shape()[static_cast<size_t>(k)];
      d.src_stride[k] = xs[static_cast<size_t>(k)];
      d.dst_stride[k] = ys[static_cast<size_t>(k)];
    }
    MS_RETURN_IF_ERROR(copy_window(ctx, *x, offset * xs[static_cast<size_t>(axis)], y, d, "split"));
    offset += y.shape()[static_cast<size_t>(axis)];
  }
  if (offset != x0.shape()[static_cast<size_t>(axis)])
    return ctx.fail("split outputs do not cover input " + shape_to_string(x0.shape()));
  ctx.set_impl("cuda:split");
  return Status::ok();
}

Status expand(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (!is_device_float(x0.dtype())) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(std::vector<int64_t> want, host_ints(ctx, 1));
  // The output shape: x's and `want` broadcast against each other.
  const size_t rank = std::max(want.size(), x0.shape().size());
  if (rank > static_cast<size_t>(kMaxRank)) return cpu_fallback(ctx);
  Shape shape(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t a = k + x0.rank() >= rank ? x0.shape()[k + x0.rank() - rank] : 1;
    const int64_t b = k + want.size() >= rank ? want[k + want.size() - rank] : 1;
    if (a != b && a != 1 && b != 1)
      return ctx.fail("cannot expand " + shape_to_string(x0.shape()) + " to " + shape_to_string(Shape(want)));
    shape[k] = a == 1 ? b : a;
  }
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, x0.dtype(), shape));
  CopyDesc d;
  d.rank = static_cast<int>(rank);
  if (!broadcast_strides(shape, x0.shape(), d.src_stride)) return cpu_fallback(ctx);
  const Shape ys = row_major_strides(shape);
  for (size_t k = 0; k < rank; ++k) {
    d.dims[k] = shape[k];
    d.dst_stride[k] = ys[k];
  }
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:expand");
  return copy_window(ctx, *x, 0, *y, d, "expand");
}

Status pad(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const int64_t r = static_cast<int64_t>(x0.rank());
  if (!is_device_float(x0.dtype()) || r > kMaxRank) return cpu_fallback(ctx);
  const std::string mode = ctx.node().attr_string("mode", "constant");
  PadDesc d;
  d.rank = static_cast<int>(r);
  d.mode = mode == "constant" ? 0 : mode == "edge" ? 1 : mode == "reflect" ? 2 : mode == "wrap" ? 3 : -1;
  if (d.mode < 0) return ctx.fail("unknown pad mode '" + mode + "'");
  std::vector<int64_t> pads, axes, full;
  const bool has_axes = ctx.opset() >= 11 && ctx.has_input(3);
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints(ctx.node().has_attr("pads") ? "pads" : "paddings");
  } else {
    MS_ASSIGN_OR_RETURN(pads, host_ints(ctx, 1));
    if (has_axes) {
      MS_ASSIGN_OR_RETURN(axes, host_ints(ctx, 3));
    }
  }
  std::string err;
  if (!ops::tensor::expand_pads(pads, has_axes ? &axes : nullptr, r, full, err)) return ctx.fail(err);
  Shape shape(static_cast<size_t>(r));
  const Shape xs = row_major_strides(x0.shape());
  for (int64_t k = 0; k < r; ++k) {
    const auto u = static_cast<size_t>(k);
    shape[u] = x0.shape()[u] + full[u] + full[u + static_cast<size_t>(r)];
    if (shape[u] < 0) return ctx.fail("pads crop axis " + std::to_string(k) + " below zero");
    if (d.mode != 0 && x0.shape()[u] == 0 && shape[u] > 0) return ctx.fail("cannot " + mode + "-pad an empty axis");
    d.out_dims[k] = shape[u];
    d.in_dims[k] = x0.shape()[u];
    d.in_stride[k] = xs[u];
    d.before[k] = full[u];
  }
  uint64_t fill_bits = 0;
  if (ctx.opset() < 11) {
    Tensor v = Tensor::from_vector<float>({ctx.node().attr_float("value", 0.f)}, {1});
    if (x0.dtype() != DType::F32) return cpu_fallback(ctx);  // opset < 11 pads floats only as f32 here
    std::memcpy(&fill_bits, v.raw(), 4);
  } else if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    if (ctx.input(2).dtype() != x0.dtype()) return ctx.fail("constant_value dtype differs from the data's");
    MS_ASSIGN_OR_RETURN(Tensor h, host_copy(ctx, ctx.input(2)));
    std::memcpy(&fill_bits, h.raw(), dtype_size(x0.dtype()));
  }
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, x0.dtype(), shape));
  if (y->shape() != shape)
    return ctx.fail("output " + shape_to_string(y->shape()) + " does not match the padded " + shape_to_string(shape));
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:pad");
  return launched(ctx,
                  cuda::pad(x->raw(), y->raw(), y->numel(), d, static_cast<int>(dtype_size(x0.dtype())), fill_bits,
                            cuda_backend(ctx).stream()),
                  "pad");
}

Status where(runtime::KernelContext& ctx) {
  const Tensor& c0 = ctx.input(0);
  const Tensor& a0 = ctx.input(1);
  const Tensor& b0 = ctx.input(2);
  Tensor& y = ctx.output(0);
  if (c0.dtype() != DType::Bool || !is_device_float(a0.dtype()) || b0.dtype() != a0.dtype() || !y.defined())
    return cpu_fallback(ctx);
  StridedDesc d;
  int64_t cs[kMaxRank] = {};
  if (!broadcast_desc(y.shape(), a0.shape(), b0.shape(), d) || !broadcast_strides(y.shape(), c0.shape(), cs))
    return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* c, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* a, in.get(1));
  MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(2));
  ctx.set_impl("cuda:where");
  return launched(ctx,
                  cuda::where(static_cast<const uint8_t*>(c->raw()), cs, a->raw(), b->raw(), y.raw(), y.numel(), d,
                              static_cast<int>(dtype_size(y.dtype())), cuda_backend(ctx).stream()),
                  "where");
}

// Inference Dropout (or training with a ratio of 0) is the identity: a device copy (or nothing, when
// planned in place), and its mask, when asked for, all true. Other training stays with the CPU kernel.
Status dropout(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const auto& outs = ctx.node().outputs;
  const bool mask = outs.size() > 1 && !outs[1].empty();
  bool training = false;
  if (ctx.has_input(2)) {
    MS_ASSIGN_OR_RETURN(Tensor t, host_copy(ctx, ctx.input(2)));
    training = t.numel() > 0 && t.data<bool>()[0];
  }
  if (training && ctx.has_input(1)) {  // training with a ratio of 0 (an export's) keeps every element
    MS_ASSIGN_OR_RETURN(Tensor ratio, host_copy(ctx, ctx.input(1)));
    training = !(ratio.numel() == 1 && ratio.at_double(0) == 0.0);
  }
  if (!is_device_float(x0.dtype()) || training) return cpu_fallback(ctx);
  MS_ASSIGN_OR_RETURN(Tensor * y, out(ctx, 0, x0.dtype(), x0.shape()));
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  CudaBackend& be = cuda_backend(ctx);
  ctx.set_impl("cuda:copy");
  if (y->raw() != x->raw() && x->nbytes())
    MS_CUDA_CHECK(cudaMemcpyAsync(y->raw(), x->raw(), x->nbytes(), cudaMemcpyDefault, be.stream()));
  if (mask) {  // every element kept: all true, where the executor put the mask (host, or a device arena)
    Tensor& m = ctx.outputs()[1];
    if (m.defined() && !m.device().is_cpu()) {
      MS_CUDA_CHECK(cudaMemsetAsync(m.raw(), 1, m.nbytes(), be.stream()));
    } else {
      if (!m.defined()) m = Tensor::empty(DType::Bool, x0.shape());
      std::memset(m.raw(), 1, m.nbytes());
    }
  }
  return Status::ok();
}

}  // namespace

void register_data_ops(runtime::KernelRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) r.add(op, &view);
  r.add("Transpose", &transpose);
  r.add("Concat", &concat);
  r.add("Split", &split);
  r.add("Slice", &slice);
  r.add("Expand", &expand);
  r.add("Pad", &pad);
  r.add("Where", &where);
  r.add("Dropout", &dropout);
  r.add("Shape", &metadata_op);
  r.add("Size", &metadata_op);
  // Shape arithmetic on the host's integer and bool tensors; float data through them is a fallback.
  for (const char* op : {"Range", "And", "Or", "Xor", "Mod", "NonZero", "Tile", "ReduceProd"}) r.add(op, &host_op);
  r.add("Gather", &gather);
  r.add("Cast", &cast);
}

}  // namespace ms::cuda
