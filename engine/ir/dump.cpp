#include <algorithm>
#include <cstring>
#include <sstream>

#include "engine/core/strings.h"
#include "engine/ir/graph.h"

namespace ms::ir {
namespace {

std::string format_float(float f) {
  std::ostringstream os;
  os.precision(9);
  os << f;
  return os.str();
}

void dump_graph(const Graph& g, std::ostringstream& os, int indent);

void dump_attr(const Attribute& a, std::ostringstream& os, int indent) {
  const auto& s = a.storage();
  switch (a.kind()) {
    case Attribute::Kind::Int: os << std::get<int64_t>(s); break;
    case Attribute::Kind::Float: os << format_float(std::get<float>(s)); break;
    case Attribute::Kind::String: os << '"' << std::get<std::string>(s) << '"'; break;
    case Attribute::Kind::Ints: {
      os << '[';
      const auto& v = std::get<std::vector<int64_t>>(s);
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
      os << ']';
      break;
    }
    case Attribute::Kind::Floats: {
      os << '[';
      const auto& v = std::get<std::vector<float>>(s);
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << format_float(v[i]);
      os << ']';
      break;
    }
    case Attribute::Kind::Strings: {
      os << '[';
      const auto& v = std::get<std::vector<std::string>>(s);
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << '"' << v[i] << '"';
      os << ']';
      break;
    }
    case Attribute::Kind::Tensor: {
      const auto& t = std::get<Tensor>(s);
      os << "tensor<" << dtype_name(t.dtype()) << shape_to_string(t.shape()) << ">";
      break;
    }
    case Attribute::Kind::Graph:
      os << "{\n";
      dump_graph(*std::get<Attribute::GraphPtr>(s), os, indent + 4);
      os << std::string(static_cast<size_t>(indent + 2), ' ') << '}';
      break;
    case Attribute::Kind::Graphs:
      os << '[';
      for (const auto& sub : std::get<std::vector<Attribute::GraphPtr>>(s)) {
        os << "{\n";
        dump_graph(*sub, os, indent + 4);
        os << std::string(static_cast<size_t>(indent + 2), ' ') << "} ";
      }
      os << ']';
      break;
  }
}

std::string type_of(const Graph& g, const std::string& name) {
  const Value* v = g.resolve(name);
  return v ? v->type.to_string() : "?";
}

void dump_graph(const Graph& g, std::ostringstream& os, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  os << pad << "graph " << (g.name.empty() ? "main" : g.name) << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << (i ? ", " : "") << '%' << g.inputs[i] << ": " << type_of(g, g.inputs[i]);
  os << ")\n";
  for (const auto& name : g.initializer_names()) os << pad << "  init %" << name << ": " << type_of(g, name) << '\n';
  for (const auto& n : g.nodes()) {
    os << pad << "  #" << n.id.value << ' ';
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << '%' << n.outputs[i];
    os << " = " << (n.domain.empty() ? "" : n.domain + ".") << n.op_type << '(';
    for (size_t i = 0; i < n.inputs.size(); ++i)
      os << (i ? ", " : "") << (n.inputs[i].empty() ? "_" : "%" + n.inputs[i]);
    os << ')';
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n.attrs) {
        os << (first ? "" : ", ") << k << '=';
        dump_attr(a, os, indent);
        first = false;
      }
      os << '}';
    }
    if (!n.name.empty()) os << " name=\"" << n.name << '"';
    if (!(n.origins.size() == 1 && n.origins[0] == n.id)) {
      os << " origins=[";
      for (size_t i = 0; i < n.origins.size(); ++i) os << (i ? "," : "") << n.origins[i].value;
      os << ']';
    }
    os << " :";
    for (const auto& out : n.outputs) os << ' ' << (out.empty() ? "_" : type_of(g, out));
    os << '\n';
  }
  os << pad << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << '%' << g.outputs[i];
  os << '\n';
}

}  // namespace

std::string dump_text(const Graph& g) {
  std::ostringstream os;
  dump_graph(g, os, 0);
  return os.str();
}

namespace {

// FNV-1a, fed words, bytes and strings.
struct Fnv {
  static constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = (h ^ w) * kPrime;
    }
    for (; i < n; ++i) h = (h ^ b[i]) * kPrime;
  }
  void word(uint64_t w) { h = (h ^ w) * kPrime; }
  void str(const std::string& s) {
    word(s.size());
    bytes(s.data(), s.size());
  }
  // A value's type as the dump shows it (kind, dtype, dims, dim names).
  void type(const Graph& g, const std::string& name) {
    const Value* v = g.resolve(name);
    if (!v) return word(~uint64_t{0});
    word(static_cast<uint64_t>(v->type.dtype));
    if (!v->type.is_tensor())
      word(0x5e90000u + static_cast<uint64_t>(v->type.kind) * 4 + static_cast<uint64_t>(v->type.elem_kind));
    if (!v->type.dims) return word(~uint64_t{1});
    word(v->type.dims->size());
    for (int64_t d : *v->type.dims) word(static_cast<uint64_t>(d));
    for (const auto& p : v->type.dim_params) str(p);
  }
};

// One initializer: name, type and (a prefix of) its data.
uint64_t initializer_hash(const Graph& g, const std::string& name, const Tensor& t) {
  Fnv x;
  x.str(name);
  x.type(g, name);
  if (t.defined() && t.dtype() == DType::String)
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 512); ++i) x.str(string_at(t, i));
  else if (t.defined())
    x.bytes(t.raw(), std::min<size_t>(t.nbytes(), 4096));
  x.h ^= x.h >> 31;  // spread before the sum
  return x.h;
}

void hash_node(Fnv& f, const Graph& g, const Node& n, std::ostringstream& attrs) {
  f.word(n.id.value);
  f.str(n.domain);
  f.str(n.op_type);
  f.word(n.inputs.size());
  for (const auto& in : n.inputs) f.str(in);
  f.word(n.outputs.size());
  for (const auto& out : n.outputs) {
    f.str(out);
    if (!out.empty()) f.type(g, out);
  }
  f.word(n.attrs.size());
  if (!n.attrs.empty()) {
    attrs.str("");
    for (const auto& [k, a] : n.attrs) {
      attrs << k << '=';
      dump_attr(a, attrs, 0);
      attrs << ';';
    }
    f.str(attrs.str());
  }
  f.str(n.name);
  f.word(n.origins.size());
  for (const auto& o : n.origins) f.word(o.value);
}

}  // namespace

uint64_t Graph::fingerprint() const {
  // FNV-1a over what the text dump shows (inputs, initializers, nodes with ids, attributes, names,
  // origins and output types, outputs), fed straight into the hash instead of through the text, plus
  // a digest of constant data. Initializers combine in any order (no sort): a fingerprint is taken
  // after every pass, on graphs with tens of thousands of nodes and initializers.
  Fnv f;
  f.str(name);
  for (const auto& in : inputs) {
    f.str(in);
    f.type(*this, in);
  }
  uint64_t inits = 0, count = 0;
  for (const auto& [k, v] : values_) {
    if (!v.is_initializer()) continue;
    inits += initializer_hash(*this, k, *v.constant) * 0x9E3779B97F4A7C15ull;
    ++count;
  }
  f.word(inits);
  f.word(count);
  std::ostringstream attrs;
  for (const auto& n : nodes_) hash_node(f, *this, n, attrs);
  for (const auto& out : outputs) f.str(out);
  return f.h;
}

}  // namespace ms::ir
