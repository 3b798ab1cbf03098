#include "engine/backends/cpu/narrow_io.h"

#include <array>
#include <cmath>

namespace ms::cpu::narrow_io {
namespace {

using Table = std::array<float, 256>;

Table build_table(DType t) {
  Table out{};
  for (size_t c = 0; c < out.size(); ++c) out[c] = narrow::to_float(t, static_cast<uint8_t>(c));
  return out;
}

const Table& table(DType t) {
  static const Table e4m3fn = build_table(DType::F8E4M3FN);
  static const Table e4m3fnuz = build_table(DType::F8E4M3FNUZ);
  static const Table e5m2 = build_table(DType::F8E5M2);
  static const Table e5m2fnuz = build_table(DType::F8E5M2FNUZ);
  static const Table e8m0 = build_table(DType::F8E8M0);
  static const Table e2m1 = build_table(DType::F4E2M1);
  switch (t) {
    case DType::F8E4M3FN: return e4m3fn;
    case DType::F8E4M3FNUZ: return e4m3fnuz;
    case DType::F8E5M2: return e5m2;
    case DType::F8E5M2FNUZ: return e5m2fnuz;
    case DType::F8E8M0: return e8m0;
    default: return e2m1;
  }
}

}  // namespace

bool is_integer_like(DType t) { return is_integer(t) || t == DType::Bool || narrow::is_narrow_int(t); }

float narrow_value(DType t, uint8_t code) { return table(t)[code]; }

void load_real(DType t, const void* data, int64_t b, int64_t n, double* out) {
  if (narrow::is_narrow_float(t)) {
    const Table& tab = table(t);
    const auto* p = static_cast<const uint8_t*>(data) + b;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(tab[p[i]]);
    return;
  }
  if (narrow::is_narrow_int(t)) {
    const auto* p = static_cast<const uint8_t*>(data) + b;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(narrow::to_int(t, p[i]));
    return;
  }
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(data) + b;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(p[i]);
  });
}

void load_int(DType t, const void* data, int64_t b, int64_t n, int64_t* out) {
  if (narrow::is_narrow_int(t)) {
    const auto* p = static_cast<const uint8_t*>(data) + b;
    for (int64_t i = 0; i < n; ++i) out[i] = narrow::to_int(t, p[i]);
    return;
  }
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const T* p = static_cast<const T*>(data) + b;
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(p[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = 0;
    }
  });
}

uint8_t narrow_int_from_real(DType t, double v) {
  const double tr = std::trunc(v);
  if (!(tr >= narrow::int_min(t) && tr <= narrow::int_max(t))) return 0;
  return narrow::from_int(t, static_cast<int64_t>(tr));
}

}  // namespace ms::cpu::narrow_io
