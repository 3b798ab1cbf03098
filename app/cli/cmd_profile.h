// Profiled PyNative-vs-Graph comparison shared by `profile` and `compare`.
#pragma once

#include <string>

#include "app/cli/prepare.h"
#include "engine/compiler/options.h"
#include "engine/core/status.h"
#include "engine/runtime/executor.h"
#include "profiler/analysis/compare.h"

namespace ms::cli {

// --jit-level / --disable as CompileOptions (the options' values are checked by CLI11).
compiler::CompileOptions profile_compile_options(const RunArgs& a);

// Runs both modes with the recorder and returns their aligned comparison (rows, summary, verdict).
Expected<prof::Comparison> profiled_comparison(Prepared& prep, const RunArgs& a);

// The aligned per-op table followed by the mode advisor's verdict, as text.
std::string comparison_text(const prof::Comparison& c);

}  // namespace ms::cli
