// Private to the tensor/shape op family: registration split by feature, inference helpers, and the
// parameter math both the schemas and the CPU kernels need (slice bounds, pads, resize coordinates),
// kept in one place so inference and execution can never disagree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/ops/schema.h"

namespace ms::ops::tensor {

void register_shape_ops(Registry& r);   // tensor_shape.cpp: Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, ...
void register_layout_ops(Registry& r);  // tensor_layout.cpp: Transpose, Concat, Split, Slice, Tile, Expand, Pad
void register_index_ops(Registry& r);   // tensor_index.cpp: Gather*, Scatter*, Compress, NonZero, OneHot
void register_misc_ops(Registry& r);    // tensor_misc.cpp: Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence
void register_resize_ops(Registry& r);  // tensor_resize.cpp: Resize, Upsample

// Schema with the family's default cost (bytes moved, no flops).
OpSchema make_schema(std::string op, int min_in, int max_in, int min_out, int max_out, OpCategory cat,
                     std::function<Status(InferContext&)> infer);
Cost bytes_moved_cost(const CostContext& c);

// Value of input i when known and readable here (host memory); device values count as unknown.
const Tensor* host_value(const InferContext& ctx, size_t i);
// Error when the element count of `dims` (known dims only) overflows or exceeds what one tensor may hold.
Status check_size(const InferContext& ctx, const std::vector<int64_t>& dims);
// Values of input i as integers, when known (any integer dtype).
std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i);
// Integer list from input i (when `from_input`, i.e. the opset moved it there) or attribute `attr`.
// `present` says whether the list was given at all; given but not known yet -> nullopt, present=true.
std::optional<std::vector<int64_t>> ints_from_input_or_attr(const InferContext& ctx, bool from_input, size_t i,
                                                            const char* attr, bool& present);
Status require_index_dtype(const InferContext& ctx, size_t i);  // i32 or i64
Status require_rank(const InferContext& ctx, size_t i, int64_t rank);

// Normalizes axes against rank; rejects out-of-range and (when `unique`) duplicated axes.
Status normalize_axes(std::vector<int64_t>& axes, int64_t rank, bool unique, std::string& err);

// Slice bounds for one axis, ONNX clamping rules. Returns the element count.
struct SliceDim {
  int64_t start = 0, step = 1, count = 0;
};
SliceDim slice_dim(int64_t dim, int64_t start, int64_t end, int64_t step);
// True when Transpose's `perm` (negative entries count from the end) keeps the dims of `in` larger
// than 1 in their order: the data's bytes do not move. False for a perm out of range.
bool moves_only_unit_dims(const Shape& in, const std::vector<int64_t>& perm);
// Full-rank slice description (axes not named are taken whole). `err` set on bad arguments.
bool compute_slice(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                   std::vector<int64_t> axes, std::vector<int64_t> steps, std::vector<SliceDim>& out, std::string& err);

// Pads in ONNX layout [b0, b1, ..., e0, e1, ...] over all axes (expanded from `axes` when given).
bool expand_pads(const std::vector<int64_t>& pads, const std::vector<int64_t>* axes, int64_t rank,
                 std::vector<int64_t>& out, std::string& err);

// Resize parameters after reading attributes and the roi/scales/sizes inputs.
struct ResizeParams {
  enum class Mode { Nearest, Linear, Cubic } mode = Mode::Nearest;
  std::string coord_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";  // also "simple": floor, or ceil when downsampling
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.f;
  std::vector<double> scales;  // per axis, out/in
  std::vector<double> roi;     // [starts..., ends...] (tf_crop_and_resize), empty otherwise
  Shape out_shape;
  // Opset 18+: the axes that scales/sizes/roi list (empty: all; resize_shape normalizes it to the
  // resized axes), how sizes keep the aspect ratio, and antialiasing (linear/cubic downsampling).
  std::vector<int64_t> axes;
  std::string keep_aspect = "stretch";  // or "not_larger", "not_smaller"
  bool antialias = false;
};
// Which inputs carry roi / scales / sizes (-1: none) for Resize or Upsample at this opset.
struct ResizeSlots {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeSlots resize_slots(const std::string& op_type, int64_t opset);
// Attributes of Resize/Upsample for this opset.
bool resize_attributes(const ir::Node& node, int64_t opset, ResizeParams& p, std::string& err);
// Maps an output coordinate of one axis to an input coordinate (before rounding / interpolation).
// Returns false when the point lies outside the input (tf_crop_and_resize extrapolates there).
bool resize_coordinate(const ResizeParams& p, size_t axis, int64_t x_out, int64_t in_dim, double& x_in);
// Output shape and per-axis scales from scales (or sizes) values (one per entry of p.axes when
// given; a roi of 2 * axes values is spread over all axes); in_shape must be static.
bool resize_shape(const Shape& in, const std::vector<double>* scales, const std::vector<int64_t>* sizes,
                  ResizeParams& p, std::string& err);

}  // namespace ms::ops::tensor
