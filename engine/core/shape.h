// Concrete shapes of runtime tensors (all dims known, row-major contiguous).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ms {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
// Row-major strides in elements.
Shape contiguous_strides(const Shape& s);
std::string shape_to_string(const Shape& s);  // "[1,3,224,224]"
// Normalizes a possibly negative axis against `rank`; returns -1 when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);
// Numpy-style broadcast of two shapes; false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

}  // namespace ms
