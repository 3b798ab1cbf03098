#include "engine/core/shape.h"

#include <algorithm>

namespace ms {

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return out + "]";
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  return (axis < 0 || axis >= std::max<int64_t>(rank, 1)) ? -1 : axis;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  const size_t rank = std::max(a.size(), b.size());
  Shape r(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      r[i] = da;
    else if (da == 1)
      r[i] = db;
    else
      return false;
  }
  out = std::move(r);
  return true;
}

}  // namespace ms
