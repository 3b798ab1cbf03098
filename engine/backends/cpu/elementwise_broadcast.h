// Numpy broadcasting as a strided N-d loop. A plan maps K input shapes onto the (contiguous) output
// shape: size-1 output dims are dropped and adjacent dims that stay contiguous for every operand are
// merged, so the common cases collapse to one or two dims ([rows, cols] with a row-broadcast bias,
// a scalar, ...). The loop then hands whole innermost rows to a row function that picks a contiguous,
// scalar or strided inner loop. No heap allocation.
#pragma once

#include <array>
#include <cstdint>

#include "engine/backends/cpu/elementwise_internal.h"

namespace ms::cpu::elementwise {

constexpr int kMaxPlanRank = 16;

template <size_t K> struct BroadcastPlan {
  int rank = 0;
  int64_t dims[kMaxPlanRank] = {};
  int64_t strides[K][kMaxPlanRank] = {};  // element strides of each input; 0 = broadcast
};

// False when an input does not broadcast to `out` or the merged rank exceeds kMaxPlanRank.
template <size_t K> bool make_plan(const Shape& out, const std::array<const Shape*, K>& ins, BroadcastPlan<K>& p) {
  const size_t r = out.size();
  int64_t in_stride[K];
  for (size_t k = 0; k < K; ++k) {
    if (ins[k]->size() > r) return false;
    in_stride[k] = 1;
  }
  // Walk dims from the innermost out, computing each input's contiguous stride as we go; build the
  // plan innermost-first, then reverse.
  int64_t dims[kMaxPlanRank];
  int64_t strides[K][kMaxPlanRank];
  int n = 0;
  for (size_t i = r; i-- > 0;) {
    const int64_t d = out[i];
    int64_t s[K];
    for (size_t k = 0; k < K; ++k) {
      const Shape& in = *ins[k];
      const size_t off = r - in.size();
      const int64_t id = i >= off ? in[i - off] : 1;
      if (id != d && id != 1) return false;
      s[k] = (id == 1) ? 0 : in_stride[k];
      in_stride[k] *= id;
    }
    if (d == 1) continue;
    if (n > 0) {
      // Merge with the dim just inside when every operand steps through both as one.
      bool merge = true;
      for (size_t k = 0; k < K && merge; ++k) merge = s[k] == strides[k][n - 1] * dims[n - 1];
      if (merge) {
        dims[n - 1] *= d;
        continue;
      }
    }
    if (n == kMaxPlanRank) return false;
    dims[n] = d;
    for (size_t k = 0; k < K; ++k) strides[k][n] = s[k];
    ++n;
  }
  if (n == 0) {  // scalar output (or all dims 1)
    dims[0] = 1;
    for (size_t k = 0; k < K; ++k) strides[k][0] = 0;
    n = 1;
  }
  p.rank = n;
  for (int j = 0; j < n; ++j) {
    p.dims[j] = dims[n - 1 - j];
    for (size_t k = 0; k < K; ++k) p.strides[k][j] = strides[k][n - 1 - j];
  }
  return true;
}

// Calls row(out_offset, in_offsets[K], length, inner_strides[K]) for every innermost row of the
// plan; rows are split across the OpenMP team when the output is large. Returns whether it did.
template <size_t K, class Row> bool for_each_row(const BroadcastPlan<K>& p, Row&& row) {
  const int r = p.rank;
  const int64_t inner = p.dims[r - 1];
  int64_t rows = 1;
  for (int j = 0; j < r - 1; ++j) rows *= p.dims[j];
  int64_t inner_strides[K];
  for (size_t k = 0; k < K; ++k) inner_strides[k] = p.strides[k][r - 1];

  auto run = [&](int64_t r0, int64_t r1) {
    if (r0 >= r1) return;
    // Odometer over the outer dims, started at row r0.
    int64_t idx[kMaxPlanRank] = {};
    int64_t off[K] = {};
    int64_t rem = r0;
    for (int j = r - 2; j >= 0; --j) {
      idx[j] = rem % p.dims[j];
      rem /= p.dims[j];
      for (size_t k = 0; k < K; ++k) off[k] += idx[j] * p.strides[k][j];
    }
    for (int64_t row_i = r0; row_i < r1; ++row_i) {
      row(row_i * inner, static_cast<const int64_t*>(off), inner, static_cast<const int64_t*>(inner_strides));
      for (int j = r - 2; j >= 0; --j) {
        for (size_t k = 0; k < K; ++k) off[k] += p.strides[k][j];
        if (++idx[j] < p.dims[j]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= idx[j] * p.strides[k][j];
        idx[j] = 0;
      }
    }
  };

  if (rows * inner < kParallelThreshold || rows == 1) {
    if (rows == 1 && rows * inner >= kParallelThreshold) {
      // One long row: split it instead.
      return parallel_chunks(inner, [&](int64_t b, int64_t e) {
        int64_t off[K];
        for (size_t k = 0; k < K; ++k) off[k] = b * inner_strides[k];
        row(b, static_cast<const int64_t*>(off), e - b, static_cast<const int64_t*>(inner_strides));
      });
    }
    run(0, rows);
    return false;
  }
  const int64_t rows_per_chunk = std::max<int64_t>(1, kParallelChunk / std::max<int64_t>(inner, 1));
  const int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) run(c * rows_per_chunk, std::min(rows, (c + 1) * rows_per_chunk));
  return true;
}

}  // namespace ms::cpu::elementwise
