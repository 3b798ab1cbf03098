// Model zoo: templates built with the nn module API (node names are module paths), each with
// integer parameters (batch, size, classes, seed, ...). A template is named by a URI
//   zoo:NAME?key=value&key=value
// that every MODEL argument of the CLI accepts. The parameter descriptions are what the CLI's
// `zoo` listing and the GUI's "New from template" form show.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/frontend/nn/module.h"
#include "engine/ir/graph.h"

namespace ms::zoo {

struct ParamSpec {
  std::string name;
  int64_t default_value = 0;
  int64_t min = 0, max = 0;
  std::string description;
};

using Params = std::map<std::string, int64_t>;

// A built template: the module and the types of its inputs (static, from the parameters).
struct Model {
  std::string name;  // template name
  std::shared_ptr<nn::Module> module;
  std::vector<std::string> input_names;
  std::vector<ir::ValueType> inputs;
};

struct Template {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  // Params are complete (defaults filled, ranges checked) when this is called.
  std::function<Expected<Model>(const Params&)> build;
};

// Every template, in listing order.
const std::vector<Template>& templates();
const Template* find_template(std::string_view name);

struct Uri {
  std::string name;
  Params params;  // every parameter of the template (defaults filled in)
};
bool is_zoo_uri(std::string_view s);
// Parses "zoo:NAME?k=v&..."; errors name the unknown template or parameter (listing the valid
// ones) and out-of-range values.
Expected<Uri> parse_uri(std::string_view s);
// Canonical form: every parameter that differs from its default, in the template's order.
std::string to_uri(const Uri& u);

// Seeds the init generator with params["seed"] and builds the module.
Expected<Model> build_model(const Uri& u);
// Builds and traces the model into a graph (metadata "modescope.zoo" = canonical URI).
Expected<ir::Graph> build_graph(const Uri& u);
Expected<ir::Graph> build_graph(std::string_view uri);

// {"templates":[{"name":..,"description":..,"params":[{"name","default","min","max","description"}]}]}
std::string templates_json();

}  // namespace ms::zoo
