// RunArgs' --jit-level / --disable as the engine's CompileOptions (shared by run, compare, bench,
// passes and conformance).
#pragma once

#include <string>
#include <vector>

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

// --precision: "f32" (nothing changes), or "bf16": Graph mode computes in bf16 but for the AMP black
// list (normalizations, softmax, reductions and losses stay f32: AMP level O2, compiler/amp.h), on a
// backend with native bf16 arithmetic only. Elsewhere bf16 would be emulated, slower than f32, so it
// is refused with the reason. PyNative runs stay f32: they are the reference the deviation is from.
inline compiler::AmpLevel precision_amp(const std::string& precision) {
  return precision == "bf16" ? compiler::AmpLevel::O2 : compiler::AmpLevel::O0;
}
inline Status apply_precision(compiler::CompileOptions& o, const std::string& precision,
                              const runtime::Backend& backend) {
  if (precision.empty() || precision == "f32") return Status::ok();
  if (precision != "bf16")
    return Status::error(ErrorCode::InvalidArgument, "--precision '" + precision + "': expected f32 or bf16");
  if (!backend.native_bf16())
    return Status::error(ErrorCode::Unsupported, "--precision bf16: " + backend.description() +
                                                     " has no native bf16 arithmetic (AVX-512-BF16 or AMX); "
                                                     "run in f32");
  o.amp = precision_amp(precision);
  return Status::ok();
}

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
