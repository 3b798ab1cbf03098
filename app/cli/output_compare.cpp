#include "app/cli/output_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/core/dtype.h"
#include "engine/core/strings.h"

namespace ms::cli {
namespace {

std::string value_at(const Tensor& t, int64_t i) {
  std::ostringstream os;
  os.precision(9);
  os << t.at_double(i);
  return os.str();
}

// The spacing of 16-bit floats of type t near b (b's unit in the last place).
double ulp16(double b, DType t) {
  int e = 0;
  std::frexp(b, &e);  // |b| in [2^(e-1), 2^e)
  return t == DType::BF16 ? std::ldexp(1.0, e - 1 - 7) : std::ldexp(1.0, std::max(e - 1, -14) - 10);
}

// Empty string when `got` matches `want`; else what differs. A bf16 or f16 value also matches
// within kUlp16 of its type's units in the last place: rtol 1e-3 is finer than bf16's own step
// (2^-8), and ONNX leaves intermediate precision open, so a reference that rounds every step of an
// expanded function to 16 bits (Softmax's subtract, exp, sum and divide) and a kernel that rounds
// once differ there by a unit or two.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + ", expected " + std::string(dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return "shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape());
  const int64_t n = want.numel();
  if (n == 0) return "";
  int64_t bad = 0, first = -1;
  double worst = 0;
  if (is_float(want.dtype())) {
    const bool sixteen = want.dtype() == DType::BF16 || want.dtype() == DType::F16;
    for (int64_t i = 0; i < n; ++i) {
      const double a = got.at_double(i), b = want.at_double(i);
      bool ok;
      if (std::isnan(a) || std::isnan(b))
        ok = std::isnan(a) && std::isnan(b);
      else if (std::isinf(a) || std::isinf(b))
        ok = a == b;
      else
        ok = std::fabs(a - b) <= atol + rtol * std::fabs(b) ||
             (sixteen && std::fabs(a - b) <= kUlp16 * ulp16(b, want.dtype()));
      if (!ok) {
        ++bad;
        if (first < 0) first = i;
        if (!std::isnan(a - b)) worst = std::max(worst, std::fabs(a - b));
      }
    }
  } else if (want.dtype() == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) {
      if ((got.at_int(i) != 0) != (want.at_int(i) != 0) && bad++ == 0) first = i;
    }
  } else if (is_narrow(want.dtype())) {
    // Exact codes; any two NaN codes match.
    const auto* a = static_cast<const unsigned char*>(got.raw());
    const auto* b = static_cast<const unsigned char*>(want.raw());
    for (int64_t i = 0; i < n; ++i) {
      const bool both_nan = std::isnan(got.at_double(i)) && std::isnan(want.at_double(i));
      if (a[i] != b[i] && !both_nan && bad++ == 0) first = i;
    }
  } else if (want.dtype() == DType::String) {
    for (int64_t i = 0; i < n; ++i)
      if (string_at(got, i) != string_at(want, i) && bad++ == 0) first = i;
    if (bad == 0) return "";
    return std::to_string(bad) + " of " + std::to_string(n) + " strings differ; first at flat index " +
           std::to_string(first) + ": got \"" + string_at(got, first) + "\", expected \"" + string_at(want, first) +
           "\"";
  } else if (is_integer(want.dtype())) {
    // Exact, and through the raw bytes so u64 values beyond int64 compare right too.
    const size_t es = dtype_size(want.dtype());
    const auto* a = static_cast<const unsigned char*>(got.raw());
    const auto* b = static_cast<const unsigned char*>(want.raw());
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(a + i * es, b + i * es, es) != 0 && bad++ == 0) first = i;
    }
  } else {
    return "cannot compare dtype " + std::string(dtype_name(want.dtype()));
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os << bad << " of " << n << " values differ; first at flat index " << first << ": got " << value_at(got, first)
     << ", expected " << value_at(want, first);
  if (worst > 0) os << "; max |diff| " << worst;
  return os.str();
}

// compare() for any value: tensors element by element, sequences element-wise with their lengths,
// optionals by presence and then their value.
}  // namespace

std::string compare_value(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.kind() != want.kind())
    return std::string("a ") + value_kind_name(got.kind()) + ", expected a " + value_kind_name(want.kind());
  if (want.is_tensor()) return compare(got, want, rtol, atol);
  const auto& g = got.items();
  const auto& w = want.items();
  if (want.kind() == ValueKind::Optional && g.size() != w.size())
    return g.empty() ? "an empty optional, expected one with a value" : "an optional with a value, expected none";
  if (g.size() != w.size())
    return "a sequence of " + std::to_string(g.size()) + " tensors, expected " + std::to_string(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    if (std::string diff = compare_value(g[i], w[i], rtol, atol); !diff.empty())
      return (want.kind() == ValueKind::Sequence ? "element " + std::to_string(i) + ": " : "") + diff;
  return "";
}

}  // namespace ms::cli
