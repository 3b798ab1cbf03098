// Transposes of 8-bit tensors between channels first and channels last: the int8 convs' and pools'
// layout changes at their edges (oneDNN's reorder moved these bytes at about 4 GB/s here).
#pragma once

#include <cstdint>

namespace ms::cpu {

// dst[b][c][r] = src[b][r][c] for b < batch, r < rows, c < cols: [N, C, S] -> [N, S, C] with
// rows = C, cols = S, and back with rows = S, cols = C. 16x16 blocks in SSE2 registers, the edges
// element by element; across the OpenMP team when large.
void transpose_bytes(const uint8_t* src, uint8_t* dst, int64_t batch, int64_t rows, int64_t cols);

}  // namespace ms::cpu
