// Gradients of shape and data-movement ops (Split, Pad and Concat, Slice, Gather included) and of
// reductions (sum, mean, max, min). Shape-like inputs (shapes, axes,
// starts/ends) are constants in both modes, so the rules read them as concrete values.
#include <algorithm>
#include <numeric>

#include "engine/frontend/nn/grad.h"

namespace ms::autodiff {
namespace {

namespace F = nn::F;
using nn::operator*;

int64_t wrap_axis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

Expected<Vars> reshape_like_input(const GradContext& c) {
  Vars out(c.inputs.size());
  out[0] = F::reshape(c.gout(0), c.in(0).shape());
  return out;
}

Expected<Vars> transpose_grad(const GradContext& c) {
  const int64_t r = c.in(0).rank();
  std::vector<int64_t> perm = c.node.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return Vars{F::transpose(c.gout(0), inv)};
}

Expected<Vars> expand_grad(const GradContext& c) { return Vars{reduce_to(c.gout(0), c.in(0).shape()), Var()}; }

Expected<Vars> concat_grad(const GradContext& c) {
  const Shape ys = c.out(0).shape();
  const int64_t axis = wrap_axis(c.node.attr_int("axis", 0), static_cast<int64_t>(ys.size()));
  Vars out;
  int64_t off = 0;
  for (const Var& x : c.inputs) {
    const int64_t len = x.dim(axis);
    out.push_back(F::op("Slice", {c.gout(0), F::ints({off}), F::ints({off + len}), F::ints({axis})}));
    off += len;
  }
  return out;
}

Expected<Vars> slice_grad(const GradContext& c) {
  const Shape xs = c.in(0).shape();
  const int64_t r = static_cast<int64_t>(xs.size());
  MS_ASSIGN_OR_RETURN(auto starts, const_ints(c.in(1), "Slice starts"));
  MS_ASSIGN_OR_RETURN(auto ends, const_ints(c.in(2), "Slice ends"));
  std::vector<int64_t> axes, steps;
  if (c.has_input(3)) {
    MS_ASSIGN_OR_RETURN(axes, const_ints(c.in(3), "Slice axes"));
  }
  if (c.has_input(4)) {
    MS_ASSIGN_OR_RETURN(steps, const_ints(c.in(4), "Slice steps"));
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<int64_t> pads(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < axes.size() && i < starts.size() && i < ends.size(); ++i) {
    if (!steps.empty() && steps[i] != 1) return c.fail("only step 1 is supported, got " + std::to_string(steps[i]));
    const int64_t a = wrap_axis(axes[i], r);
    const int64_t d = xs[static_cast<size_t>(a)];
    int64_t s = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, s, d);
    pads[static_cast<size_t>(a)] = s;
    pads[static_cast<size_t>(a + r)] = d - e;
  }
  Vars out(c.inputs.size());
  out[0] = F::op("Pad", {c.gout(0), F::ints(pads)});
  return out;
}

Expected<Vars> gather_grad(const GradContext& c) {
  // Scatter-add of the gradient rows into zeros shaped like the data (ScatterND, reduction add)
  // with the gathered axis moved to the front.
  const Var& data = c.in(0);
  const Var& idx = c.in(1);
  const Shape ds = data.shape(), is = idx.shape();
  const int64_t r = static_cast<int64_t>(ds.size()), ri = static_cast<int64_t>(is.size());
  const int64_t axis = wrap_axis(c.node.attr_int("axis", 0), r);
  Var g = c.gout(0);
  Shape front{ds[static_cast<size_t>(axis)]};
  std::vector<int64_t> to_front, back;
  if (axis != 0) {
    // gy dims: ds[:axis] + is + ds[axis+1:] -> is + ds[:axis] + ds[axis+1:]
    for (int64_t i = 0; i < ri; ++i) to_front.push_back(axis + i);
    for (int64_t i = 0; i < axis; ++i) to_front.push_back(i);
    for (int64_t i = axis + ri; i < r - 1 + ri; ++i) to_front.push_back(i);
    g = F::transpose(g, to_front);
  }
  for (int64_t i = 0; i < r; ++i)
    if (i != axis) front.push_back(ds[static_cast<size_t>(i)]);
  Shape is1 = is;
  is1.push_back(1);
  Var idx64 = idx.dtype() == DType::I64 ? idx : F::cast(idx, DType::I64);
  Var scattered =
      F::op("ScatterND", {zeros(g.dtype(), front), F::reshape(idx64, is1), g}, {{"reduction", std::string("add")}});
  if (axis != 0) {
    // front = [ds[axis], ds[:axis], ds[axis+1:]] -> ds
    for (int64_t i = 1; i <= axis; ++i) back.push_back(i);
    back.push_back(0);
    for (int64_t i = axis + 1; i < r; ++i) back.push_back(i);
    scattered = F::transpose(scattered, back);
  }
  return Vars{scattered, Var()};
}

Expected<std::vector<int64_t>> reduce_axes(const GradContext& c, bool axes_as_input) {
  std::vector<int64_t> axes;
  if (axes_as_input) {
    if (c.has_input(1)) {
      MS_ASSIGN_OR_RETURN(axes, const_ints(c.in(1), c.node.op_type + " axes"));
    }
  } else {
    axes = c.node.attr_ints("axes");
  }
  const int64_t r = c.in(0).rank();
  if (axes.empty()) {
    if (c.node.attr_int("noop_with_empty_axes", 0)) return std::vector<int64_t>{};
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  for (auto& a : axes) a = wrap_axis(a, r);
  return axes;
}

Expected<Vars> reduce_grad(const GradContext& c, bool mean) {
  // ReduceSum takes axes as an input since opset 13; ReduceMean as an attribute until 18.
  const bool axes_input = c.node.op_type == "ReduceSum" || c.inputs.size() > 1;
  MS_ASSIGN_OR_RETURN(auto axes, reduce_axes(c, axes_input));
  const Shape xs = c.in(0).shape();
  Shape keep = xs;
  int64_t count = 1;
  for (int64_t a : axes) {
    count *= xs[static_cast<size_t>(a)];
    keep[static_cast<size_t>(a)] = 1;
  }
  Var g = F::reshape(c.gout(0), keep);
  if (mean && count > 0) g = F::mul(g, 1.0 / static_cast<double>(count));
  Vars out(c.inputs.size());
  out[0] = F::op("Expand", {g, F::ints(xs)});
  return out;
}

// ReduceMax / ReduceMin: the gradient goes to the elements equal to the result, shared evenly
// among ties (as PyTorch's amax/amin).
Expected<Vars> reduce_extremum_grad(const GradContext& c) {
  MS_ASSIGN_OR_RETURN(auto axes, reduce_axes(c, c.inputs.size() > 1));  // axes an input since opset 18
  const Shape xs = c.in(0).shape();
  Shape keep = xs;
  for (int64_t a : axes) keep[static_cast<size_t>(a)] = 1;
  const Var g = F::reshape(c.gout(0), keep);
  const Var hit = cast_like(F::op("Equal", {c.in(0), F::reshape(c.out(0), keep)}), g);
  const Var ties = F::op("ReduceSum", {hit, F::ints(axes)}, {{"keepdims", int64_t{1}}});
  Vars out(c.inputs.size());
  out[0] = F::op("Div", {g * hit, ties});
  return out;
}

// Split: the output gradients side by side (zeros for outputs that do not reach the loss).
Expected<Vars> split_grad(const GradContext& c) {
  const int64_t axis = wrap_axis(c.node.attr_int("axis", 0), c.in(0).rank());
  Vars parts;
  for (size_t i = 0; i < c.outputs.size(); ++i)
    parts.push_back(c.gout(i).defined() ? c.gout(i)
                                        : F::op("Expand", {scalar_like(0.0, c.out(i)), F::ints(c.out(i).shape())}));
  Vars out(c.inputs.size());
  out[0] = F::op("Concat", parts, {{"axis", axis}});
  return out;
}

// Pad (constant mode): the gradient is the padded output cropped back to the input.
Expected<Vars> pad_grad(const GradContext& c) {
  const std::string mode = c.node.attr_string("mode", "constant");
  if (mode != "constant") return c.fail("only a constant-mode Pad has a gradient rule, not mode '" + mode + "'");
  const Shape xs = c.in(0).shape();
  const int64_t r = static_cast<int64_t>(xs.size());
  std::vector<int64_t> pads = c.node.attr_ints("pads"), axes;
  if (c.has_input(1)) {
    MS_ASSIGN_OR_RETURN(pads, const_ints(c.in(1), "Pad pads"));
  }
  if (c.has_input(3)) {
    MS_ASSIGN_OR_RETURN(axes, const_ints(c.in(3), "Pad axes"));
  } else {
    axes.resize(static_cast<size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (pads.size() != 2 * axes.size())
    return c.fail(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> starts, ends, slice_axes;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = wrap_axis(axes[k], r), b = pads[k], e = pads[k + axes.size()];
    if (b < 0 || e < 0) return c.fail("a Pad with negative pads (a crop) has no gradient rule");
    starts.push_back(b);
    ends.push_back(b + xs[static_cast<size_t>(a)]);
    slice_axes.push_back(a);
  }
  Vars out(c.inputs.size());
  out[0] = F::op("Slice", {c.gout(0), F::ints(starts), F::ints(ends), F::ints(slice_axes)});
  return out;
}

Expected<Vars> dropout_grad(const GradContext& c) {
  Vars out(c.inputs.size());
  const bool training = c.has_input(2) && c.in(2).is_concrete() && c.in(2).impl()->value.at_int(0) != 0;
  if (!training || c.outputs.size() < 2) {
    out[0] = c.gout(0);
    return out;
  }
  double ratio = c.node.attr_float("ratio", 0.5f);
  if (c.has_input(1) && c.in(1).is_concrete()) ratio = c.in(1).impl()->value.at_double(0);
  out[0] = F::mul(c.gout(0) * cast_like(c.out(1), c.gout(0)), 1.0 / (1.0 - ratio));
  return out;
}

// AllReduce (ai.modescope) over ranks: every rank's output i is the sum of every rank's input i, so
// the gradient of input i on a rank is the sum over the ranks of the gradients of output i: the
// same collective on the output gradients (one collective for all of them, issued by every rank at
// the same point of its backward), divided by the rank count where the forward averaged.
Expected<Vars> all_reduce_grad(const GradContext& c) {
  Vars g;
  for (size_t i = 0; i < c.outputs.size(); ++i)
    g.push_back(c.gout(i).defined() ? c.gout(i) : zeros(c.out(i).dtype(), c.out(i).shape()));
  F::Attrs attrs{{"mean", c.node.attr_int("mean", 0)}};
  if (c.node.attr_int("batch_stats", 0)) attrs.emplace("batch_stats", int64_t{1});
  return F::op_n("AllReduce", g, std::move(attrs), static_cast<int>(g.size()), "ai.modescope");
}

}  // namespace

void register_tensor_grads(GradRegistry& r) {
  r.add("AllReduce", all_reduce_grad, "ai.modescope");
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) r.add(op, reshape_like_input);
  r.add("Transpose", transpose_grad);
  r.add("Expand", expand_grad);
  r.add("Concat", concat_grad);
  r.add("Slice", slice_grad);
  r.add("Gather", gather_grad);
  r.add("ReduceSum", [](const GradContext& c) { return reduce_grad(c, false); });
  r.add("ReduceMean", [](const GradContext& c) { return reduce_grad(c, true); });
  r.add("Dropout", dropout_grad);
  r.add("ReduceMax", reduce_extremum_grad);
  r.add("ReduceMin", reduce_extremum_grad);
  r.add("Split", split_grad);
  r.add("Pad", pad_grad);
}

}  // namespace ms::autodiff
