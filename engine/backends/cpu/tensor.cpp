// CPU tensor/shape kernels: registration entry point and the shared copy machinery.
#include <omp.h>

#include <algorithm>

#include "engine/backends/cpu/simd_clones.h"
#if MS_SIMD_DISPATCH
#include <immintrin.h>
#endif

#include "engine/backends/cpu/tensor_internal.h"
#include "engine/ops/schema.h"

namespace ms::cpu {

void register_tensor_kernels(runtime::KernelRegistry& r) {
  tensor::register_shape_kernels(r);
  tensor::register_layout_kernels(r);
  tensor::register_index_kernels(r);
  tensor::register_misc_kernels(r);
  tensor::register_resize_kernels(r);
}

namespace tensor {

Expected<std::vector<OutputSpec>> infer_concrete(runtime::KernelContext& ctx) {
  ops::InferContext ic{ctx.node(), ctx.opset(), {}, {}, {}};
  ic.types.resize(ctx.num_inputs());
  ic.values.resize(ctx.num_inputs(), nullptr);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor& t = ctx.input(i);
    ic.types[i].dtype = t.dtype();
    ic.types[i].dims = t.shape();
    ic.types[i].dim_params.assign(t.shape().size(), "");
    ic.values[i] = &t;
  }
  MS_RETURN_IF_ERROR(ops::infer_node(ic));
  std::vector<OutputSpec> specs;
  for (size_t i = 0; i < ic.outputs.size(); ++i) {
    if (!ic.outputs[i].is_static())
      return internal_error(ctx.node().label() + ": output " + std::to_string(i) +
                            " shape is not known from the inputs: " + ic.outputs[i].to_string());
    specs.push_back({ic.outputs[i].dtype, *ic.outputs[i].dims});
  }
  return specs;
}

Status ensure_outputs(runtime::KernelContext& ctx) {
  bool all = true;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) all &= ctx.output(i).defined();
  if (all) return Status::ok();
  MS_ASSIGN_OR_RETURN(std::vector<OutputSpec> specs, infer_concrete(ctx));
  for (size_t i = 0; i < ctx.num_outputs() && i < specs.size(); ++i) {
    if (ctx.output(i).defined()) continue;
    auto r = ctx.allocate_output(i, specs[i].dtype, specs[i].shape);
    if (!r) return std::move(r).take_status();
  }
  return Status::ok();
}

void store_double(DType t, double v, void* dst) {
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T x;
    if constexpr (std::is_same_v<T, bool>)
      x = v != 0;
    else
      x = static_cast<T>(v);
    std::memcpy(dst, &x, sizeof(T));
  });
}

void fill_pattern(void* dst, int64_t n, const void* value, size_t esize) {
  const auto* v = static_cast<const unsigned char*>(value);
  bool zero = true;
  for (size_t i = 0; i < esize; ++i) zero &= v[i] == 0;
  if (zero) {
    std::memset(dst, 0, static_cast<size_t>(n) * esize);
    return;
  }
  char* d = static_cast<char*>(dst);
  for (int64_t i = 0; i < n; ++i) std::memcpy(d + static_cast<size_t>(i) * esize, v, esize);
}

Expected<size_t> element_size(runtime::KernelContext& ctx, DType t) {
  const size_t s = dtype_size(t);
  if (s == 0) return ctx.unsupported_case("dtype " + std::string(dtype_name(t)) + " is not supported by this kernel");
  return s;
}

namespace {

struct Dim {
  int64_t n, ds, ss;
};

template <class T> void copy_run(char* d, const char* s, int64_t n, int64_t ds, int64_t ss) {
  T* dp = reinterpret_cast<T*>(d);
  const T* sp = reinterpret_cast<const T*>(s);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dp + i * ds, sp + i * ss, sizeof(T));
}

void copy_inner(char* d, const char* s, const Dim& in, size_t esize) {
  if (in.ds == 1 && in.ss == 1) {
    std::memcpy(d, s, static_cast<size_t>(in.n) * esize);
    return;
  }
  switch (esize) {
    case 1: copy_run<uint8_t>(d, s, in.n, in.ds, in.ss); return;
    case 2: copy_run<uint16_t>(d, s, in.n, in.ds, in.ss); return;
    case 4: copy_run<uint32_t>(d, s, in.n, in.ds, in.ss); return;
    case 8: copy_run<uint64_t>(d, s, in.n, in.ds, in.ss); return;
    default:
      for (int64_t i = 0; i < in.n; ++i)
        std::memcpy(d + i * in.ds * static_cast<int64_t>(esize), s + i * in.ss * static_cast<int64_t>(esize), esize);
  }
}

#if MS_SIMD_DISPATCH
// Eight rows of 8 four-byte values at s (rows ss apart) written transposed at d (rows ds apart).
MS_TARGET_AVX2 void transpose_8x8(const float* s, int64_t ss, float* d, int64_t ds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(d + i * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(d + (i + 4) * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// The tile [ib, ie) x [jb, je) of a transpose of 4-byte values (dst contiguous along x, src along
// y) in 8x8 register blocks, the edges element by element: a scalar copy of each element ran at
// about 10 GB/s (ConvNeXt's [1,96,56,56] <-> [1,56,56,96] took 240 us). False without AVX2.
template <class T>
bool transpose_tile_8x8(T* dp, const T* sp, int64_t src_row, int64_t dst_row, int64_t ib, int64_t ie, int64_t jb,
                        int64_t je) {
  if (simd_width() < 8) return false;
  const int64_t xe = ib + (ie - ib) / 8 * 8, ye = jb + (je - jb) / 8 * 8;
  for (int64_t y = jb; y < ye; y += 8)
    for (int64_t x = ib; x < xe; x += 8)
      transpose_8x8(reinterpret_cast<const float*>(sp + x * src_row + y), src_row,
                    reinterpret_cast<float*>(dp + x + y * dst_row), dst_row);
  for (int64_t y = jb; y < je; ++y)
    for (int64_t x = y < ye ? xe : ib; x < ie; ++x) dp[x + y * dst_row] = sp[x * src_row + y];
  return true;
}
#else
template <class T> bool transpose_tile_8x8(T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) {
  return false;
}
#endif

// A transpose-like copy: the dst-contiguous dim (dims[0]) is strided in src while dims[j] is
// contiguous in src. Copying 32x32 tiles keeps both sides in cache instead of striding through one.
// The (outer index, row of tiles) pairs are split across the threads when the copy is large.
template <class T> void tiled_copy(char* d, const char* s, const Dim* dims, int k, int j) {
  constexpr int64_t kTile = 32;
  const Dim a = dims[0], b = dims[j];
  Dim rest[16];  // the other dims, innermost first
  int nr = 0;
  int64_t outer = 1;
  for (int q = 1; q < k; ++q)
    if (q != j) {
      rest[nr++] = dims[q];
      outer *= dims[q].n;
    }
  const int64_t rows = (b.n + kTile - 1) / kTile, total = outer * rows;
  const bool parallel = total > 1 && outer * a.n * b.n * static_cast<int64_t>(sizeof(T)) >= (int64_t{1} << 17) &&
                        omp_get_max_threads() > 1 && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < total; ++t) {
    int64_t doff = 0, soff = 0;
    for (int64_t q = 0, r = t / rows; q < nr; ++q) {
      const int64_t c = r % rest[q].n;
      r /= rest[q].n;
      doff += c * rest[q].ds;
      soff += c * rest[q].ss;
    }
    T* dp = reinterpret_cast<T*>(d) + doff;
    const T* sp = reinterpret_cast<const T*>(s) + soff;
    const int64_t jb = (t % rows) * kTile, je = std::min(b.n, jb + kTile);
    for (int64_t ib = 0; ib < a.n; ib += kTile) {
      const int64_t ie = std::min(a.n, ib + kTile);
      if constexpr (sizeof(T) == 4) {
        if (transpose_tile_8x8(dp, sp, a.ss, b.ds, ib, ie, jb, je)) continue;
      }
      for (int64_t y = jb; y < je; ++y)
        for (int64_t x = ib; x < ie; ++x) std::memcpy(dp + x * a.ds + y * b.ds, sp + x * a.ss + y * b.ss, sizeof(T));
    }
  }
}

bool try_tiled(char* d, const char* s, const Dim* dims, int k, size_t esize) {
  if (k < 2 || k > 16 || dims[0].ss == 1 || dims[0].ds != 1 || dims[0].n < 8) return false;
  int j = 0;
  for (int q = 1; q < k; ++q)
    if (dims[q].ss == 1 && dims[q].n >= 8) j = q;
  if (j == 0) return false;
  switch (esize) {
    case 1: tiled_copy<uint8_t>(d, s, dims, k, j); return true;
    case 2: tiled_copy<uint16_t>(d, s, dims, k, j); return true;
    case 4: tiled_copy<uint32_t>(d, s, dims, k, j); return true;
    case 8: tiled_copy<uint64_t>(d, s, dims, k, j); return true;
    default: return false;
  }
}

}  // namespace

void strided_copy(void* dst, const void* src, const Shape& shape, const Shape& dst_strides, const Shape& src_strides,
                  size_t esize) {
  // Merge from the inside out: a dim folds into the one inside it when both tensors step over it
  // exactly as if the two were one longer dim.
  Dim merged[16];
  std::vector<Dim> big;
  Dim* dims = merged;
  if (shape.size() > 16) {
    big.resize(shape.size());
    dims = big.data();
  }
  int k = 0;  // dims[0] is the innermost
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    const Dim d{shape[i], dst_strides[i], src_strides[i]};
    if (k > 0 && d.ds == dims[k - 1].n * dims[k - 1].ds && d.ss == dims[k - 1].n * dims[k - 1].ss) {
      dims[k - 1].n *= d.n;
    } else {
      dims[k++] = d;
    }
  }
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const auto es = static_cast<int64_t>(esize);
  if (k == 0) {
    std::memcpy(d, s, esize);
    return;
  }
  if (try_tiled(d, s, dims, k, esize)) return;
  const Dim inner = dims[0];
  if (k == 1) {
    copy_inner(d, s, inner, esize);
    return;
  }
  // Odometer over the outer dims (dims[1..k-1]).
  int64_t idx[16] = {0};
  std::vector<int64_t> idx_big;
  int64_t* counter = idx;
  if (k > 16) {
    idx_big.assign(static_cast<size_t>(k), 0);
    counter = idx_big.data();
  }
  int64_t outer = 1;
  for (int j = 1; j < k; ++j) outer *= dims[j].n;
  int64_t doff = 0, soff = 0;
  for (int64_t it = 0; it < outer; ++it) {
    copy_inner(d + doff * es, s + soff * es, inner, esize);
    for (int j = 1; j < k; ++j) {
      doff += dims[j].ds;
      soff += dims[j].ss;
      if (++counter[j] < dims[j].n) break;
      doff -= dims[j].ds * dims[j].n;
      soff -= dims[j].ss * dims[j].n;
      counter[j] = 0;
    }
  }
}

void gather_by_axis_maps(void* out, const Shape& out_shape, const void* in, const Shape& in_shape,
                         const std::vector<std::vector<int64_t>>& maps, const void* fill, size_t esize) {
  const size_t rank = out_shape.size();
  char* o = static_cast<char*>(out);
  const char* src = static_cast<const char*>(in);
  if (numel(out_shape) == 0) return;
  if (rank == 0) {
    std::memcpy(o, src, esize);
    return;
  }
  const Shape is = contiguous_strides(in_shape);
  const int64_t row = out_shape[rank - 1];
  const auto& last = maps[rank - 1];
  const int64_t rows = numel(out_shape) / row;
  std::vector<int64_t> coord(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    bool outside = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const int64_t m = maps[d][static_cast<size_t>(coord[d])];
      if (m < 0) outside = true;
      base += m * is[d];
    }
    char* orow = o + r * row * static_cast<int64_t>(esize);
    if (outside) {
      for (int64_t x = 0; x < row; ++x) std::memcpy(orow + x * static_cast<int64_t>(esize), fill, esize);
    } else {
      const char* irow = src + base * static_cast<int64_t>(esize);
      int64_t x = 0;
      while (x < row) {
        const int64_t m = last[static_cast<size_t>(x)];
        if (m < 0) {
          std::memcpy(orow + x * static_cast<int64_t>(esize), fill, esize);
          ++x;
          continue;
        }
        // Extend a run of consecutive source indices into one memcpy.
        int64_t n = 1;
        while (x + n < row && last[static_cast<size_t>(x + n)] == m + n) ++n;
        std::memcpy(orow + x * static_cast<int64_t>(esize), irow + m * static_cast<int64_t>(esize),
                    static_cast<size_t>(n) * esize);
        x += n;
      }
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++coord[d] < out_shape[d]) break;
      coord[d] = 0;
    }
  }
}

}  // namespace tensor
}  // namespace ms::cpu
