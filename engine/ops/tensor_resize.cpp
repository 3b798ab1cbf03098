// Resize (opsets 10, 11, 13, 18, 19) and the older Upsample (7, 9): attributes, output shapes and the
// coordinate transforms, shared with the CPU kernel so both follow the ONNX reference exactly.
#include <algorithm>
#include <cmath>

#include "engine/ops/tensor_internal.h"

namespace ms::ops::tensor {

ResizeSlots resize_slots(const std::string& op_type, int64_t opset) {
  ResizeSlots s;
  if (op_type == "Upsample") {
    if (opset >= 9) s.scales = 1;
  } else if (opset < 11) {
    s.scales = 1;
  } else {
    s.roi = 1;
    s.scales = 2;
    s.sizes = 3;
  }
  return s;
}

bool resize_attributes(const ir::Node& node, int64_t opset, ResizeParams& p, std::string& err) {
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest")
    p.mode = ResizeParams::Mode::Nearest;
  else if (mode == "linear" || mode == "bilinear")
    p.mode = ResizeParams::Mode::Linear;
  else if (mode == "cubic" && node.op_type == "Resize" && opset >= 11)
    p.mode = ResizeParams::Mode::Cubic;
  else {
    err = "resize mode '" + mode + "' is not supported";
    return false;
  }
  if (node.op_type == "Upsample" || opset < 11) {
    // The first forms have no coordinate attributes: they scale from the top-left corner, and
    // nearest picks floor (ceil when shrinking, as the reference runtimes do for Resize-10).
    p.coord_mode = "asymmetric";
    p.nearest_mode = "simple";
    return true;
  }
  p.coord_mode = node.attr_string("coordinate_transformation_mode", "half_pixel");
  static const char* coord_modes[] = {"half_pixel",           "pytorch_half_pixel", "align_corners",       "asymmetric",
                                      "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
  bool ok = false;
  for (const char* m : coord_modes) ok |= p.coord_mode == m;
  if (!ok) {
    err = "coordinate_transformation_mode '" + p.coord_mode + "' is not supported";
    return false;
  }
  p.nearest_mode = node.attr_string("nearest_mode", "round_prefer_floor");
  if (p.nearest_mode != "round_prefer_floor" && p.nearest_mode != "round_prefer_ceil" && p.nearest_mode != "floor" &&
      p.nearest_mode != "ceil") {
    err = "nearest_mode '" + p.nearest_mode + "' is not supported";
    return false;
  }
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = node.attr_float("extrapolation_value", 0.f);
  if (opset >= 18) {
    p.antialias = node.attr_int("antialias", 0) != 0;
    p.axes = node.attr_ints("axes", {});
    p.keep_aspect = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (p.keep_aspect != "stretch" && p.keep_aspect != "not_larger" && p.keep_aspect != "not_smaller") {
      err = "keep_aspect_ratio_policy '" + p.keep_aspect + "' is not supported (stretch, not_larger, not_smaller)";
      return false;
    }
  }
  return true;
}

namespace {

// p.axes normalized against the rank (all axes when none were listed).
bool normalize_resize_axes(size_t rank, ResizeParams& p, std::string& err) {
  const bool listed = !p.axes.empty();
  if (!listed) {
    for (size_t i = 0; i < rank; ++i) p.axes.push_back(static_cast<int64_t>(i));
    return true;
  }
  std::string why;
  if (!normalize_axes(p.axes, static_cast<int64_t>(rank), true, why).is_ok()) {
    err = "attribute 'axes': " + why;
    return false;
  }
  return true;
}

// A roi listing only p.axes ([starts..., ends...]) spread over all axes (start 0, end 1 elsewhere).
bool spread_roi(size_t rank, bool listed, ResizeParams& p, std::string& err) {
  if (p.roi.empty() || !listed) return true;
  const size_t n = p.axes.size();
  if (p.roi.size() != 2 * n) {
    err =
        "roi must have " + std::to_string(2 * n) + " values (2 per entry of axes), got " + std::to_string(p.roi.size());
    return false;
  }
  std::vector<double> full(rank, 0.0);
  full.resize(2 * rank, 1.0);
  for (size_t i = 0; i < n; ++i) {
    full[static_cast<size_t>(p.axes[i])] = p.roi[i];
    full[static_cast<size_t>(p.axes[i]) + rank] = p.roi[i + n];
  }
  p.roi = std::move(full);
  return true;
}

// Output sizes given: per axis (stretch) or one scale for all listed axes (keep_aspect_ratio_policy).
bool sizes_shape(const Shape& in, const std::vector<int64_t>& sizes, ResizeParams& p, std::string& err) {
  for (int64_t v : sizes)
    if (v < 0) {
      err = "sizes must be >= 0, got " + shape_to_string(sizes);
      return false;
    }
  if (p.keep_aspect == "stretch") {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto a = static_cast<size_t>(p.axes[i]);
      p.out_shape[a] = sizes[i];
      p.scales[a] = in[a] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in[a]) : 1.0;
    }
    return true;
  }
  const bool smaller = p.keep_aspect == "not_larger";
  double scale = smaller ? HUGE_VAL : 0.0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto a = static_cast<size_t>(p.axes[i]);
    if (in[a] <= 0) {
      err = "keep_aspect_ratio_policy '" + p.keep_aspect + "' cannot scale the empty axis " + std::to_string(a);
      return false;
    }
    const double r = static_cast<double>(sizes[i]) / static_cast<double>(in[a]);
    scale = smaller ? std::min(scale, r) : std::max(scale, r);
  }
  for (int64_t a : p.axes) {
    const auto u = static_cast<size_t>(a);
    p.scales[u] = scale;
    p.out_shape[u] = static_cast<int64_t>(scale * static_cast<double>(in[u]) + 0.5);  // round half up
  }
  return true;
}

}  // namespace

bool resize_shape(const Shape& in, const std::vector<double>* scales, const std::vector<int64_t>* sizes,
                  ResizeParams& p, std::string& err) {
  const size_t rank = in.size();
  const bool listed = !p.axes.empty();
  if (!normalize_resize_axes(rank, p, err) || !spread_roi(rank, listed, p, err)) return false;
  const size_t n = p.axes.size();
  const std::string per = listed ? "entry of axes " + shape_to_string(p.axes) : "dim";
  p.scales.assign(rank, 1.0);
  p.out_shape = in;
  if (sizes) {
    if (sizes->size() != n) {
      err = "sizes " + shape_to_string(*sizes) + " must have one entry per " + per + " of " + shape_to_string(in);
      return false;
    }
    if (!sizes_shape(in, *sizes, p, err)) return false;
  } else if (!scales) {
    err = "one of scales and sizes must be given";
    return false;
  } else if (scales->size() != n) {
    err = "scales must have one entry per " + per + " of " + shape_to_string(in) + ", got " +
          std::to_string(scales->size());
    return false;
  } else {
    for (size_t i = 0; i < n; ++i) {
      const double s = (*scales)[i];
      const auto a = static_cast<size_t>(p.axes[i]);
      if (!(s > 0) || !std::isfinite(s) || s * static_cast<double>(in[a]) > 1e12) {
        err = "scales must be positive and finite";
        return false;
      }
      p.scales[a] = s;
      p.out_shape[a] = static_cast<int64_t>(s * static_cast<double>(in[a]));
    }
  }
  double total = 1;
  for (int64_t d : p.out_shape) total *= static_cast<double>(d);
  if (total > static_cast<double>(int64_t{1} << 48)) {
    err = "output shape " + shape_to_string(p.out_shape) + " is too large";
    return false;
  }
  return true;
}

bool resize_coordinate(const ResizeParams& p, size_t axis, int64_t x_out, int64_t in_dim, double& x_in) {
  const double x = static_cast<double>(x_out);
  const double s = p.scales[axis];
  const double in = static_cast<double>(in_dim);
  const double out = s * in;  // the reference uses the real-valued output length here
  const std::string& m = p.coord_mode;
  if (m == "asymmetric") {
    x_in = x / s;
  } else if (m == "half_pixel") {
    x_in = (x + 0.5) / s - 0.5;
  } else if (m == "pytorch_half_pixel") {
    x_in = out > 1 ? (x + 0.5) / s - 0.5 : -0.5;
  } else if (m == "align_corners") {
    x_in = out == 1 ? 0.0 : x * (in - 1) / (out - 1);
  } else if (m == "tf_half_pixel_for_nn") {
    x_in = (x + 0.5) / s;
  } else if (m == "half_pixel_symmetric") {
    // Ratio of the integer to the real output length.
    const double adj = axis < p.out_shape.size() ? static_cast<double>(p.out_shape[axis]) / out : 1.0;
    const double center = in / 2.0;
    const double offset = center * (1 - adj);
    x_in = offset + (x + 0.5) / s - 0.5;
  } else {  // tf_crop_and_resize
    const size_t rank = p.scales.size();
    const double r0 = p.roi.size() == 2 * rank ? p.roi[axis] : 0.0;
    const double r1 = p.roi.size() == 2 * rank ? p.roi[axis + rank] : 1.0;
    x_in = out == 1 ? (r1 - r0) * (in - 1) / 2 : x * (r1 - r0) * (in - 1) / (out - 1);
    x_in += r0 * (in - 1);
    if (x_in < 0 || x_in > in - 1) return false;
  }
  return true;
}

namespace {

Status infer_resize(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  ResizeParams p;
  std::string err;
  if (!resize_attributes(ctx.node, ctx.opset, p, err)) return ctx.fail(err);
  const ResizeSlots slots = resize_slots(ctx.node.op_type, ctx.opset);
  const auto* in = ctx.dims(0);
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  bool unknown = false;
  if (ctx.node.op_type == "Upsample" && slots.scales < 0) {
    const auto f = ctx.node.attr_floats("scales");
    scales = std::vector<double>(f.begin(), f.end());
  }
  const auto read = [&](int slot, bool as_sizes) {
    if (slot < 0 || !ctx.has_input(static_cast<size_t>(slot))) return;
    const Tensor* t = host_value(ctx, static_cast<size_t>(slot));
    const auto* d = ctx.dims(static_cast<size_t>(slot));
    if (!t) {
      // An input given by name but of static size 0 is the "not given" marker.
      if (!(d && d->size() == 1 && (*d)[0] == 0)) unknown = true;
      return;
    }
    if (t->numel() == 0) return;
    if (as_sizes) {
      sizes = t->to_int_vector();
    } else {
      scales.emplace();
      for (int64_t i = 0; i < t->numel(); ++i) scales->push_back(t->at_double(i));
    }
  };
  if (slots.scales >= 0 && ctx.has_input(static_cast<size_t>(slots.scales)) &&
      !is_float(ctx.in(static_cast<size_t>(slots.scales)).dtype))
    return ctx.fail("scales must be a float tensor");
  if (slots.sizes >= 0 && ctx.has_input(static_cast<size_t>(slots.sizes)) &&
      !is_integer(ctx.in(static_cast<size_t>(slots.sizes)).dtype))
    return ctx.fail("sizes must be i64");
  read(slots.scales, false);
  read(slots.sizes, true);
  if (scales && sizes) return ctx.fail("only one of scales and sizes may be given");
  if (!in) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const bool any_unknown = std::any_of(in->begin(), in->end(), [](int64_t d) { return d < 0; });
  if (unknown || (sizes && p.keep_aspect != "stretch" && any_unknown)) {
    ctx.set_output(0, dt, std::vector<int64_t>(in->size(), -1));
    return Status::ok();
  }
  Shape probe = *in;
  for (auto& d : probe) d = std::max<int64_t>(d, 0);
  if (!resize_shape(probe, scales ? &*scales : nullptr, sizes ? &*sizes : nullptr, p, err))
    return ctx.fail(err + " (input " + shape_to_string(*in) + ")");
  MS_RETURN_IF_ERROR(check_size(ctx, p.out_shape));
  std::vector<int64_t> out = p.out_shape;
  std::vector<bool> sized(in->size(), false);  // output dim set by sizes alone
  if (sizes && p.keep_aspect == "stretch")
    for (int64_t a : p.axes) sized[static_cast<size_t>(a)] = true;
  for (size_t i = 0; i < in->size(); ++i)
    if ((*in)[i] < 0 && !sized[i]) out[i] = -1;
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

}  // namespace

void register_resize_ops(Registry& r) {
  r.add(make_schema("Resize", 1, 4, 1, 1, OpCategory::Data, infer_resize));
  r.add(make_schema("Upsample", 1, 2, 1, 1, OpCategory::Data, infer_resize));
}

}  // namespace ms::ops::tensor
