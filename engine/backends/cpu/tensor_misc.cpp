// Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence.
#include <algorithm>

#include "engine/backends/cpu/tensor_internal.h"

namespace ms::cpu::tensor {
namespace {

Status trilu_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  copy_if_distinct(in, out);
  const int64_t rows = in.dim(-2), cols = in.dim(-1);
  // Any |k| beyond rows + cols acts the same; clamping keeps i + k from overflowing.
  const int64_t k = std::clamp<int64_t>(ctx.has_input(1) && ctx.input(1).numel() > 0 ? ctx.input(1).at_int(0) : 0,
                                        -(rows + cols + 1), rows + cols + 1);
  const int64_t mats = rows * cols == 0 ? 0 : in.numel() / (rows * cols);
  char* o = static_cast<char*>(out.raw());
  // Zero bytes are zero in every dtype here (0.0, 0, false).
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      char* row = o + static_cast<size_t>((m * rows + i) * cols) * es;
      // upper keeps j >= i + k; lower keeps j <= i + k.
      const int64_t edge = std::clamp<int64_t>(i + k, -1, cols + 1);
      if (upper) {
        const int64_t z = std::clamp<int64_t>(edge, 0, cols);
        std::memset(row, 0, static_cast<size_t>(z) * es);
      } else {
        const int64_t from = std::clamp<int64_t>(edge + 1, 0, cols);
        std::memset(row + static_cast<size_t>(from) * es, 0, static_cast<size_t>(cols - from) * es);
      }
    }
  return Status::ok();
}

Status eye_like_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, out.dtype()));
  std::memset(out.raw(), 0, out.nbytes());
  unsigned char one[16] = {0};
  store_double(out.dtype(), 1.0, one);
  const int64_t rows = out.dim(0), cols = out.dim(1);
  const int64_t k = std::clamp<int64_t>(ctx.node().attr_int("k", 0), -(rows + 1), cols + 1);
  char* o = static_cast<char*>(out.raw());
  for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i)
    std::memcpy(o + static_cast<size_t>(i * cols + i + k) * es, one, es);
  return Status::ok();
}

// DepthToSpace: out[n, c, h*b+i, w*b+j] from the input viewed as [N, b, b, C', H, W] (DCR) or
// [N, C', b, b, H, W] (CRD); SpaceToDepth is the inverse of either.
Status depth_to_space_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const int64_t b = ctx.node().attr_int("blocksize", 1);
  const bool crd = ctx.node().attr_string("mode", "DCR") == "CRD";
  const int64_t n = in.dim(0), c = in.dim(1) / (b * b), h = in.dim(2), w = in.dim(3);
  // Strides of the 6-d input view.
  const Shape view = crd ? Shape{n, c, b, b, h, w} : Shape{n, b, b, c, h, w};
  const Shape vs = contiguous_strides(view);
  // Output as [N, C', H, b, W, b]: pick the matching input stride for each.
  const Shape src =
      crd ? Shape{vs[0], vs[1], vs[4], vs[2], vs[5], vs[3]} : Shape{vs[0], vs[3], vs[4], vs[1], vs[5], vs[2]};
  const Shape oshape{n, c, h, b, w, b};
  strided_copy(out.raw(), in.raw(), oshape, contiguous_strides(oshape), src, es);
  return Status::ok();
}

Status space_to_depth_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const int64_t b = ctx.node().attr_int("blocksize", 1);
  const int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2) / b, w = in.dim(3) / b;
  const bool crd = ctx.node().attr_string("mode", "DCR") == "CRD";
  const Shape vs = contiguous_strides(Shape{n, c, h, b, w, b});
  // Output as [N, b(i), b(j), C, H', W'] (DCR) or [N, C, b(i), b(j), H', W'] (CRD).
  const Shape oshape = crd ? Shape{n, c, b, b, h, w} : Shape{n, b, b, c, h, w};
  const Shape src =
      crd ? Shape{vs[0], vs[1], vs[3], vs[5], vs[2], vs[4]} : Shape{vs[0], vs[3], vs[5], vs[1], vs[2], vs[4]};
  strided_copy(out.raw(), in.raw(), oshape, contiguous_strides(oshape), src, es);
  return Status::ok();
}

Status reverse_sequence_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  const Tensor& lens = ctx.input(1);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const int64_t ba = ctx.node().attr_int("batch_axis", 1), ta = ctx.node().attr_int("time_axis", 0);
  const int64_t batch = in.dim(ba), time = in.dim(ta);
  if (lens.numel() != batch)
    return ctx.fail("sequence_lens has " + std::to_string(lens.numel()) + " entries for batch " +
                    std::to_string(batch));
  copy_if_distinct(in, out);
  const Shape st = contiguous_strides(in.shape());
  const size_t row = static_cast<size_t>(st[1]) * es;  // dims after the first two are contiguous
  const char* src = static_cast<const char*>(in.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t bi = 0; bi < batch; ++bi) {
    const int64_t len = index_at(lens, bi);
    if (len < 0 || len > time)
      return ctx.fail("sequence length " + std::to_string(len) + " is out of range [0, " + std::to_string(time) + "]");
    for (int64_t t = 0; t < len; ++t) {
      const int64_t d = t * st[static_cast<size_t>(ta)] + bi * st[static_cast<size_t>(ba)];
      const int64_t s = (len - 1 - t) * st[static_cast<size_t>(ta)] + bi * st[static_cast<size_t>(ba)];
      std::memcpy(dst + static_cast<size_t>(d) * es, src + static_cast<size_t>(s) * es, row);
    }
  }
  return Status::ok();
}

}  // namespace

void register_misc_kernels(runtime::KernelRegistry& r) {
  r.add("Trilu", trilu_kernel);
  r.add("EyeLike", eye_like_kernel);
  r.add("DepthToSpace", depth_to_space_kernel);
  r.add("SpaceToDepth", space_to_depth_kernel);
  r.add("ReverseSequence", reverse_sequence_kernel);
}

}  // namespace ms::cpu::tensor
