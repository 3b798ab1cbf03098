// Concrete shapes of runtime tensors (all dims known, row-major contiguous).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ms {

using Shape = std::vector<int64_t>;

// Element count. A product past INT64_MAX saturates there (an allocation of that size then fails
// with a clear error instead of wrapping to a small buffer); with a negative (unknown) dim the count
// is negative, or -1 where it would overflow.
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) {
      for (int64_t e : s)
        if (e < 0) return -1;
      return INT64_MAX;
    }
  return n;
}
// Bytes of `s` with elements of `element_bytes`; false when the count is negative or the bytes do
// not fit in size_t.
inline bool byte_size(const Shape& s, size_t element_bytes, size_t& bytes) {
  const int64_t n = numel(s);
  if (n < 0 || n == INT64_MAX) return false;
  return !__builtin_mul_overflow(static_cast<size_t>(n), element_bytes, &bytes);
}
// Row-major strides in elements.
Shape contiguous_strides(const Shape& s);
std::string shape_to_string(const Shape& s);  // "[1,3,224,224]"
// Normalizes a possibly negative axis against `rank`; returns -1 when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);
// Numpy-style broadcast of two shapes; false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

}  // namespace ms
