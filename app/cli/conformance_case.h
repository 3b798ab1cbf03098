// One ONNX node test case (a folder with model.onnx and test_data_set_*/{input,output}_*.pb) run
// in-process in one mode. cmd_conformance runs this in a child process per case.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/fallback.h"

namespace ms::cli {

enum class CaseStatus { Passed, Failed, Skipped, Crashed, Timeout };
const char* case_status_name(CaseStatus s);  // "passed", "failed", "skipped", "crashed", "timeout"

struct CaseResult {
  CaseResult() = default;
  CaseResult(CaseStatus s, std::string m, std::string o) : status(s), message(std::move(m)), op(std::move(o)) {}
  CaseStatus status = CaseStatus::Failed;
  std::string message;                       // why it failed / was skipped
  std::string op;                            // the op a skip is about ("" when unknown)
  std::vector<runtime::Fallback> fallbacks;  // what did not run as asked on the device
};

struct CaseOptions {
  std::string mode;  // "pynative" or "graph"
  double rtol = 1e-3;
  double atol = 1e-5;
  int threads = 1;
  std::string device = "cpu";                // "cuda": without a usable device the case is skipped with the reason
  std::string jit_level = "O1";              // graph mode: pipeline level
  std::vector<std::string> disabled_passes;  // graph mode: passes left out
};

// Loads, runs and compares every data set of the case. Never throws on bad input: load errors,
// runtime errors and mismatches come back as the result.
CaseResult run_conformance_case(const std::string& case_dir, const CaseOptions& options);

}  // namespace ms::cli
