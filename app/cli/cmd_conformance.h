// `modescope-cli conformance DIR`: runs ONNX node test cases (folders with model.onnx and
// test_data_set_*/) in PyNative mode, Graph mode or both, each case in its own child process so a
// crash or a hang is recorded and the run goes on.
#pragma once

#include <string>
#include <vector>

namespace ms::cli {

// dir:          a folder of case folders (or one case folder)
// mode:         "pynative", "graph" or "both"
// filter_regex: only cases whose name matches (ECMAScript, searched); "" = all
// report_path:  JSON report {passed, failed, skipped, crashed, mode, cases:[{name, mode, status,
//               message, ms}]}; "" = none. `failed` counts wrong results and runtime errors,
//               `crashed` counts crashes and timeouts.
// rtol, atol:   a value passes when |got - want| <= atol + rtol * |want| (NaN equals NaN; integers
//               and bools exact). ONNX's backend tests use rtol 1e-3, atol 1e-7.
// Prints one line per case and a summary ending in "N passed, N failed, N skipped" (failed there
// includes crashed). Returns 0 when it ran with no crash and the floor met; kExitCrashed (3) when a
// case crashed or timed out, kExitBelowFloor (4) when fewer than `floor` passed (the report is
// written either way); 1 on usage or I/O errors, on `--device cuda` without a usable device and, with
// `strict_device`, when anything ran other than as asked (fallbacks: the report's "fallbacks").
// jit_level, disabled_passes: the Graph-mode pipeline (--jit-level, --disable).
// device:       "cpu" or "cuda" (each case creates its backend in its own process).
// baseline:     a report of an earlier run (e.g. PyNative); every case passed there and not here is a
//               regression, listed and counted in the report's "regressions" ("" = no baseline).
// exclude_path: a reviewed JSON list {"cases": {"<case>": "<reason>", ...}} of cases that cannot pass by
//               construction (expected values drawn from numpy's random stream): they are not run, are
//               listed with their reason as status "excluded" and counted in "excluded", outside the
//               passed/failed/skipped counts ("" = none).
int run_conformance_command(const std::string& dir, const std::string& mode, const std::string& filter_regex,
                            const std::string& report_path, double rtol, double atol,
                            const std::string& jit_level = "O1", const std::vector<std::string>& disabled_passes = {},
                            const std::string& baseline = "", const std::string& device = "cpu",
                            const std::string& exclude_path = "", int floor = -1, bool strict_device = false);

inline constexpr int kExitCrashed = 3;
inline constexpr int kExitBelowFloor = 4;

}  // namespace ms::cli
