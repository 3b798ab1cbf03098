// `zoo [NAME] [--json]`: the model templates and their parameters. Any MODEL argument accepts
// zoo:NAME?key=value&... (see engine/frontend/zoo/zoo.h).
#include <cstdio>
#include <memory>

#include "app/cli/registry.h"
#include "engine/frontend/zoo/zoo.h"

namespace ms::cli {
namespace {

int zoo_command(const std::string& name, bool json) {
  if (json) {
    std::printf("%s\n", zoo::templates_json().c_str());
    return 0;
  }
  bool found = false;
  for (const auto& t : zoo::templates()) {
    if (!name.empty() && t.name != name) continue;
    found = true;
    std::printf("%-20s %s\n", t.name.c_str(), t.description.c_str());
    for (const auto& p : t.params)
      std::printf("    %-9s default %-8lld [%lld, %lld]  %s\n", p.name.c_str(), static_cast<long long>(p.default_value),
                  static_cast<long long>(p.min), static_cast<long long>(p.max), p.description.c_str());
  }
  if (!found) return fail("no template '" + name + "'; `modescope-cli zoo` lists them");
  if (name.empty()) std::printf("\nUse as MODEL: zoo:NAME?key=value&...  e.g. zoo:resnet50?batch=8\n");
  return 0;
}

const RegisterCommand kZoo{"zoo", "List model templates and their parameters (MODEL: zoo:NAME?key=value&...)", 60,
                           [](CLI::App& cmd) -> CommandRunner {
                             auto json = std::make_shared<bool>(false);
                             auto name = std::make_shared<std::string>();
                             cmd.add_option("NAME", *name, "Show one template only");
                             cmd.add_flag("--json", *json, "Print JSON (every template)");
                             return [json, name] { return zoo_command(*name, *json); };
                           }};

}  // namespace
}  // namespace ms::cli
