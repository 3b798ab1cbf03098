// The precision a Graph run computes in, as the CLI's --precision and the app's Run panel ask for it:
// "f32" (nothing changes), "bf16": the AMP O2 lists (compiler/amp.h; normalizations, softmax,
// reductions and losses stay f32, and so do the sums a normalization centres: amp_cast.cpp), on a backend with native
// bf16 arithmetic only (elsewhere bf16 would be emulated, slower than f32, so it is refused with the reason), or
// "fp16": the same lists in f16, on a device (the CPU kernels have no f16 arithmetic). PyNative runs stay f32: they are
// the reference the deviation (figures.h, deviation) is measured from.
#pragma once

#include <string>

#include "engine/compiler/options.h"
#include "engine/core/status.h"
#include "engine/runtime/backend.h"

namespace ms::session {

// The compile options of a precision, unchecked: bf16 is AMP O2 with the layers that read the
// model's inputs kept f32 (the raw input is never rounded).
inline void set_precision(compiler::CompileOptions& o, const std::string& precision) {
  const bool low = precision == "bf16" || precision == "fp16";
  o.amp = low ? compiler::AmpLevel::O2 : compiler::AmpLevel::O0;
  o.amp_input_layers_f32 = low;
  o.amp_type = precision == "fp16" ? DType::F16 : DType::BF16;
}

// A precision other than f32 (the deviation from f32 is reported).
inline bool is_low_precision(const std::string& precision) { return precision == "bf16" || precision == "fp16"; }

inline Status apply_precision(compiler::CompileOptions& o, const std::string& precision,
                              const runtime::Backend& backend) {
  if (precision.empty() || precision == "f32") return Status::ok();
  if (precision != "bf16" && precision != "fp16")
    return Status::error(ErrorCode::InvalidArgument, "precision '" + precision + "': expected f32, bf16 or fp16");
  if (precision == "fp16" && backend.device().is_cpu())
    return Status::error(ErrorCode::Unsupported, "fp16 precision: " + backend.description() +
                                                     " has no f16 kernels (fp16 runs on a CUDA device); run in f32, or "
                                                     "bf16 where the CPU has it");
  if (precision == "bf16" && !backend.native_bf16())
    return Status::error(ErrorCode::Unsupported, "bf16 precision: " + backend.description() +
                                                     " has no native bf16 arithmetic (AVX-512-BF16 or AMX); "
                                                     "run in f32");
  set_precision(o, precision);
  return Status::ok();
}

}  // namespace ms::session
