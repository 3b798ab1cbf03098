// Schemas of the windowed vision ops: MaxUnpool, DeformConv (kernel_shape / pads / strides / dilations).
#include <algorithm>

#include "engine/ops/nn_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::ops {
namespace {

using nn::dims_conflict;
using nn::dims_string;
using nn::require_float;
using nn::require_rank;
using std::to_string;

// kernel_shape / strides / pads / dilations of `r` spatial axes, checked.
struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

Status read_list(const InferContext& ctx, const char* name, size_t n, int64_t fill, int64_t min,
                 std::vector<int64_t>& out) {
  out = ctx.node.attr_ints(name, std::vector<int64_t>(n, fill));
  if (out.size() != n)
    return ctx.fail(std::string("attribute '") + name + "' " + dims_string(out) + " must have " + to_string(n) +
                    " values");
  for (int64_t v : out)
    if (v < min)
      return ctx.fail(std::string("attribute '") + name + "' " + dims_string(out) + " must be >= " + to_string(min));
  return Status::ok();
}

// kernel: the kernel_shape attribute when given, else `fallback` (W's spatial dims; -1 unknown).
Status read_window(const InferContext& ctx, size_t r, const std::vector<int64_t>* fallback, Window& w) {
  if (ctx.node.has_attr("kernel_shape") || !fallback) {
    if (!ctx.node.has_attr("kernel_shape")) return ctx.fail("attribute 'kernel_shape' is required");
    MS_RETURN_IF_ERROR(read_list(ctx, "kernel_shape", r, 1, 1, w.kernel));
  } else {
    w.kernel = *fallback;
  }
  MS_RETURN_IF_ERROR(read_list(ctx, "strides", r, 1, 1, w.strides));
  MS_RETURN_IF_ERROR(read_list(ctx, "pads", 2 * r, 0, 0, w.pads));
  return read_list(ctx, "dilations", r, 1, 1, w.dilations);
}

// --- MaxUnpool ---------------------------------------------------------------------------------------

Status infer_max_unpool(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  if (!is_integer(ctx.in(1).dtype)) return ctx.fail("input 1 (I) must be an integer tensor");
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  const auto* id = ctx.dims(1);
  if (xd && id) {
    bool bad = id->size() != xd->size();
    for (size_t i = 0; !bad && i < xd->size(); ++i) bad = dims_conflict((*xd)[i], (*id)[i]);
    if (bad) return ctx.fail("I " + dims_string(*id) + " must have the shape of X " + dims_string(*xd));
  }
  if (!xd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const size_t r = xd->size() - 2;
  Window w;
  MS_RETURN_IF_ERROR(read_window(ctx, r, nullptr, w));
  std::vector<int64_t> out = *xd;
  for (size_t i = 0; i < r; ++i) {
    if ((*xd)[i + 2] < 0) {
      out[i + 2] = -1;
      continue;
    }
    out[i + 2] = ((*xd)[i + 2] - 1) * w.strides[i] - w.pads[i] - w.pads[i + r] + w.kernel[i];
    if (out[i + 2] < 0) return ctx.fail("pads " + dims_string(w.pads) + " leave a negative unpooled dim");
  }
  if (ctx.has_input(2)) {
    if (!is_integer(ctx.in(2).dtype)) return ctx.fail("input 2 (output_shape) must be an integer tensor");
    const auto shape = tensor::known_ints(ctx, 2);
    if (!shape) {
      ctx.set_output(0, ctx.in(0).dtype, std::vector<int64_t>(xd->size(), -1));
      return Status::ok();
    }
    if (shape->size() != xd->size())
      return ctx.fail("output_shape " + dims_string(*shape) + " must have one value per dim of X " + dims_string(*xd));
    for (size_t i = 0; i < shape->size(); ++i)
      if ((*shape)[i] < 0 || (out[i] >= 0 && (*shape)[i] < out[i]) || (i < 2 && dims_conflict((*shape)[i], out[i])))
        return ctx.fail("output_shape " + dims_string(*shape) + " is smaller than the unpooled shape " +
                        dims_string(out) + " or changes N, C");
    out = *shape;
  }
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

// --- DeformConv --------------------------------------------------------------------------------------

// X, W, offset, B and mask against each other (known dims only).
Status check_deform_inputs(const InferContext& ctx, const std::vector<int64_t>& x, const std::vector<int64_t>& wd,
                           const Window& w) {
  const int64_t group = ctx.node.attr_int("group", 1), og = ctx.node.attr_int("offset_group", 1);
  if (group < 1 || og < 1) return ctx.fail("attributes 'group' and 'offset_group' must be >= 1");
  if (wd.size() != x.size()) return ctx.fail("W " + dims_string(wd) + " must have the rank of X " + dims_string(x));
  if (x[1] >= 0 && wd[1] >= 0 && x[1] != wd[1] * group)
    return ctx.fail("X has " + to_string(x[1]) + " channels, W " + dims_string(wd) + " with group " + to_string(group) +
                    " needs " + to_string(wd[1] * group));
  if (wd[0] >= 0 && wd[0] % group != 0) return ctx.fail("W's output channels must be divisible by group");
  if (x[1] >= 0 && x[1] % og != 0) return ctx.fail("X's channels must be divisible by offset_group");
  int64_t k = 1;
  for (int64_t v : w.kernel) k = v < 0 || k < 0 ? -1 : k * v;
  const auto* od = ctx.dims(2);
  const int64_t r = static_cast<int64_t>(x.size()) - 2;
  if (od && (od->size() != x.size() || (k >= 0 && dims_conflict((*od)[1], og * k * r))))
    return ctx.fail("offset " + dims_string(*od) + " must be [N, offset_group * kernel size * " + to_string(r) +
                    ", out dims...]");
  const auto* bd = ctx.has_input(3) ? ctx.dims(3) : nullptr;
  if (bd && (bd->size() != 1 || dims_conflict((*bd)[0], wd[0])))
    return ctx.fail("B " + dims_string(*bd) + " must be [" + to_string(wd[0]) + "]");
  const auto* md = ctx.has_input(4) ? ctx.dims(4) : nullptr;
  if (md && (md->size() != x.size() || (k >= 0 && dims_conflict((*md)[1], og * k))))
    return ctx.fail("mask " + dims_string(*md) + " must be [N, offset_group * kernel size, out dims...]");
  return Status::ok();
}

Status infer_deform_conv(InferContext& ctx) {
  for (size_t i = 0; i < 5; ++i)
    if (i < 3 || ctx.has_input(i)) MS_RETURN_IF_ERROR(require_float(ctx, i, i == 0 ? "X" : "W/offset/B/mask"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  const auto* wd = ctx.dims(1);
  if (!xd || !wd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const size_t r = xd->size() - 2;
  if (wd->size() != xd->size())
    return ctx.fail("W " + dims_string(*wd) + " must have the rank of X " + dims_string(*xd));
  const std::vector<int64_t> wk(wd->begin() + 2, wd->end());
  Window w;
  MS_RETURN_IF_ERROR(read_window(ctx, r, &wk, w));
  for (size_t i = 0; i < r; ++i)
    if (dims_conflict(w.kernel[i], wk[i]))
      return ctx.fail("attribute 'kernel_shape' " + dims_string(w.kernel) + " differs from W " + dims_string(*wd));
  MS_RETURN_IF_ERROR(check_deform_inputs(ctx, *xd, *wd, w));
  std::vector<int64_t> out{(*xd)[0], (*wd)[0]};
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = (*xd)[i + 2], k = w.kernel[i];
    if (in < 0 || k < 0) {
      out.push_back(-1);
      continue;
    }
    const int64_t span = in + w.pads[i] + w.pads[i + r] - ((k - 1) * w.dilations[i] + 1);
    if (span < 0) return ctx.fail("the dilated kernel is larger than the padded input " + dims_string(*xd));
    out.push_back(span / w.strides[i] + 1);
  }
  const auto* od = ctx.dims(2);
  for (size_t i = 0; od && i < r; ++i)
    if (dims_conflict((*od)[i + 2], out[i + 2]))
      return ctx.fail("offset " + dims_string(*od) + " does not match the output dims " + dims_string(out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

Cost deform_cost(const CostContext& c) {
  double k = 1;
  if (c.inputs.size() > 1 && c.inputs[1].dims)
    for (size_t i = 1; i < c.inputs[1].dims->size(); ++i)
      k *= static_cast<double>(std::max<int64_t>((*c.inputs[1].dims)[i], 1));
  return nn::io_cost(c, 2 * k + 8);
}

}  // namespace

void register_vision_window_ops(Registry& r) {
  r.add(nn::make_schema("MaxUnpool", 9, 2, 3, 1, 1, OpCategory::Pool, infer_max_unpool,
                        [](const CostContext& c) { return nn::io_cost(c, 1); }));
  r.add(nn::make_schema("DeformConv", 19, 3, 5, 1, 1, OpCategory::Conv, infer_deform_conv, deform_cost));
}

}  // namespace ms::ops
