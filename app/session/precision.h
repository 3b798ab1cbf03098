// The precision a Graph run computes in, as the CLI's --precision and the app's Run panel ask for it:
// "f32" (nothing changes), or "bf16": the AMP O2 lists (compiler/amp.h; normalizations, softmax,
// reductions and losses stay f32), on a backend with native bf16 arithmetic only. Elsewhere bf16
// would be emulated, slower than f32, so it is refused with the reason. PyNative runs stay f32: they
// are the reference the deviation (figures.h, deviation) is measured from.
#pragma once

#include <string>

#include "engine/compiler/options.h"
#include "engine/core/status.h"
#include "engine/runtime/backend.h"

namespace ms::session {

inline compiler::AmpLevel precision_amp(const std::string& precision) {
  return precision == "bf16" ? compiler::AmpLevel::O2 : compiler::AmpLevel::O0;
}

inline Status apply_precision(compiler::CompileOptions& o, const std::string& precision,
                              const runtime::Backend& backend) {
  if (precision.empty() || precision == "f32") return Status::ok();
  if (precision != "bf16")
    return Status::error(ErrorCode::InvalidArgument, "precision '" + precision + "': expected f32 or bf16");
  if (!backend.native_bf16())
    return Status::error(ErrorCode::Unsupported, "bf16 precision: " + backend.description() +
                                                     " has no native bf16 arithmetic (AVX-512-BF16 or AMX); "
                                                     "run in f32");
  o.amp = precision_amp(precision);
  o.amp_input_layers_f32 = true;
  return Status::ok();
}

}  // namespace ms::session
