// Spatial geometry of Conv, ConvTranspose and the pools, resolved from ONNX attributes. Shared by the
// schemas (output shapes) and the kernels (pads for auto_pad), so both agree on one computation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace ms::ops {

struct WindowGeometry {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, output_padding;
  std::vector<int64_t> out;  // output spatial dims (-1 when the input dim is unknown)
  int64_t spatial() const { return static_cast<int64_t>(kernel.size()); }
  // Extent of the dilated kernel along axis i.
  int64_t effective_kernel(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

enum class WindowKind : uint8_t { Conv, Pool, ConvTranspose };

// `in` are the input's spatial dims (-1 unknown), `kernel` the kernel's spatial dims (from W for
// Conv/ConvTranspose when kernel_shape is absent; required attribute for pools). Pools honour
// ceil_mode. Errors carry no node label (the caller prefixes it).
Expected<WindowGeometry> resolve_window(const ir::Node& node, WindowKind kind, const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& kernel);

}  // namespace ms::ops
