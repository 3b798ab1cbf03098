// Profiled PyNative-vs-Graph comparison shared by `profile` and `compare`.
#pragma once

#include <string>

#include "app/cli/prepare.h"
#include "engine/compiler/options.h"
#include "engine/core/status.h"
#include "engine/runtime/executor.h"

namespace ms::cli {

// --jit-level / --disable as CompileOptions (the options' values are checked by CLI11).
compiler::CompileOptions profile_compile_options(const RunArgs& a);

// Runs both modes with the recorder and returns the aligned per-op table followed by the mode
// advisor's verdict, as text.
Expected<std::string> profiled_comparison_text(Prepared& prep, const RunArgs& a);

}  // namespace ms::cli
