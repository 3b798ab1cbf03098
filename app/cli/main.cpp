// modescope-cli: the headless front end (no Qt). Errors: one line on stderr starting "error:",
// exit 1; usage errors exit 2.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>

#include "app/cli/cmd_conformance.h"
#include "app/cli/commands.h"
#include "app/cli/plugin_option.h"
#include "app/cli/registry.h"

namespace ms::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}

void add_precision_option(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--precision", a.precision,
                  "Graph mode's precision: f32, bf16 (norms, softmax, reductions, the sums a LayerNorm "
                  "centres and the layer that reads the input kept f32; CPUs with AVX-512-BF16 or AMX, CUDA from "
                  "sm_80) or fp16 (the same, in f16; "
                  "CUDA); the deviation from f32 is reported")
      ->check(CLI::IsMember({"f32", "bf16", "fp16"}));
}

void add_run_options(CLI::App* cmd, RunArgs& a, bool with_mode) {
  cmd->add_option("MODEL", a.model, "An .onnx file or zoo:NAME?key=value&...")->required();
  if (with_mode) cmd->add_option("--mode", a.mode, "pynative or graph")->check(CLI::IsMember({"pynative", "graph"}));
  cmd->add_option("--device", a.device, "cpu or cuda (falls back to cpu with a note)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--threads", a.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--input", a.inputs, "NAME=FILE.npy (repeatable); others are random with --seed");
  cmd->add_option("--dim", a.dims, "PARAM=N for symbolic input dims (default 1)");
  cmd->add_option("--iters", a.iters, "Timed iterations")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", a.warmup, "Warm-up iterations")->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", a.seed, "Seed for random inputs");
  cmd->add_option("--jit-level", a.jit_level, "Graph-mode pipeline: O0, O1 or O2")
      ->check(CLI::IsMember({"O0", "O1", "O2"}));
  cmd->add_option("--disable", a.disabled_passes, "Leave a pass out of the pipeline (repeatable)");
  cmd->add_flag("--strict-device", a.strict_device,
                "Fail when anything does not run as asked on the device (an op on the CPU, another precision)");
}

}  // namespace ms::cli

int main(int argc, char** argv) {
  CLI::App app{"modescope-cli: run, check and compare models in PyNative and Graph mode"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "modescope-cli 0.1.0");

  ms::cli::RunArgs run_args;
  auto* run = app.add_subcommand("run", "Run a model in one mode and print a latency summary");
  ms::cli::add_run_options(run, run_args, true);
  ms::cli::add_precision_option(run, run_args);
  run->add_option("--save-outputs", run_args.save_outputs, "Folder for <output name>.npy");
  run->add_option("--report", run_args.report, "Write a JSON report");
  run->add_option("--session", run_args.session, "Write the run (profiled) as a session file the app opens");

  std::string check_model;
  auto* check = app.add_subcommand("check", "Load, verify and infer shapes; print a summary");
  check->add_option("MODEL", check_model, "Path to an .onnx model")->required();

  ms::cli::RunArgs compare_args;
  auto* compare = app.add_subcommand("compare", "Run both modes side by side and check equal outputs");
  ms::cli::add_run_options(compare, compare_args, false);
  ms::cli::add_precision_option(compare, compare_args);
  compare->add_option("--session", compare_args.session, "Write both runs (profiled) as a session file the app opens");

  std::string conf_dir, conf_mode = "both", conf_filter, conf_report;
  double rtol = 1e-3, atol = 1e-5;
  auto* conf = app.add_subcommand("conformance", "Run ONNX backend node tests from a folder");
  conf->add_option("DIR", conf_dir, "Folder of test cases (<case>/model.onnx, test_data_set_*)")->required();
  conf->add_option("--mode", conf_mode, "pynative, graph or both")->check(CLI::IsMember({"pynative", "graph", "both"}));
  conf->add_option("--filter", conf_filter, "Only cases matching this regex");
  conf->add_option("--report", conf_report, "Write a JSON report");
  conf->add_option("--rtol", rtol, "Relative tolerance");
  conf->add_option("--atol", atol, "Absolute tolerance");
  std::string conf_jit = "O1";
  std::vector<std::string> conf_disabled;
  std::string conf_baseline;
  conf->add_option("--baseline", conf_baseline, "Report of an earlier run: its passed cases must pass");
  std::string conf_exclude;
  conf->add_option("--exclude", conf_exclude,
                   "JSON {\"cases\": {name: reason}} of cases not run (reported as excluded with the reason)");
  conf->add_option("--jit-level", conf_jit, "Graph-mode pipeline: O0, O1 or O2")
      ->check(CLI::IsMember({"O0", "O1", "O2"}));
  conf->add_option("--disable", conf_disabled, "Leave a pass out of the Graph-mode pipeline (repeatable)");
  int conf_floor = -1;
  conf->add_option("--floor", conf_floor, "Exit 4 when fewer cases than this pass (crashes exit 3)")
      ->check(CLI::NonNegativeNumber);
  bool conf_strict = false;
  conf->add_flag("--strict-device", conf_strict, "Fail when any case runs an op other than as asked on the device");
  std::string conf_device = "cpu";
  conf->add_option("--device", conf_device, "cpu or cuda (without a usable CUDA device: an error, exit 1)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  std::string bench_what;
  ms::cli::RunArgs bench_args;
  bench_args.model = "-";
  auto* bench = app.add_subcommand("bench", "Benchmarks: dispatch, peak, or a MODEL in both modes");
  bench->add_option("WHAT", bench_what, "dispatch | peak | path to an .onnx model")->required();
  bench->add_option("--threads", bench_args.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  bench->add_option("--iters", bench_args.iters, "Timed iterations")->check(CLI::PositiveNumber);
  bench->add_option("--warmup", bench_args.warmup, "Warm-up iterations")->check(CLI::NonNegativeNumber);
  bench
      ->add_option("--turn", bench_args.turn,
                   "Timed iterations of one mode before the other's (default 5; each later turn first runs one "
                   "untimed iteration so the timed ones find their data in the caches; 1: strict alternation)")
      ->check(CLI::PositiveNumber);
  bench->add_option("--input", bench_args.inputs, "NAME=FILE.npy (repeatable)");
  bench->add_option("--dim", bench_args.dims, "PARAM=N for symbolic input dims");
  bench->add_option("--json", bench_args.report, "Write the figures as JSON");
  bench->add_option("--device", bench_args.device, "cpu or cuda (falls back to cpu with a note)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  bench->add_option("--jit-level", bench_args.jit_level, "Graph-mode pipeline: O0, O1 or O2")
      ->check(CLI::IsMember({"O0", "O1", "O2"}));
  bench->add_option("--disable", bench_args.disabled_passes, "Leave a pass out of the pipeline (repeatable)");
  ms::cli::add_precision_option(bench, bench_args);
  bench->add_flag("--strict-device", bench_args.strict_device,
                  "Fail when anything does not run as asked on the device (an op on the CPU, another precision)");
  bench->add_flag("--pass-effect", bench_args.pass_effect,
                  "Also time Graph mode with each pass left out in turn: each pass's share of the gain");
  bench->add_option("--baseline", bench_args.baseline,
                    "JSON of an earlier bench --json: flags medians slower beyond the spread (exit status 3)");

  // Self-registered subcommands (see registry.h), in their listing order.
  auto& registry = ms::cli::command_registry();
  std::stable_sort(registry.begin(), registry.end(), [](const auto& x, const auto& y) { return x.order < y.order; });
  std::vector<std::pair<CLI::App*, ms::cli::CommandRunner>> registered;
  for (auto& info : registry) {
    CLI::App* sub = app.add_subcommand(info.name, info.description);
    registered.emplace_back(sub, info.setup(*sub));
  }
  std::vector<std::string> plugins;
  ms::cli::add_plugin_option(app, plugins);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (int rc = ms::cli::load_plugin_paths(plugins)) return rc;
    if (*run) return ms::cli::run_command(run_args);
    if (*check) return ms::cli::check_command(check_model);
    if (*compare) return ms::cli::compare_command(compare_args);
    if (*conf)
      return ms::cli::run_conformance_command(conf_dir, conf_mode, conf_filter, conf_report, rtol, atol, conf_jit,
                                              conf_disabled, conf_baseline, conf_device, conf_exclude, conf_floor,
                                              conf_strict);
    if (*bench) return ms::cli::bench_command(bench_what, bench_args);
    for (auto& [sub, runner] : registered)
      if (*sub) return runner();
  } catch (const std::bad_alloc&) {
    return ms::cli::fail("out of memory");
  } catch (const std::exception& e) {
    return ms::cli::fail(std::string("internal error: ") + e.what());
  }
  return 2;
}
