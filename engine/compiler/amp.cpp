#include "engine/compiler/amp.h"

#include <array>

namespace ms::compiler {

Expected<AmpLevel> parse_amp_level(const std::string& s) {
  if (s == "O0" || s == "o0" || s == "0") return AmpLevel::O0;
  if (s == "O1" || s == "o1" || s == "1") return AmpLevel::O1;
  if (s == "O2" || s == "o2" || s == "2") return AmpLevel::O2;
  if (s == "O3" || s == "o3" || s == "3") return AmpLevel::O3;
  return invalid_argument("amp level must be O0, O1, O2 or O3, got '" + s + "'");
}

const char* amp_level_name(AmpLevel l) {
  switch (l) {
    case AmpLevel::O0: return "O0";
    case AmpLevel::O1: return "O1";
    case AmpLevel::O2: return "O2";
    case AmpLevel::O3: return "O3";
  }
  return "?";
}

namespace {

template <size_t N> bool in(std::string_view op, const std::array<std::string_view, N>& list) {
  for (std::string_view s : list)
    if (s == op) return true;
  return false;
}

constexpr std::array<std::string_view, 4> kWhite{"Conv", "ConvTranspose", "MatMul", "Gemm"};
constexpr std::array<std::string_view, 3> kWhiteFused{"FusedConv", "FusedMatMul", "ConvGradWeight"};
constexpr std::array<std::string_view, 8> kBlack{
    "BatchNormalization",        "LayerNormalization",    "Softmax",           "LogSoftmax", "SoftmaxCrossEntropyLoss",
    "NegativeLogLikelihoodLoss", "InstanceNormalization", "GroupNormalization"};
// Control flow runs subgraphs typed for the original precision; Cast says its own type; the rest
// read only shapes or produce values whose type an attribute fixes, or (the quantization ops)
// convert between f32 and 8-bit values with f32 scales.
constexpr std::array<std::string_view, 15> kKeep{"If",
                                                 "Loop",
                                                 "Scan",
                                                 "Cast",
                                                 "CastLike",
                                                 "Shape",
                                                 "Size",
                                                 "Constant",
                                                 "ConstantOfShape",
                                                 "Range",
                                                 "EyeLike",
                                                 "RandomNormalLike",
                                                 "QuantizeLinear",
                                                 "DequantizeLinear",
                                                 "DynamicQuantizeLinear"};

}  // namespace

AmpClass amp_class(std::string_view op, std::string_view domain) {
  if (domain.empty() || domain == "ai.onnx") {
    if (in(op, kWhite)) return AmpClass::White;
    if (in(op, kBlack)) return AmpClass::Black;
    if (in(op, kKeep)) return AmpClass::Keep;
    return AmpClass::Grey;
  }
  if (domain == "ai.modescope") {
    if (in(op, kWhiteFused)) return AmpClass::White;
    if (op == "Print") return AmpClass::Keep;
    return AmpClass::Grey;
  }
  return AmpClass::Keep;  // unknown domains: their kernels may not take bf16
}

DType amp_compute_type(AmpClass c, AmpLevel level, DType low) {
  if (level == AmpLevel::O0 || c == AmpClass::Keep) return DType::Undefined;
  switch (c) {
    case AmpClass::White: return low;
    case AmpClass::Black: return level == AmpLevel::O3 ? low : DType::F32;
    case AmpClass::Grey: return level == AmpLevel::O1 ? DType::Undefined : low;
    case AmpClass::Keep: break;
  }
  return DType::Undefined;
}

bool amp_keeps_input(std::string_view op, size_t i) {
  if ((op == "Resize" || op == "Upsample") && i >= 1) return true;
  if (op == "Dropout" && i == 1) return true;
  return false;
}

}  // namespace ms::compiler
