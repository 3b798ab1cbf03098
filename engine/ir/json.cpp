// JSON form of a graph for snapshots and session files. Round-trips ids, origins, attributes
// (subgraphs included) and constant data (base64 of the raw little-endian bytes).
#include <nlohmann/json.hpp>

#include "engine/core/strings.h"
#include "engine/ir/graph.h"

namespace ms::ir {
namespace {

using nlohmann::json;

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const unsigned char* p, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t(p[i]) << 16) | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return out;
}

bool base64_decode(const std::string& s, std::vector<unsigned char>& out) {
  int table[256];
  std::fill(std::begin(table), std::end(table), -1);
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kB64[i])] = i;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const int v = table[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

json type_to_json(const ValueType& t) {
  json j{{"dtype", dtype_name(t.dtype)}};
  if (!t.is_tensor()) j["kind"] = value_kind_name(t.kind);
  if (t.kind == ValueKind::Optional) j["elem_kind"] = value_kind_name(t.elem_kind);
  if (t.dims) {
    j["dims"] = *t.dims;
    bool any = false;
    for (const auto& p : t.dim_params) any |= !p.empty();
    if (any) j["dim_params"] = t.dim_params;
  }
  return j;
}

// What a tensor's JSON carries: all of its data, only a string tensor's, or none.
enum class JsonData { All, Strings, None };

json tensor_to_json(const Tensor& t, JsonData data) {
  json j{{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}};
  if (data != JsonData::None && t.defined() && t.dtype() == DType::String) {
    std::vector<std::string> texts;
    for (int64_t i = 0; i < t.numel(); ++i) texts.push_back(string_at(t, i));
    j["strings"] = texts;
  } else if (data == JsonData::All && t.defined()) {
    j["data"] = base64_encode(static_cast<const unsigned char*>(t.raw()), t.nbytes());
  }
  return j;
}

// The data of a graph's initializers and of its tensor attributes (a Constant's value).
struct JsonDataShown {
  JsonData initializers = JsonData::All, attributes = JsonData::All;
};

json graph_to_json(const Graph& g, JsonDataShown data);

json attr_to_json(const Attribute& a, JsonDataShown data) {
  json j{{"kind", Attribute::kind_name(a.kind())}};
  const auto& s = a.storage();
  switch (a.kind()) {
    case Attribute::Kind::Int: j["value"] = std::get<int64_t>(s); break;
    case Attribute::Kind::Float: j["value"] = std::get<float>(s); break;
    case Attribute::Kind::String: j["value"] = std::get<std::string>(s); break;
    case Attribute::Kind::Ints: j["value"] = std::get<std::vector<int64_t>>(s); break;
    case Attribute::Kind::Floats: j["value"] = std::get<std::vector<float>>(s); break;
    case Attribute::Kind::Strings: j["value"] = std::get<std::vector<std::string>>(s); break;
    case Attribute::Kind::Tensor: j["value"] = tensor_to_json(std::get<Tensor>(s), data.attributes); break;
    case Attribute::Kind::Graph: j["value"] = graph_to_json(*std::get<Attribute::GraphPtr>(s), data); break;
    case Attribute::Kind::Graphs: {
      json arr = json::array();
      for (const auto& sub : std::get<std::vector<Attribute::GraphPtr>>(s)) arr.push_back(graph_to_json(*sub, data));
      j["value"] = arr;
      break;
    }
  }
  return j;
}

json graph_to_json(const Graph& g, JsonDataShown data) {
  json j;
  j["name"] = g.name;
  j["inputs"] = g.inputs;
  j["outputs"] = g.outputs;
  json opsets = json::object();
  for (const auto& [d, v] : g.opsets) opsets[d] = v;
  j["opsets"] = opsets;
  if (!g.metadata.empty()) j["metadata"] = g.metadata;
  json values = json::array();
  std::vector<std::string> names;
  for (const auto& [k, v] : g.values()) names.push_back(k);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const Value& v = *g.value(name);
    json jv{{"name", name}, {"type", type_to_json(v.type)}};
    if (v.producer.valid()) jv["producer"] = v.producer.value;
    if (v.constant) jv["constant"] = tensor_to_json(*v.constant, data.initializers);
    values.push_back(jv);
  }
  j["values"] = values;
  json nodes = json::array();
  for (const auto& n : g.nodes()) {
    json jn{{"id", n.id.value}, {"op", n.op_type}, {"inputs", n.inputs}, {"outputs", n.outputs}};
    if (!n.domain.empty()) jn["domain"] = n.domain;
    if (!n.name.empty()) jn["name"] = n.name;
    std::vector<uint64_t> origins;
    for (auto o : n.origins) origins.push_back(o.value);
    jn["origins"] = origins;
    if (!n.attrs.empty()) {
      json attrs = json::object();
      for (const auto& [k, a] : n.attrs) attrs[k] = attr_to_json(a, data);
      jn["attrs"] = attrs;
    }
    nodes.push_back(jn);
  }
  j["nodes"] = nodes;
  return j;
}

// Parsing: every access checked; errors name the JSON path.
struct Reader {
  std::string error;
  bool fail(const std::string& what) {
    if (error.empty()) error = what;
    return false;
  }

  bool read_kind(const json& j, const char* key, ValueKind& k, const std::string& where) {
    if (!j.contains(key)) return true;
    const std::string name = j[key].is_string() ? j[key].get<std::string>() : "";
    for (ValueKind c : {ValueKind::Tensor, ValueKind::Sequence, ValueKind::Optional})
      if (name == value_kind_name(c)) {
        k = c;
        return true;
      }
    return fail(where + ": unknown value kind '" + name + "'");
  }

  bool read_type(const json& j, ValueType& t, const std::string& where) {
    if (!j.is_object() || !j.contains("dtype") || !j["dtype"].is_string()) return fail(where + ": type needs a dtype");
    auto dt = dtype_from_name(j["dtype"].get<std::string>());
    if (!dt) return fail(where + ": unknown dtype '" + j["dtype"].get<std::string>() + "'");
    t.dtype = *dt;
    if (!read_kind(j, "kind", t.kind, where) || !read_kind(j, "elem_kind", t.elem_kind, where)) return false;
    if (j.contains("dims")) {
      if (!j["dims"].is_array()) return fail(where + ": dims must be an array");
      std::vector<int64_t> dims;
      for (const auto& d : j["dims"]) {
        if (!d.is_number_integer()) return fail(where + ": dims must be integers");
        dims.push_back(d.get<int64_t>());
      }
      t.dim_params.assign(dims.size(), "");
      if (j.contains("dim_params") && j["dim_params"].is_array() && j["dim_params"].size() == dims.size())
        for (size_t i = 0; i < dims.size(); ++i)
          if (j["dim_params"][i].is_string()) t.dim_params[i] = j["dim_params"][i].get<std::string>();
      t.dims = std::move(dims);
    }
    return true;
  }

  bool read_tensor(const json& j, Tensor& t, const std::string& where) {
    if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") || !j["shape"].is_array())
      return fail(where + ": tensor needs dtype and shape");
    auto dt = dtype_from_name(j["dtype"].is_string() ? j["dtype"].get<std::string>() : "");
    if (!dt) return fail(where + ": unknown tensor dtype");
    Shape shape;
    for (const auto& d : j["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) return fail(where + ": bad tensor shape");
      shape.push_back(d.get<int64_t>());
    }
    if (numel(shape) > (int64_t(1) << 34)) return fail(where + ": tensor too large");
    t = Tensor::zeros(*dt, shape);
    if (*dt == DType::String && j.contains("strings")) {
      if (!j["strings"].is_array() || static_cast<int64_t>(j["strings"].size()) != t.numel())
        return fail(where + ": strings must be an array of " + std::to_string(t.numel()) + " texts");
      for (int64_t i = 0; i < t.numel(); ++i) {
        const auto& e = j["strings"][static_cast<size_t>(i)];
        if (!e.is_string()) return fail(where + ": strings must be texts");
        t.data<StringHandle>()[i] = intern_string(e.get<std::string>());
      }
    } else if (*dt == DType::String && j.contains("data")) {
      return fail(where + ": a string tensor carries 'strings', not 'data'");
    } else if (j.contains("data")) {
      if (!j["data"].is_string()) return fail(where + ": data must be a base64 string");
      std::vector<unsigned char> bytes;
      if (!base64_decode(j["data"].get<std::string>(), bytes)) return fail(where + ": data is not base64");
      if (bytes.size() != t.nbytes())
        return fail(where + ": data has " + std::to_string(bytes.size()) + " bytes, shape needs " +
                    std::to_string(t.nbytes()));
      if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
    }
    return true;
  }

  template <class T> bool read_list(const json& j, std::vector<T>& out, const std::string& where) {
    if (!j.is_array()) return fail(where + ": expected an array");
    for (const auto& e : j) {
      if constexpr (std::is_same_v<T, std::string>) {
        if (!e.is_string()) return fail(where + ": expected strings");
      } else if constexpr (std::is_integral_v<T>) {
        if (!e.is_number_integer()) return fail(where + ": expected integers");
      } else {
        if (!e.is_number()) return fail(where + ": expected numbers");
      }
      out.push_back(e.get<T>());
    }
    return true;
  }

  bool read_attr(const json& j, Attribute& a, const std::string& where, const std::shared_ptr<IdSource>& ids) {
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string() || !j.contains("value"))
      return fail(where + ": attribute needs kind and value");
    const std::string kind = j["kind"].get<std::string>();
    const json& v = j["value"];
    if (kind == "int") {
      if (!v.is_number_integer()) return fail(where + ": expected an integer");
      a = Attribute(v.get<int64_t>());
    } else if (kind == "float") {
      if (!v.is_number()) return fail(where + ": expected a number");
      a = Attribute(v.get<float>());
    } else if (kind == "string") {
      if (!v.is_string()) return fail(where + ": expected a string");
      a = Attribute(v.get<std::string>());
    } else if (kind == "ints") {
      std::vector<int64_t> l;
      if (!read_list(v, l, where)) return false;
      a = Attribute(std::move(l));
    } else if (kind == "floats") {
      std::vector<float> l;
      if (!read_list(v, l, where)) return false;
      a = Attribute(std::move(l));
    } else if (kind == "strings") {
      std::vector<std::string> l;
      if (!read_list(v, l, where)) return false;
      a = Attribute(std::move(l));
    } else if (kind == "tensor") {
      Tensor t;
      if (!read_tensor(v, t, where)) return false;
      a = Attribute(std::move(t));
    } else if (kind == "graph") {
      auto g = std::make_shared<Graph>(ids);
      if (!read_graph(v, *g, where)) return false;
      a = Attribute(Attribute::GraphPtr(g));
    } else if (kind == "graphs") {
      if (!v.is_array()) return fail(where + ": expected an array of graphs");
      std::vector<Attribute::GraphPtr> gs;
      for (size_t i = 0; i < v.size(); ++i) {
        auto g = std::make_shared<Graph>(ids);
        if (!read_graph(v[i], *g, where + "[" + std::to_string(i) + "]")) return false;
        gs.push_back(g);
      }
      a = Attribute(std::move(gs));
    } else {
      return fail(where + ": unknown attribute kind '" + kind + "'");
    }
    return true;
  }

  bool read_graph(const json& j, Graph& g, const std::string& where) {
    if (!j.is_object()) return fail(where + ": graph must be an object");
    if (j.contains("name") && j["name"].is_string()) g.name = j["name"].get<std::string>();
    if (j.contains("inputs") && !read_list(j["inputs"], g.inputs, where + ".inputs")) return false;
    if (j.contains("outputs") && !read_list(j["outputs"], g.outputs, where + ".outputs")) return false;
    if (j.contains("opsets") && j["opsets"].is_object())
      for (const auto& [d, v] : j["opsets"].items())
        if (v.is_number_integer()) g.opsets[d] = v.get<int64_t>();
    if (j.contains("metadata") && j["metadata"].is_object())
      for (const auto& [k, v] : j["metadata"].items())
        if (v.is_string()) g.metadata[k] = v.get<std::string>();
    if (j.contains("values")) {
      if (!j["values"].is_array()) return fail(where + ".values: expected an array");
      for (const auto& jv : j["values"]) {
        if (!jv.is_object() || !jv.contains("name") || !jv["name"].is_string())
          return fail(where + ".values: entry needs a name");
        Value v;
        v.name = jv["name"].get<std::string>();
        const std::string vw = where + ".values['" + v.name + "']";
        if (jv.contains("type") && !read_type(jv["type"], v.type, vw)) return false;
        if (jv.contains("producer") && jv["producer"].is_number_unsigned())
          v.producer = NodeId{jv["producer"].get<uint64_t>()};
        if (jv.contains("constant")) {
          Tensor t;
          if (!read_tensor(jv["constant"], t, vw)) return false;
          v.constant = std::move(t);
        }
        g.add_value(std::move(v));
      }
    }
    if (j.contains("nodes")) {
      if (!j["nodes"].is_array()) return fail(where + ".nodes: expected an array");
      for (size_t i = 0; i < j["nodes"].size(); ++i) {
        const json& jn = j["nodes"][i];
        const std::string nw = where + ".nodes[" + std::to_string(i) + "]";
        if (!jn.is_object() || !jn.contains("op") || !jn["op"].is_string() || !jn.contains("id") ||
            !jn["id"].is_number_unsigned() || jn["id"].get<uint64_t>() == 0)
          return fail(nw + ": node needs op and a positive id");
        Node n;
        n.id = NodeId{jn["id"].get<uint64_t>()};
        n.op_type = jn["op"].get<std::string>();
        if (jn.contains("domain") && jn["domain"].is_string()) n.domain = jn["domain"].get<std::string>();
        if (jn.contains("name") && jn["name"].is_string()) n.name = jn["name"].get<std::string>();
        if (jn.contains("inputs") && !read_list(jn["inputs"], n.inputs, nw + ".inputs")) return false;
        if (jn.contains("outputs") && !read_list(jn["outputs"], n.outputs, nw + ".outputs")) return false;
        std::vector<uint64_t> origins;
        if (jn.contains("origins") && !read_list(jn["origins"], origins, nw + ".origins")) return false;
        for (auto o : origins) n.origins.push_back(NodeId{o});
        if (jn.contains("attrs")) {
          if (!jn["attrs"].is_object()) return fail(nw + ".attrs: expected an object");
          for (const auto& [k, ja] : jn["attrs"].items()) {
            Attribute a;
            if (!read_attr(ja, a, nw + ".attrs." + k, g.ids())) return false;
            n.attrs[k] = std::move(a);
          }
        }
        // Keep the types recorded for outputs: add_node only creates missing values.
        g.add_node(std::move(n));
      }
    }
    return true;
  }
};

}  // namespace

std::string to_json(const Graph& g, bool include_constant_data) {
  return graph_to_json(g, {include_constant_data ? JsonData::All : JsonData::None, JsonData::All}).dump();
}

std::string to_json_strings_only(const Graph& g) {
  return graph_to_json(g, {JsonData::Strings, JsonData::Strings}).dump();
}

Expected<Graph> from_json(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_model("graph JSON: not valid JSON");
  Graph g;
  Reader r;
  if (!r.read_graph(j, g, "graph")) return invalid_model("graph JSON: " + r.error);
  return g;
}

}  // namespace ms::ir
