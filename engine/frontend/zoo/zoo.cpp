#include "engine/frontend/zoo/zoo.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "engine/frontend/nn/init.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/zoo/zoo_internal.h"

namespace ms::zoo {

const std::vector<Template>& templates() {
  static const std::vector<Template> list = [] {
    std::vector<Template> t;
    detail::add_basic_templates(t);
    detail::add_cnn_templates(t);
    detail::add_resnet_templates(t);
    detail::add_transformer_templates(t);
    return t;
  }();
  return list;
}

const Template* find_template(std::string_view name) {
  for (const auto& t : templates())
    if (t.name == name) return &t;
  return nullptr;
}

bool is_zoo_uri(std::string_view s) { return s.substr(0, 4) == "zoo:"; }

namespace {

std::string names_of(const std::vector<Template>& ts) {
  std::string r;
  for (const auto& t : ts) r += (r.empty() ? "" : ", ") + t.name;
  return r;
}

std::string param_names(const Template& t) {
  std::string r;
  for (const auto& p : t.params) r += (r.empty() ? "" : ", ") + p.name;
  return r;
}

}  // namespace

Expected<Uri> parse_uri(std::string_view s) {
  const std::string text(s);
  if (!is_zoo_uri(s)) return invalid_argument("'" + text + "' is not a zoo URI (zoo:NAME?key=value&...)");
  std::string_view rest = s.substr(4);
  const size_t q = rest.find('?');
  const std::string name(rest.substr(0, q));
  const Template* t = find_template(name);
  if (!t)
    return invalid_argument("'" + text + "': no template '" + name + "' (templates: " + names_of(templates()) + ")");
  Uri u{name, {}};
  for (const auto& p : t->params) u.params[p.name] = p.default_value;
  if (q == std::string_view::npos) return u;
  std::string_view query = rest.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos)
      return invalid_argument("'" + text + "': parameter '" + std::string(kv) + "' has no value (key=value)");
    const std::string key(kv.substr(0, eq));
    const std::string_view val = kv.substr(eq + 1);
    const ParamSpec* spec = nullptr;
    for (const auto& p : t->params)
      if (p.name == key) spec = &p;
    if (!spec)
      return invalid_argument("'" + text + "': template '" + name + "' has no parameter '" + key +
                              "' (parameters: " + param_names(*t) + ")");
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
    if (ec != std::errc() || ptr != val.data() + val.size())
      return invalid_argument("'" + text + "': " + key + "=" + std::string(val) + " is not an integer");
    if (v < spec->min || v > spec->max)
      return invalid_argument("'" + text + "': " + key + "=" + std::to_string(v) + " is out of range [" +
                              std::to_string(spec->min) + ", " + std::to_string(spec->max) + "]");
    u.params[key] = v;
  }
  return u;
}

std::string to_uri(const Uri& u) {
  std::string r = "zoo:" + u.name;
  const Template* t = find_template(u.name);
  if (!t) return r;
  char sep = '?';
  for (const auto& p : t->params) {
    auto it = u.params.find(p.name);
    if (it == u.params.end() || it->second == p.default_value) continue;
    r += sep + p.name + "=" + std::to_string(it->second);
    sep = '&';
  }
  return r;
}

Expected<Model> build_model(const Uri& u) {
  const Template* t = find_template(u.name);
  if (!t) return invalid_argument("no template '" + u.name + "'");
  Params p = u.params;
  for (const auto& spec : t->params) {
    auto it = p.find(spec.name);
    if (it == p.end())
      p[spec.name] = spec.default_value;
    else if (it->second < spec.min || it->second > spec.max)
      return invalid_argument(to_uri(u) + ": " + spec.name + "=" + std::to_string(it->second) + " is out of range");
  }
  nn::manual_seed(static_cast<uint64_t>(p["seed"]));
  auto m = t->build(p);
  if (!m) return Status(m.status()).prepend(to_uri(u) + ": ");
  return m;
}

Expected<ir::Graph> build_graph(const Uri& u) {
  MS_ASSIGN_OR_RETURN(Model m, build_model(u));
  nn::TraceSpec spec;
  spec.graph_name = u.name;
  spec.input_names = m.input_names;
  auto g = nn::trace_module(*m.module, m.inputs, spec);
  if (!g) return Status(g.status()).prepend(to_uri(u) + ": ");
  g->metadata["modescope.zoo"] = to_uri(u);
  return g;
}

Expected<ir::Graph> build_graph(std::string_view uri) {
  MS_ASSIGN_OR_RETURN(Uri u, parse_uri(uri));
  return build_graph(u);
}

std::string templates_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : templates()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : t.params)
      params.push_back({{"name", p.name},
                        {"default", p.default_value},
                        {"min", p.min},
                        {"max", p.max},
                        {"description", p.description}});
    list.push_back({{"name", t.name}, {"description", t.description}, {"params", params}, {"uri", "zoo:" + t.name}});
  }
  return nlohmann::json{{"templates", list}}.dump(2);
}

}  // namespace ms::zoo
