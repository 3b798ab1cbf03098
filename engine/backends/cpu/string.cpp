// CPU kernels of the string ops (StringConcat, StringSplit, StringNormalizer, RegexFullMatch) and
// Equal on strings. Elements are interned-string handles (core/strings.h).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <unordered_set>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/core/strings.h"

namespace ms::cpu {
namespace {

// Flat index into an input broadcast to `out` for each flat output index, numpy rules.
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out) {
  const size_t rank = out.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t s = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t d = in.size() - 1 - k;
    strides[rank - 1 - k] = in[d] == 1 ? 0 : s;
    s *= in[d];
  }
  std::vector<int64_t> idx(static_cast<size_t>(numel(out)));
  std::vector<int64_t> coord(rank, 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d) at += coord[d] * strides[d];
    idx[i] = at;
    for (size_t d = rank; d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return idx;
}

// out[i] = fn(a[ia], b[ib]) over the broadcast of two string tensors.
template <class T, class Fn> Status string_binary(runtime::KernelContext& ctx, DType out_dtype, Fn fn) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != DType::String || b.dtype() != DType::String) return ctx.fail("inputs must be string tensors");
  Shape shape;
  if (!broadcast_shapes(a.shape(), b.shape(), shape))
    return ctx.fail("shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) +
                    " do not broadcast");
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, out_dtype, shape));
  const auto ia = broadcast_index(a.shape(), shape);
  const auto ib = broadcast_index(b.shape(), shape);
  const auto* pa = a.data<StringHandle>();
  const auto* pb = b.data<StringHandle>();
  T* po = out->data<T>();
  for (size_t i = 0; i < ia.size(); ++i) po[i] = fn(pa[ia[i]], pb[ib[i]]);
  return Status::ok();
}

Status string_concat_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:string");
  return string_binary<StringHandle>(ctx, DType::String,
                                     [](StringHandle x, StringHandle y) { return intern_string(*x + *y); });
}

// Pieces of `s` split by `delim` (runs of whitespace when empty), at most `maxsplit` splits.
std::vector<std::string> split_text(const std::string& s, const std::string& delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (delim.empty()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = s.size();
        while (end > i && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
        parts.push_back(s.substr(i, end - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t from = 0;
  while (static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t at = s.find(delim, from);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(from, at - from));
    from = at + delim.size();
  }
  parts.push_back(s.substr(from));
  return parts;
}

Status string_split_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:string");
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::String) return ctx.fail("input must be a string tensor");
  const std::string delim = ctx.node().attr_string("delimiter", "");
  const int64_t maxsplit = ctx.node().attr_int("maxsplit", INT64_MAX);
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
  size_t widest = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    parts[static_cast<size_t>(i)] = split_text(string_at(x, i), delim, maxsplit);
    widest = std::max(widest, parts[static_cast<size_t>(i)].size());
  }
  Shape yshape = x.shape();
  yshape.push_back(static_cast<int64_t>(widest));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::String, yshape));
  MS_ASSIGN_OR_RETURN(Tensor * z, ctx.allocate_output(1, DType::I64, x.shape()));
  const StringHandle empty = intern_string("");
  for (size_t i = 0; i < parts.size(); ++i) {
    z->data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
    for (size_t k = 0; k < widest; ++k)
      y->data<StringHandle>()[i * widest + k] = k < parts[i].size() ? intern_string(parts[i][k]) : empty;
  }
  return Status::ok();
}

std::string change_case(std::string s, const std::string& action) {
  if (action == "LOWER")
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  else if (action == "UPPER")
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// Stop words removed (case-insensitively unless is_case_sensitive), then the case changed. ASCII
// case rules; a result with nothing left is one empty string.
Status string_normalizer_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:string");
  const Tensor& x = ctx.input(0);
  const ir::Node& n = ctx.node();
  if (x.dtype() != DType::String) return ctx.fail("input must be a string tensor");
  if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1))) return ctx.fail("input must be [C] or [1, C]");
  const bool sensitive = n.attr_int("is_case_sensitive", 0) != 0;
  const std::string action = n.attr_string("case_change_action", "NONE");
  std::unordered_set<std::string> stop;
  if (n.attrs.count("stopwords"))
    if (const auto* words = n.attrs.at("stopwords").get_if<std::vector<std::string>>())
      for (const auto& w : *words) stop.insert(sensitive ? w : change_case(w, "LOWER"));
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string& s = string_at(x, i);
    if (!stop.count(sensitive ? s : change_case(s, "LOWER"))) kept.push_back(change_case(s, action));
  }
  if (kept.empty()) kept.emplace_back();
  const auto c = static_cast<int64_t>(kept.size());
  Tensor t = string_tensor(kept, x.rank() == 1 ? Shape{c} : Shape{1, c});
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::String, t.shape()));
  std::copy_n(t.data<StringHandle>(), c, out->data<StringHandle>());
  return Status::ok();
}

// ECMAScript regular expressions cover the RE2 subset the ONNX cases use (classes, \b, groups, {m,n}).
// GCC 12 warns inside <regex>'s compiler (a std::function it copies) at -O0 with sanitizers; a false
// positive in the library, silenced here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
Status regex_full_match_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:std::regex");
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::String) return ctx.fail("input must be a string tensor");
  const std::string pattern = ctx.node().attr_string("pattern", "");
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return ctx.fail("pattern '" + pattern + "' is not a valid regular expression (" + e.what() + ")");
  }
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::Bool, x.shape()));
  for (int64_t i = 0; i < x.numel(); ++i) out->data<bool>()[i] = std::regex_match(string_at(x, i), re);
  return Status::ok();
}
#pragma GCC diagnostic pop

// numpy's str() of a float: the shortest text that reads back to the same value, positional for
// 1e-4 <= |v| < 1e16 (with ".0" when whole), scientific otherwise; "nan", "inf", "-inf".
template <class F> std::string number_text(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const F a = std::fabs(v);
  const bool positional = a == 0 || (a >= F(1e-4) && a < F(1e16));
  auto r =
      std::to_chars(buf, buf + sizeof buf, v, positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string s(buf, r.ptr);
  if (positional && s.find('.') == std::string::npos) s += ".0";
  return s;
}

}  // namespace

// Cast between a string tensor and numbers: numbers print as numpy's str() does; strings parse as
// C's strtod/strtoll ("NaN", "INF", "+INF" and "-INF" included).
Status cast_string(runtime::KernelContext& ctx, const Tensor& x, Tensor& y) {
  ctx.set_impl("host:string");
  const int64_t n = x.numel();
  if (y.dtype() == DType::String) {
    auto* out = y.data<StringHandle>();
    for (int64_t i = 0; i < n; ++i) {
      std::string text;
      if (x.dtype() == DType::String)
        text = string_at(x, i);
      else if (x.dtype() == DType::F32)
        text = number_text(x.data<float>()[i]);
      else if (is_float(x.dtype()))
        text = number_text(x.at_double(i));
      else
        text = std::to_string(x.at_int(i));
      out[i] = intern_string(text);
    }
    return Status::ok();
  }
  bool ok = true;
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n && ok; ++i) {
      const char* text = string_at(x, i).c_str();
      char* end = nullptr;
      if constexpr (std::is_floating_point_v<T> || !std::is_integral_v<T>)
        y.data<T>()[i] = static_cast<T>(std::strtod(text, &end));
      else
        y.data<T>()[i] = static_cast<T>(std::strtoll(text, &end, 10));
      ok = end != text;
    }
  });
  if (!ok) return ctx.fail("a string does not read as a " + std::string(dtype_name(y.dtype())));
  return Status::ok();
}

// Equal over two string tensors (elementwise_compare.cpp sends string inputs here).
Status string_equal_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:string");
  return string_binary<bool>(ctx, DType::Bool, [](StringHandle x, StringHandle y) { return x == y; });
}

void register_label_encoder_kernel(runtime::KernelRegistry& r);  // label_encoder.cpp

void register_string_kernels(runtime::KernelRegistry& r) {
  register_label_encoder_kernel(r);
  r.add("StringConcat", string_concat_kernel);
  r.add("StringSplit", string_split_kernel);
  r.add("StringNormalizer", string_normalizer_kernel);
  r.add("RegexFullMatch", regex_full_match_kernel);
}

}  // namespace ms::cpu
