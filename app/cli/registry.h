// Subcommands register themselves from their own file, so adding one never touches main.cpp:
//
//   static const ms::cli::RegisterCommand kZoo{"zoo", "List model templates", 60,
//       [](CLI::App& cmd) -> ms::cli::CommandRunner {
//         auto json = std::make_shared<bool>(false);
//         cmd.add_flag("--json", *json, "Print JSON");
//         return [json] { return zoo_command(*json); };
//       }};
//
// setup() adds the options (bound to state the returned runner owns) and returns the function that
// runs the command after parsing. `order` sorts the help listing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "app/cli/commands.h"

namespace ms::cli {

using CommandRunner = std::function<int()>;
using CommandSetup = std::function<CommandRunner(CLI::App& cmd)>;

struct CommandInfo {
  std::string name;
  std::string description;
  int order = 100;
  CommandSetup setup;
};

std::vector<CommandInfo>& command_registry();

struct RegisterCommand {
  RegisterCommand(std::string name, std::string description, int order, CommandSetup setup) {
    command_registry().push_back({std::move(name), std::move(description), order, std::move(setup)});
  }
};

// The options every model-running command shares (MODEL, --device, --threads, --input, --dim,
// --iters, --warmup, --seed, --jit-level, --disable; --mode when with_mode).
void add_run_options(CLI::App* cmd, RunArgs& a, bool with_mode);
// --precision f32|bf16 (run, compare, bench, profile, passes).
void add_precision_option(CLI::App* cmd, RunArgs& a);

}  // namespace ms::cli
