// NumPy .npy reader/writer. Format: "\x93NUMPY", major, minor, header length (u16 in v1, u32 in
// v2/v3), a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, data.
// bf16 has no NumPy type code: it is written as '|V2' (what ml_dtypes' bfloat16 arrays save as)
// and '<V2'/'|V2' read back as bf16.
#include "engine/frontend/npy.h"

#include "engine/core/atomic_file.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace ms {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr int64_t kMaxElements = int64_t{1} << 40;

struct Descr {
  const char* code;  // without the byte-order character
  DType dtype;
};
constexpr Descr kDescrs[] = {{"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"V2", DType::BF16},
                             {"i1", DType::I8},  {"i2", DType::I16}, {"i4", DType::I32}, {"i8", DType::I64},
                             {"u1", DType::U8},  {"u2", DType::U16}, {"u4", DType::U32}, {"u8", DType::U64},
                             {"b1", DType::Bool}};

Status bad(const std::string& path, const std::string& what) { return invalid_argument(path + ": " + what); }

// Finds `'key':` in the header dict and returns the position just after the colon.
std::optional<size_t> find_key(const std::string& h, const std::string& key) {
  for (const char q : {'\'', '"'}) {
    const std::string pat = std::string(1, q) + key + std::string(1, q);
    size_t p = h.find(pat);
    if (p == std::string::npos) continue;
    p += pat.size();
    while (p < h.size() && std::isspace(static_cast<unsigned char>(h[p]))) ++p;
    if (p < h.size() && h[p] == ':') return p + 1;
  }
  return std::nullopt;
}

void skip_space(const std::string& h, size_t& p) {
  while (p < h.size() && std::isspace(static_cast<unsigned char>(h[p]))) ++p;
}

Expected<DType> parse_descr(const std::string& h, const std::string& path) {
  auto p = find_key(h, "descr");
  if (!p) return bad(path, "npy header has no 'descr'");
  size_t i = *p;
  skip_space(h, i);
  if (i >= h.size() || (h[i] != '\'' && h[i] != '"')) return bad(path, "npy 'descr' is not a simple type string");
  const char q = h[i++];
  const size_t end = h.find(q, i);
  if (end == std::string::npos) return bad(path, "npy 'descr' string is not terminated");
  const std::string d = h.substr(i, end - i);
  if (d.size() < 2) return bad(path, "npy descr '" + d + "' is not understood");
  const char order = d[0];
  const std::string code = d.substr(1);
  if (order == '>') return unsupported(path + ": npy descr '" + d + "' is big-endian (only little-endian is read)");
  if (order != '<' && order != '|' && order != '=')
    return bad(path, "npy descr '" + d + "' has no byte-order character");
  for (const auto& e : kDescrs)
    if (code == e.code) {
      // One-byte types are written with '|'; multi-byte ones must be little-endian or native.
      return e.dtype;
    }
  return unsupported(path + ": npy descr '" + d + "' is not a supported element type");
}

Expected<Shape> parse_shape(const std::string& h, const std::string& path) {
  auto p = find_key(h, "shape");
  if (!p) return bad(path, "npy header has no 'shape'");
  size_t i = *p;
  skip_space(h, i);
  if (i >= h.size() || h[i] != '(') return bad(path, "npy 'shape' is not a tuple");
  ++i;
  Shape shape;
  int64_t n = 1;
  while (true) {
    skip_space(h, i);
    if (i >= h.size()) return bad(path, "npy 'shape' tuple is not terminated");
    if (h[i] == ')') break;
    if (!std::isdigit(static_cast<unsigned char>(h[i])))
      return bad(path, "npy 'shape' holds a non-integer or negative dim");
    int64_t d = 0;
    while (i < h.size() && std::isdigit(static_cast<unsigned char>(h[i]))) {
      if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, h[i] - '0', &d))
        return bad(path, "npy 'shape' dim is too large");
      ++i;
    }
    if (i < h.size() && h[i] == 'L') ++i;  // Python 2 long suffix
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements) return bad(path, "npy shape has more than 2^40 elements");
    shape.push_back(d);
    skip_space(h, i);
    if (i < h.size() && h[i] == ',')
      ++i;
    else if (i < h.size() && h[i] != ')')
      return bad(path, "npy 'shape' tuple is malformed");
  }
  return shape;
}

Expected<bool> parse_fortran(const std::string& h, const std::string& path) {
  auto p = find_key(h, "fortran_order");
  if (!p) return bad(path, "npy header has no 'fortran_order'");
  size_t i = *p;
  skip_space(h, i);
  if (h.compare(i, 4, "True") == 0) return true;
  if (h.compare(i, 5, "False") == 0) return false;
  return bad(path, "npy 'fortran_order' is neither True nor False");
}

}  // namespace

Expected<Tensor> load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_npy_bytes(ss.str(), path);
}

Expected<Tensor> load_npy_bytes(std::string_view bytes, const std::string& path) {
  if (bytes.size() < kMagicLen + 4 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    return bad(path, "not an .npy file (bad magic)");
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad(path, "npy header is truncated");
    for (int k = 3; k >= 0; --k)
      header_len = (header_len << 8) | static_cast<uint8_t>(bytes[8 + static_cast<size_t>(k)]);
    header_start = 12;
  } else {
    return unsupported(path + ": npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > bytes.size() - header_start) return bad(path, "npy header is truncated");
  const std::string header(bytes.substr(header_start, header_len));
  if (header.find('{') == std::string::npos || header.find('}') == std::string::npos)
    return bad(path, "npy header is not a dict");

  MS_ASSIGN_OR_RETURN(DType dtype, parse_descr(header, path));
  MS_ASSIGN_OR_RETURN(bool fortran, parse_fortran(header, path));
  MS_ASSIGN_OR_RETURN(Shape shape, parse_shape(header, path));
  if (fortran && shape.size() > 1)
    return unsupported(path + ": npy array is in Fortran order (save it with np.ascontiguousarray)");

  const size_t data_start = header_start + header_len;
  const size_t need = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
  const size_t have = bytes.size() - data_start;
  if (have < need)
    return bad(path, "npy data is truncated: " + shape_to_string(shape) + " " + std::string(dtype_name(dtype)) +
                         " needs " + std::to_string(need) + " bytes, file has " + std::to_string(have));
  if (have > need) return bad(path, "npy file has " + std::to_string(have - need) + " bytes after the array data");
  Tensor t = Tensor::empty(dtype, shape);
  if (dtype == DType::Bool) {
    for (size_t i = 0; i < need; ++i) t.data<bool>()[i] = bytes[data_start + i] != 0;
  } else if (need) {
    std::memcpy(t.raw(), bytes.data() + data_start, need);
  }
  return t;
}

Status save_npy(const Tensor& t, const std::string& path) {
  if (!t.defined()) return invalid_argument(path + ": tensor has no data");
  const char* code = nullptr;
  for (const auto& e : kDescrs)
    if (e.dtype == t.dtype()) code = e.code;
  if (!code) return unsupported(path + ": dtype " + std::string(dtype_name(t.dtype())) + " cannot be saved as .npy");
  const char order = dtype_size(t.dtype()) == 1 || t.dtype() == DType::BF16 ? '|' : '<';
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";  // a 1-tuple needs its comma
  std::string header =
      "{'descr': '" + std::string(1, order) + code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends with '\n'.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  AtomicFile f(path);
  f.write(out);
  if (t.dtype() == DType::Bool) {
    std::string b(static_cast<size_t>(t.numel()), '\0');
    for (size_t i = 0; i < b.size(); ++i) b[i] = t.data<bool>()[i] ? 1 : 0;
    f.write(b);
  } else {
    f.write(std::string_view(static_cast<const char*>(t.raw()), t.nbytes()));
  }
  return f.commit();
}

}  // namespace ms
