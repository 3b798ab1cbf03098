// Contiguous views: which ops' outputs are a piece of their input's bytes, and where.
#include "engine/compiler/views.h"

#include <set>
#include <string>
#include <vector>

#include "engine/compiler/rewrite.h"
#include "engine/core/dtype.h"
#include "engine/ops/tensor_internal.h"

namespace ms::compiler {
namespace {

// The dims of a statically typed value, or nullptr.
const std::vector<int64_t>* static_dims(const ir::Graph& g, const std::string& name, DType* dtype = nullptr) {
  const ir::Value* v = g.value(name);
  if (!v || !v->type.is_static() || !v->type.dims) return nullptr;
  if (dtype) *dtype = v->type.dtype;
  return &*v->type.dims;
}

// Integers of a constant operand (absent: `fallback`); false when the operand is not constant.
bool constant_ints(const ir::Graph& g, const ir::Node& n, size_t i, std::vector<int64_t>& out,
                   std::vector<int64_t> fallback = {}) {
  if (!n.has_input(i)) {
    out = std::move(fallback);
    return true;
  }
  const Tensor* t = constant_of(g, n.inputs[i]);
  if (!t || !is_integer(t->dtype()) || !t->device().is_cpu()) return false;
  out = t->to_int_vector();
  return true;
}

// Element offset of a slice that is one contiguous run of the input: dims before the last partial
// axis take one element, that axis steps by 1, the ones after it are whole.
std::optional<int64_t> slice_offset(const std::vector<int64_t>& in, const std::vector<ops::tensor::SliceDim>& d) {
  const size_t rank = in.size();
  size_t partial = 0;
  bool any = false;
  for (size_t i = 0; i < rank; ++i)
    if (d[i].count != in[i] || (d[i].count > 1 && d[i].step != 1)) {
      partial = i;
      any = true;
    }
  int64_t offset = 0, stride = 1;
  for (size_t i = rank; i-- > 0;) {
    if (d[i].count == 0) return std::nullopt;
    if (any && i < partial && d[i].count != 1) return std::nullopt;
    if (d[i].count > 1 && d[i].step != 1) return std::nullopt;
    offset += d[i].start * stride;
    stride *= in[i];
  }
  return offset;
}

std::optional<int64_t> slice_view(const ir::Graph& g, const ir::Node& n, const std::vector<int64_t>& in) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.inputs.size() == 1) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else if (!constant_ints(g, n, 1, starts) || !constant_ints(g, n, 2, ends) || !constant_ints(g, n, 3, axes) ||
             !constant_ints(g, n, 4, steps)) {
    return std::nullopt;
  }
  std::vector<ops::tensor::SliceDim> dims;
  std::string err;
  if (!ops::tensor::compute_slice(in, starts, ends, axes, steps, dims, err)) return std::nullopt;
  return slice_offset(in, dims);
}

std::optional<int64_t> gather_view(const ir::Graph& g, const ir::Node& n, const std::vector<int64_t>& in) {
  std::vector<int64_t> idx;
  if (n.inputs.size() < 2 || !constant_ints(g, n, 1, idx) || idx.size() != 1) return std::nullopt;
  const auto rank = static_cast<int64_t>(in.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const int64_t dim = in[static_cast<size_t>(axis)];
  int64_t i = idx[0] < 0 ? idx[0] + dim : idx[0];
  if (i < 0 || i >= dim) return std::nullopt;
  int64_t inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis && in[static_cast<size_t>(d)] != 1) return std::nullopt;
    if (d > axis) inner *= in[static_cast<size_t>(d)];
  }
  return i * inner;
}

// A Transpose that keeps the dims larger than 1 in their order moves no byte: offset 0.
std::optional<int64_t> transpose_view(const ir::Node& n, const std::vector<int64_t>& in) {
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (auto i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) perm.push_back(i);
  if (!ops::tensor::moves_only_unit_dims(in, perm)) return std::nullopt;
  return 0;
}

}  // namespace

std::optional<uint64_t> contiguous_view_offset(const ir::Graph& g, const ir::Node& n) {
  static const std::set<std::string> reshapes = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.empty() || !n.has_input(0)) return std::nullopt;
  DType dt = DType::Undefined, out_dt = DType::Undefined;
  const std::vector<int64_t>* in = static_dims(g, n.inputs[0], &dt);
  if (!in || !static_dims(g, n.outputs[0], &out_dt) || dt != out_dt || dtype_size(dt) == 0) return std::nullopt;
  std::optional<int64_t> elements;
  if (reshapes.count(n.op_type))
    elements = 0;
  else if (n.op_type == "Slice")
    elements = slice_view(g, n, *in);
  else if (n.op_type == "Gather")
    elements = gather_view(g, n, *in);
  else if (n.op_type == "Pad" && pads_are_zero(g, n))
    elements = 0;
  else if (n.op_type == "Transpose")
    elements = transpose_view(n, *in);
  if (!elements || *elements < 0) return std::nullopt;
  return static_cast<uint64_t>(*elements) * dtype_size(dt);
}

bool pads_are_zero(const ir::Graph& g, const ir::Node& n) {
  std::vector<int64_t> pads;
  if (n.inputs.size() == 1) {
    pads = n.attr_ints(n.has_attr("pads") ? "pads" : "paddings");
  } else if (!constant_ints(g, n, 1, pads)) {
    return false;
  }
  for (int64_t p : pads)
    if (p != 0) return false;
  return true;
}

}  // namespace ms::compiler
