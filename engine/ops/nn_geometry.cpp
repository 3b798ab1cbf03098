#include "engine/ops/nn_geometry.h"

#include <algorithm>

namespace ms::ops {
namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

Status bad(const std::string& m) { return invalid_model(m); }

// Integer division rounding towards -inf / +inf (numerators may be negative for tiny inputs).
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

Status read_per_axis(const ir::Node& node, const char* name, size_t n, int64_t fallback, int64_t min_value,
                     std::vector<int64_t>& out) {
  out = node.attr_ints(name, std::vector<int64_t>(n, fallback));
  if (out.size() != n)
    return bad(std::string("attribute '") + name + "' has " + std::to_string(out.size()) + " values, expected " +
               std::to_string(n) + " (one per spatial axis)");
  for (int64_t v : out)
    if (v < min_value)
      return bad(std::string("attribute '") + name + "' = " + list(out) + " must be >= " + std::to_string(min_value));
  return Status::ok();
}

// kernel_shape, from the attribute or the weights' spatial dims.
Status read_kernel(const ir::Node& node, WindowKind kind, size_t n, const std::vector<int64_t>& kernel_from_input,
                   WindowGeometry& g) {
  if (node.has_attr("kernel_shape")) {
    g.kernel = node.attr_ints("kernel_shape");
    if (g.kernel.size() != n)
      return bad("kernel_shape " + list(g.kernel) + " has " + std::to_string(g.kernel.size()) +
                 " values but the input has " + std::to_string(n) + " spatial axes");
    if (kind != WindowKind::Pool && kernel_from_input.size() == n)
      for (size_t i = 0; i < n; ++i)
        if (kernel_from_input[i] >= 0 && kernel_from_input[i] != g.kernel[i])
          return bad("kernel_shape " + list(g.kernel) + " does not match the weights' spatial dims " +
                     list(kernel_from_input));
  } else {
    if (kind == WindowKind::Pool) return bad("attribute 'kernel_shape' is required");
    g.kernel = kernel_from_input;
    if (g.kernel.size() != n) return bad("weights rank does not match the input rank");
  }
  for (int64_t k : g.kernel)
    if (k <= 0 && !(k == -1 && !node.has_attr("kernel_shape")))
      return bad("kernel_shape " + list(g.kernel) + " must be positive");
  return Status::ok();
}

// strides, dilations, pads and auto_pad (explicit pads are cleared when auto_pad is set).
Status read_strides_and_pads(const ir::Node& node, size_t n, WindowGeometry& g, std::string& auto_pad) {
  MS_RETURN_IF_ERROR(read_per_axis(node, "strides", n, 1, 1, g.strides));
  MS_RETURN_IF_ERROR(read_per_axis(node, "dilations", n, 1, 1, g.dilations));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.size() != 2 * n)
    return bad("attribute 'pads' has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * n));
  for (int64_t p : pads)
    if (p < 0) return bad("attribute 'pads' = " + list(pads) + " must be >= 0");
  g.pads_begin.assign(pads.begin(), pads.begin() + static_cast<long>(n));
  g.pads_end.assign(pads.begin() + static_cast<long>(n), pads.end());
  g.output_padding.assign(n, 0);
  auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    return bad("auto_pad '" + auto_pad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  if (auto_pad != "NOTSET") {
    std::fill(g.pads_begin.begin(), g.pads_begin.end(), 0);
    std::fill(g.pads_end.begin(), g.pads_end.end(), 0);
  }
  return Status::ok();
}

// ConvTranspose: output_padding, and the output from output_shape, SAME padding or the full size.
Status transpose_output(const ir::Node& node, const std::vector<int64_t>& in, const std::string& auto_pad,
                        WindowGeometry& g) {
  const size_t n = in.size();
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  MS_RETURN_IF_ERROR(read_per_axis(node, "output_padding", n, 0, 0, g.output_padding));
  for (size_t i = 0; i < n; ++i)
    if (g.output_padding[i] >= std::max(g.strides[i], g.dilations[i]))
      return bad("output_padding " + list(g.output_padding) + " must be smaller than the stride or dilation");
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (!out_shape.empty()) {
    if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);  // full N,C,... form
    if (out_shape.size() != n)
      return bad("output_shape " + list(node.attr_ints("output_shape")) + " does not have one value per spatial axis");
  }
  for (size_t i = 0; i < n; ++i) {
    if (in[i] < 0 || g.kernel[i] < 0) continue;
    const int64_t full = g.strides[i] * (in[i] - 1) + g.output_padding[i] + g.effective_kernel(i);
    const int64_t target = !out_shape.empty() ? out_shape[i] : same ? in[i] * g.strides[i] : -1;
    if (target >= 0) {
      const int64_t total = full - target;
      if (total < 0) {
        // A larger requested output is reached by padding at the end (the extra cells see no input).
        g.pads_begin[i] = 0;
        g.pads_end[i] = total;
      } else if (auto_pad == "SAME_UPPER") {
        g.pads_begin[i] = total / 2;
        g.pads_end[i] = total - total / 2;
      } else {
        g.pads_begin[i] = total - total / 2;
        g.pads_end[i] = total / 2;
      }
      g.out[i] = target;
    } else {
      g.out[i] = full - g.pads_begin[i] - g.pads_end[i];
    }
    if (g.out[i] <= 0)
      return bad("output spatial dim " + std::to_string(i) + " would be " + std::to_string(g.out[i]) + " (input " +
                 std::to_string(in[i]) + ", kernel " + std::to_string(g.kernel[i]) + ")");
  }
  return Status::ok();
}

// Conv and pools: the output from the padded input (SAME pads computed here; pools honour ceil_mode).
Status forward_output(const std::vector<int64_t>& in, const std::string& auto_pad, bool ceil_mode, WindowGeometry& g) {
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] < 0 || g.kernel[i] < 0) continue;
    const int64_t dk = g.effective_kernel(i);
    if (same) {
      g.out[i] = ceil_div(in[i], g.strides[i]);
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] + dk - in[i]);
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pads_end[i] = total - g.pads_begin[i];
    } else {
      const int64_t span = in[i] + g.pads_begin[i] + g.pads_end[i] - dk;
      g.out[i] = (ceil_mode ? ceil_div(span, g.strides[i]) : floor_div(span, g.strides[i])) + 1;
      // ceil_mode: a last window that would start in the end padding is dropped (as PyTorch does).
      if (ceil_mode && g.out[i] > 1 && (g.out[i] - 1) * g.strides[i] >= in[i] + g.pads_begin[i]) --g.out[i];
    }
    if (g.out[i] <= 0)
      return bad("output spatial dim " + std::to_string(i) + " would be " + std::to_string(g.out[i]) + " (input " +
                 std::to_string(in[i]) + " padded by " + std::to_string(g.pads_begin[i]) + "+" +
                 std::to_string(g.pads_end[i]) + ", dilated kernel " + std::to_string(dk) + ")");
  }
  return Status::ok();
}

}  // namespace

Expected<WindowGeometry> resolve_window(const ir::Node& node, WindowKind kind, const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& kernel_from_input) {
  WindowGeometry g;
  const size_t n = in.size();
  if (n == 0) return bad("expects at least one spatial axis (input rank >= 3)");
  MS_RETURN_IF_ERROR(read_kernel(node, kind, n, kernel_from_input, g));
  std::string auto_pad;
  MS_RETURN_IF_ERROR(read_strides_and_pads(node, n, g, auto_pad));
  g.out.assign(n, -1);
  if (kind == WindowKind::ConvTranspose) {
    MS_RETURN_IF_ERROR(transpose_output(node, in, auto_pad, g));
  } else {
    MS_RETURN_IF_ERROR(forward_output(in, auto_pad, kind == WindowKind::Pool && node.attr_int("ceil_mode", 0) != 0, g));
  }
  return g;
}

}  // namespace ms::ops
