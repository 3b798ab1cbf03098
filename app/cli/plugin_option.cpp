#include "app/cli/plugin_option.h"

#include "app/cli/commands.h"
#include "engine/plugin/loader.h"

namespace ms::cli {

void add_plugin_option(CLI::App& app, std::vector<std::string>& paths) {
  auto add = [&paths](CLI::App* a) {
    a->add_option_function<std::vector<std::string>>(
        "--plugin", [&paths](const std::vector<std::string>& ps) { paths.insert(paths.end(), ps.begin(), ps.end()); },
        "Load an operator plugin (a shared library; repeatable)");
  };
  add(&app);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) add(sub);
}

int load_plugin_paths(const std::vector<std::string>& paths) {
  const Status st = plugin::load_plugins(paths);
  return st.is_ok() ? 0 : fail(st.message());
}

nlohmann::json plugins_json() {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : plugin::loaded_plugins()) j.push_back({{"path", p.path}, {"ops", p.ops}});
  return j;
}

}  // namespace ms::cli
