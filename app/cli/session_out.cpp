#include "app/cli/session_out.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/session/environment.h"
#include "app/session/mode_run.h"
#include "profiler/analysis/compare.h"
#include "profiler/analysis/report.h"

namespace ms::cli {

session::SessionRun session_run(const RunArgs& a, const session::RunResult& r, const std::string& backend) {
  session::SessionRun s;
  const auto level = compiler::parse_jit_level(a.jit_level);
  s.outcome = session::mode_outcome(r, level ? *level : compiler::kDefaultJitLevel);
  s.outcome.backend = backend;
  s.label = s.outcome.mode;
  s.request.mode = s.outcome.mode;
  s.request.device = a.device;
  s.request.jit_level = a.jit_level;
  s.request.threads = a.threads;
  s.request.iterations = a.iters;
  s.request.warmup = a.warmup;
  s.request.disabled_passes = a.disabled_passes;
  return s;
}

session::SessionComparison session_comparison(const std::vector<session::SessionRun>& runs, int a, int b) {
  session::SessionComparison c;
  c.name = runs[static_cast<size_t>(a)].label + " vs " + runs[static_cast<size_t>(b)].label;
  c.run_a = a;
  c.run_b = b;
  const prof::TracePtr& x = runs[static_cast<size_t>(a)].outcome.trace;
  const prof::TracePtr& y = runs[static_cast<size_t>(b)].outcome.trace;
  if (x && y) {
    const prof::Comparison cmp = prof::compare_runs(*x, *y);
    nlohmann::json j = prof::to_json(cmp);
    j["verdict"] = cmp.verdict.text;
    c.report = j.dump();
  }
  return c;
}

Status write_session(const std::string& path, const std::string& model, const std::string& command,
                     session::SessionData data) {
  auto described = session::describe_model(model);
  if (!described) return std::move(described).take_status();
  data.model = std::move(*described);
  data.environment = session::environment_record();
  data.environment["producer"] = "modescope-cli";
  data.environment["command"] = command;
  MS_RETURN_IF_ERROR(session::save_session(path, data));
  std::printf("session: %s\n", path.c_str());
  return Status::ok();
}

}  // namespace ms::cli
