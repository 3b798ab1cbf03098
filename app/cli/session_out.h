// --session FILE on run, compare, profile and train: the command's runs written as a session file
// (app/session/session_file.h) that the app opens - the model, each run's request, figures,
// outputs, passes, memory plan and trace, the comparison of both modes, training curves.
#pragma once

#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "app/session/run_loop.h"
#include "app/session/session_file.h"

namespace ms::cli {

// A run of the loop as the session keeps it (the request as the command's options gave it).
session::SessionRun session_run(const RunArgs& a, const session::RunResult& r, const std::string& backend);

// The comparison of two traced runs (indices into runs), its report the aligned table as JSON.
session::SessionComparison session_comparison(const std::vector<session::SessionRun>& runs, int a, int b);

// Writes the session: the model described from `model` (embedded when small), the environment
// (producer, command, device, threads). Prints "session: FILE" on success.
Status write_session(const std::string& path, const std::string& model, const std::string& command,
                     session::SessionData data);

}  // namespace ms::cli
