// --plugin PATH (repeatable): operator plugins (engine/plugin/loader.h) loaded before any command
// runs, accepted by modescope-cli itself and by every subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ms::cli {

// Adds --plugin to `app` and to each of its subcommands; every use appends to `paths`.
void add_plugin_option(CLI::App& app, std::vector<std::string>& paths);
// Loads them in order: 0, or 1 after printing the plugin's one-line error.
int load_plugin_paths(const std::vector<std::string>& paths);
// The loaded plugins for a report: [{"path": ..., "ops": [...]}].
nlohmann::json plugins_json();

}  // namespace ms::cli
