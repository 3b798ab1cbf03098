#include "engine/core/narrow.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace ms::narrow {
namespace {

struct MiniFloat {
  int exp_bits, man_bits, bias;
  bool has_inf;   // e5m2: all-ones exponent with zero mantissa
  bool ieee_nan;  // e5m2: all-ones exponent is inf/NaN; e4m3fn: only S.1111.111 is NaN
  bool fnuz;      // NaN is 0x80, no negative zero, no inf
  bool has_nan;   // e2m1 has none
};

const MiniFloat* format(DType t) {
  static const MiniFloat e4m3fn{4, 3, 7, false, false, false, true};
  static const MiniFloat e4m3fnuz{4, 3, 8, false, false, true, true};
  static const MiniFloat e5m2{5, 2, 15, true, true, false, true};
  static const MiniFloat e5m2fnuz{5, 2, 16, false, false, true, true};
  static const MiniFloat e2m1{2, 1, 1, false, false, false, false};
  switch (t) {
    case DType::F8E4M3FN: return &e4m3fn;
    case DType::F8E4M3FNUZ: return &e4m3fnuz;
    case DType::F8E5M2: return &e5m2;
    case DType::F8E5M2FNUZ: return &e5m2fnuz;
    case DType::F4E2M1: return &e2m1;
    default: return nullptr;
  }
}

int total_bits(const MiniFloat& f) { return 1 + f.exp_bits + f.man_bits; }

// Decodes a code of format f; nullopt-like NaN for NaN codes.
float decode(const MiniFloat& f, uint8_t code) {
  const int bits = total_bits(f);
  const unsigned sign = (code >> (bits - 1)) & 1u;
  const unsigned exp = (code >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const unsigned man = code & ((1u << f.man_bits) - 1);
  const unsigned exp_max = (1u << f.exp_bits) - 1;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.fnuz && code == 0x80) return nan;
  if (f.ieee_nan && exp == exp_max) return man == 0 ? (sign ? -INFINITY : INFINITY) : nan;
  if (!f.fnuz && f.has_nan && !f.ieee_nan && exp == exp_max && man == (1u << f.man_bits) - 1) return nan;
  float mag;
  if (exp == 0)
    mag = std::ldexp(static_cast<float>(man), 1 - f.bias - f.man_bits);
  else
    mag = std::ldexp(static_cast<float>(man + (1u << f.man_bits)), static_cast<int>(exp) - f.bias - f.man_bits);
  return sign ? -mag : mag;
}

// The finite non-negative values of a format with their codes, ascending.
struct Table {
  std::vector<float> value;
  std::vector<uint8_t> code;
};

Table build_table(DType t) {
  Table out;
  const MiniFloat& f = *format(t);
  const unsigned half = 1u << (total_bits(f) - 1);
  for (unsigned c = 0; c < half; ++c) {
    const float v = decode(f, static_cast<uint8_t>(c));
    if (std::isfinite(v)) {
      out.value.push_back(v);
      out.code.push_back(static_cast<uint8_t>(c));
    }
  }
  return out;
}

// Built once, before any kernel thread reads them.
const Table& table(DType t) {
  static const std::array<Table, 5> tables{build_table(DType::F8E4M3FN), build_table(DType::F8E4M3FNUZ),
                                           build_table(DType::F8E5M2), build_table(DType::F8E5M2FNUZ),
                                           build_table(DType::F4E2M1)};
  switch (t) {
    case DType::F8E4M3FN: return tables[0];
    case DType::F8E4M3FNUZ: return tables[1];
    case DType::F8E5M2: return tables[2];
    case DType::F8E5M2FNUZ: return tables[3];
    default: return tables[4];
  }
}

uint8_t nan_code(const MiniFloat& f, DType t) {
  if (f.fnuz) return 0x80;
  if (t == DType::F8E5M2) return 0x7E;
  if (t == DType::F4E2M1) return 0x8;  // no NaN: ml_dtypes gives -0
  return 0x7F;
}

uint8_t minifloat_from(DType t, float v, bool saturate) {
  const MiniFloat& f = *format(t);
  const Table& tab = table(t);
  const uint8_t sign_bit = static_cast<uint8_t>(1u << (total_bits(f) - 1));
  if (std::isnan(v)) return nan_code(f, t);
  const bool neg = std::signbit(v);
  const float a = std::fabs(v);
  const float maxv = tab.value.back();
  auto with_sign = [&](uint8_t c) -> uint8_t {
    if (!neg) return c;
    if (f.fnuz && c == 0) return 0;  // no negative zero
    return static_cast<uint8_t>(c | sign_bit);
  };
  const bool always_saturates = !f.has_nan;  // e2m1
  if (std::isinf(a)) {
    if (saturate || always_saturates) return with_sign(tab.code.back());
    if (f.has_inf) return with_sign(static_cast<uint8_t>(tab.code.back() + 1));
    return nan_code(f, t);
  }
  // Overflow threshold: halfway between the largest finite value and the next step above it.
  const float step = maxv - tab.value[tab.value.size() - 2];
  if (a > maxv) {
    const bool max_even = (tab.code.back() & 1u) == 0;
    const float half = maxv + step / 2;
    const bool rounds_to_max = a < half || (a == half && max_even);
    if (saturate || always_saturates || rounds_to_max) return with_sign(tab.code.back());
    if (f.has_inf) return with_sign(static_cast<uint8_t>(tab.code.back() + 1));
    return nan_code(f, t);
  }
  const auto it = std::lower_bound(tab.value.begin(), tab.value.end(), a);
  size_t hi = static_cast<size_t>(it - tab.value.begin());
  if (tab.value[hi] == a) return with_sign(tab.code[hi]);
  const size_t lo = hi - 1;
  const float dlo = a - tab.value[lo], dhi = tab.value[hi] - a;
  size_t pick = dlo < dhi ? lo : hi;
  if (dlo == dhi) pick = (tab.code[lo] & 1u) == 0 ? lo : hi;
  return with_sign(tab.code[pick]);
}

uint8_t e8m0_from(float v, bool saturate, Round mode) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return 0xFF;
  if (mode == Round::Nearest) {
    const bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1FFFFF, lsb = exponent > 0;
    const bool up = g && (r || s || lsb);
    if (up && !(saturate && exponent == 0xFE)) ++exponent;
  } else if (mode == Round::Up) {
    const bool up = (bits & 0x7FFFFF) != 0;
    if (up && !(saturate && exponent == 0xFE)) ++exponent;
  }
  return static_cast<uint8_t>(exponent);
}

int int_bits(DType t) { return t == DType::I4 || t == DType::U4 ? 4 : 2; }
bool int_signed(DType t) { return t == DType::I4 || t == DType::I2; }

}  // namespace

bool is_narrow_float(DType t) { return format(t) != nullptr || t == DType::F8E8M0; }
bool is_narrow_int(DType t) { return t == DType::I4 || t == DType::U4 || t == DType::I2 || t == DType::U2; }

float to_float(DType t, uint8_t code) {
  if (const MiniFloat* f = format(t)) return decode(*f, code);
  if (t == DType::F8E8M0)
    return code == 0xFF ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.f, static_cast<int>(code) - 127);
  if (is_narrow_int(t)) return static_cast<float>(to_int(t, code));
  return std::numeric_limits<float>::quiet_NaN();
}

uint8_t from_float(DType t, float v, bool saturate, Round e8m0_round) {
  if (format(t)) return minifloat_from(t, v, saturate);
  if (t == DType::F8E8M0) return e8m0_from(v, saturate, e8m0_round);
  return 0;
}

int32_t to_int(DType t, uint8_t code) {
  const int bits = int_bits(t);
  const int32_t v = code & ((1 << bits) - 1);
  if (int_signed(t) && (v & (1 << (bits - 1)))) return v - (1 << bits);
  return v;
}
int32_t int_min(DType t) { return int_signed(t) ? -(1 << (int_bits(t) - 1)) : 0; }
int32_t int_max(DType t) { return int_signed(t) ? (1 << (int_bits(t) - 1)) - 1 : (1 << int_bits(t)) - 1; }
uint8_t from_int(DType t, int64_t v) {
  return static_cast<uint8_t>(static_cast<uint64_t>(v) & ((1u << int_bits(t)) - 1));
}

float max_finite(DType t) {
  if (format(t)) return table(t).value.back();
  if (t == DType::F8E8M0) return std::ldexp(1.f, 127);
  return 0;
}

}  // namespace ms::narrow
