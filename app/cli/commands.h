// Subcommands of modescope-cli. Each returns the process exit code (0 ok, 1 error); errors are one
// line on stderr starting "error:".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/compiler/options.h"

namespace ms::cli {

struct RunArgs {
  std::string model;
  std::string mode = "pynative";
  std::string device = "cpu";
  int threads = 0;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> dims;    // PARAM=N for symbolic dims
  std::string save_outputs;
  int iters = 10;
  int warmup = 2;
  int turn = 5;  // bench: iterations per mode before the other mode's (session::run_interleaved)
  std::string report;
  uint64_t seed = 0;
  std::string jit_level = compiler::kDefaultJitLevelName;  // O0 | O1 | O2 (Graph mode pipeline)
  std::vector<std::string> disabled_passes;                // pass arguments to leave out
  std::string baseline;                                    // bench: JSON of an earlier `bench --json` to compare with
  bool pass_effect = false;                                // bench: Graph mode with each pass left out in turn
  bool strict_device = false;     // any fallback (another backend, an op on the CPU) is an error
  std::string session;            // run, compare, profile: write the runs as a session file (.modescope)
  std::string precision = "f32";  // Graph mode: f32 or bf16 (compile_options.h, apply_precision)
};

int run_command(const RunArgs& a);
int check_command(const std::string& model);
int compare_command(const RunArgs& a);
int bench_command(const std::string& what, const RunArgs& a);

// Prints "error: <message>" and returns 1.
int fail(const std::string& message);

}  // namespace ms::cli
