// RunArgs' --jit-level / --disable as the engine's CompileOptions (shared by run, compare, bench,
// passes and conformance).
#pragma once

#include <string>
#include <vector>

#include "app/session/precision.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/executor.h"

namespace ms::cli {

// --jit-level and --disable: an unknown --disable name is an error that lists the valid ones; the
// closing stages (plan-memory, branch-schedule) are disabled by name too (compiler/compile.h).
inline Expected<compiler::CompileOptions> compile_options(const std::string& jit_level,
                                                          const std::vector<std::string>& disabled) {
  auto level = compiler::parse_jit_level(jit_level);
  if (!level) return std::move(level).take_status();
  MS_RETURN_IF_ERROR(compiler::check_pass_names(disabled));
  compiler::CompileOptions o;
  o.jit_level = *level;
  o.disabled_passes = disabled;
  return o;
}

// --precision (session/precision.h, shared with the app's Run panel).
using session::apply_precision;
using session::set_precision;

// Minimal JSON string escaping for reports.
inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ms::cli
