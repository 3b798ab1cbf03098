// Private to the CPU tensor/shape kernels: registration split by feature and the byte-level copy
// machinery they share. Copy-style kernels work on bytes (dtype_size), so every dtype is covered.
#pragma once

#include <cstring>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu::tensor {

void register_shape_kernels(runtime::KernelRegistry& r);   // tensor_shape.cpp
void register_layout_kernels(runtime::KernelRegistry& r);  // tensor_layout.cpp
void register_index_kernels(runtime::KernelRegistry& r);   // tensor_index.cpp, tensor_scatter.cpp
void register_misc_kernels(runtime::KernelRegistry& r);    // tensor_misc.cpp
void register_resize_kernels(runtime::KernelRegistry& r);  // tensor_resize.cpp

// Output shapes the schema infers from the actual inputs (every input known, as in eager mode).
struct OutputSpec {
  DType dtype;
  Shape shape;
};
Expected<std::vector<OutputSpec>> infer_concrete(runtime::KernelContext& ctx);
// Allocates every output that was not preallocated, with the shapes inferred from the inputs.
// Cheap when everything is preallocated (the common case), which keeps tiny-op dispatch light.
Status ensure_outputs(runtime::KernelContext& ctx);
// Element size of the input's dtype; an error for dtypes without fixed-size storage (strings).
Expected<size_t> element_size(runtime::KernelContext& ctx, DType t);

// A Slice node's geometry on its input: the output shape, the element strides through the input
// and the element offset of the first output element. Starts/ends/axes/steps come from attributes
// before opset 10, from host integer inputs 1-4 after (device backends keep those on the host too).
struct SliceGeometry {
  Shape shape, src_strides;
  int64_t base = 0;
};
Expected<SliceGeometry> slice_geometry(runtime::KernelContext& ctx);

// dst[i] = src[i] over `shape`, strides in elements (src strides may be 0 or negative). Adjacent
// dims that are contiguous in both are merged, and contiguous innermost runs become memcpy.
void strided_copy(void* dst, const void* src, const Shape& shape, const Shape& dst_strides, const Shape& src_strides,
                  size_t esize);

// out[o] = in[map_0[o_0], ..., map_k[o_k]] with in and out contiguous; a map entry of -1 writes
// `fill` (esize bytes) instead. Used by Pad and nearest Resize.
void gather_by_axis_maps(void* out, const Shape& out_shape, const void* in, const Shape& in_shape,
                         const std::vector<std::vector<int64_t>>& maps, const void* fill, size_t esize);

// Writes v converted to dtype t at dst (numeric and bool dtypes).
void store_double(DType t, double v, void* dst);
// Fills n elements of esize bytes with the pattern at `value` (memset when it is all zero bytes).
void fill_pattern(void* dst, int64_t n, const void* value, size_t esize);

// Index value i of an i32/i64 tensor.
inline int64_t index_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::I32 ? static_cast<int64_t>(t.data<int32_t>()[i]) : t.data<int64_t>()[i];
}

// Copies input -> output unless they already share memory (in-place or view).
inline void copy_if_distinct(const Tensor& in, Tensor& out) {
  if (in.raw() != out.raw() && in.nbytes()) std::memcpy(out.raw(), in.raw(), in.nbytes());
}

// Walks an index tensor of shape `idx_shape` in row-major order, calling f(i, base) where `base` is
// the data offset (strides `ds`) of element i's coordinate with the `axis` coordinate left out.
// Shared by GatherElements and ScatterElements.
template <class F> Status for_each_axis_index(const Shape& idx_shape, const Shape& ds, int64_t axis, F&& f) {
  const auto rank = static_cast<int64_t>(idx_shape.size());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  int64_t base = 0;
  const int64_t total = numel(idx_shape);
  for (int64_t i = 0; i < total; ++i) {
    MS_RETURN_IF_ERROR(f(i, base));
    for (int64_t d = rank - 1; d >= 0; --d) {
      const auto u = static_cast<size_t>(d);
      if (d != axis) base += ds[u];
      if (++coord[u] < idx_shape[u]) break;
      if (d != axis) base -= ds[u] * idx_shape[u];
      coord[u] = 0;
    }
  }
  return Status::ok();
}

}  // namespace ms::cpu::tensor
