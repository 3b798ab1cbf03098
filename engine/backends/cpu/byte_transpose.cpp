#include "engine/backends/cpu/byte_transpose.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ms::cpu {
namespace {

#if defined(__SSE2__)
// out[2i], out[2i + 1] = the low and high halves of registers i and i + 8 interleaved.
template <class Lo, class Hi> inline void interleave(const __m128i* in, __m128i* out, Lo lo, Hi hi) {
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = lo(in[i], in[i + 8]);
    out[2 * i + 1] = hi(in[i], in[i + 8]);
  }
}

// One 16x16 block: four rounds of interleaving register i with i + 8 (bytes, then 16-, 32- and 64-bit
// lanes) leave register j holding column j, its rows in bit-reversed order; loading the rows
// bit-reversed puts them back in order.
void block16(const uint8_t* s, int64_t s_stride, uint8_t* d, int64_t d_stride) {
  constexpr int kBitReversed[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
  __m128i a[16], b[16];
  for (int i = 0; i < 16; ++i) a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + kBitReversed[i] * s_stride));
  interleave(
      a, b, [](__m128i x, __m128i y) { return _mm_unpacklo_epi8(x, y); },
      [](__m128i x, __m128i y) { return _mm_unpackhi_epi8(x, y); });
  interleave(
      b, a, [](__m128i x, __m128i y) { return _mm_unpacklo_epi16(x, y); },
      [](__m128i x, __m128i y) { return _mm_unpackhi_epi16(x, y); });
  interleave(
      a, b, [](__m128i x, __m128i y) { return _mm_unpacklo_epi32(x, y); },
      [](__m128i x, __m128i y) { return _mm_unpackhi_epi32(x, y); });
  interleave(
      b, a, [](__m128i x, __m128i y) { return _mm_unpacklo_epi64(x, y); },
      [](__m128i x, __m128i y) { return _mm_unpackhi_epi64(x, y); });
  for (int j = 0; j < 16; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j * d_stride), a[j]);
}
#endif
constexpr int64_t kStep = 16;

// Columns [c0, c1) of one matrix, all its rows: whole blocks, the rest element by element. A
// thread thus writes whole rows of dst (splitting the rows instead had both threads writing parts
// of every cache line of a channels-last dst).
void columns(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  for (int64_t r0 = 0; r0 < rows; r0 += kStep) {
    const int64_t r1 = r0 + kStep < rows ? r0 + kStep : rows;
#if defined(__SSE2__)
    if (r1 - r0 == 16 && c1 - c0 == 16) {
      block16(src + r0 * cols + c0, cols, dst + c0 * rows + r0, rows);
      continue;
    }
#endif
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
  }
}

}  // namespace

void transpose_bytes(const uint8_t* src, uint8_t* dst, int64_t batch, int64_t rows, int64_t cols) {
  const int64_t blocks = (cols + kStep - 1) / kStep;
#pragma omp parallel for schedule(static) if (batch * rows * cols > (1 << 16))
  for (int64_t i = 0; i < batch * blocks; ++i) {
    const int64_t b = i / blocks, c0 = (i % blocks) * kStep, c1 = c0 + kStep < cols ? c0 + kStep : cols;
    columns(src + b * rows * cols, dst + b * rows * cols, rows, cols, c0, c1);
  }
}

}  // namespace ms::cpu
