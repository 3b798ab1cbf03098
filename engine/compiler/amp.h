// Mixed precision (AMP) levels and the op lists they share, as MindSpore users know them:
//   O0  fp32, nothing changes
//   O1  the white list (Conv, ConvTranspose, MatMul, Gemm and their fused forms) computes in bf16:
//       inputs cast to bf16, outputs back to f32
//   O2  the network in bf16 except the black list (norms, softmax, losses), kept f32
//   O3  everything in bf16
// Used by the graph compiler's amp-cast pass (compiled graphs) and by the builder API's autocast
// (PyNative ops and traced modules), so both modes make the same choices.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/dtype.h"
#include "engine/core/status.h"

namespace ms::compiler {

enum class AmpLevel { O0, O1, O2, O3 };

Expected<AmpLevel> parse_amp_level(const std::string& s);  // "O0" .. "O3"
const char* amp_level_name(AmpLevel l);

// The low-precision type AMP computes in on the CPU (AVX-512 BF16; no fp16 arithmetic there).
inline constexpr DType kAmpLowType = DType::BF16;

enum class AmpClass {
  White,  // bf16 from O1 on (the matrix products)
  Black,  // f32 at O1 and O2 (numerically sensitive: statistics, exponentials over a row, losses)
  Keep,   // never cast (control flow, explicit casts, ops that read only shapes)
  Grey,   // follows the level: f32 at O1, bf16 at O2 and O3
};
AmpClass amp_class(std::string_view op_type, std::string_view domain);

// The precision a node of this class computes in at `level` (F32, `low`, or Undefined: leave its
// inputs as they are). `low` is bf16, or f16 on a device (inference with --precision fp16).
DType amp_compute_type(AmpClass c, AmpLevel level, DType low = kAmpLowType);

// Float inputs that are not data (Resize's roi/scales, Dropout's ratio): never cast.
bool amp_keeps_input(std::string_view op_type, size_t input_index);

}  // namespace ms::compiler
