// Parameter math shared by the signal schemas (ops/signal.cpp) and the CPU signal kernels
// (backends/cpu/signal.cpp): DFT axis / length and STFT framing, kept in one place so inference and
// execution can never disagree. Dims of -1 and missing values mean "unknown" (Graph mode before the
// run); the kernels call the same functions with every value known.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops::signal {

// Longest transform, frame or window accepted (2^28 points; an FFT plan of a longer one would need
// tens of GiB of scratch).
constexpr int64_t kMaxSignalLength = int64_t{1} << 28;

// An optional scalar integer input: whether it was given, and its value when known.
struct ScalarArg {
  bool given = false;
  std::optional<int64_t> value;
};

struct DftSpec {
  int64_t axis = -1;    // normalized axis; -1 when the axis input's value is not known
  int64_t length = -1;  // the transform length (dft_length or its default); -1 when not known
  bool inverse = false;
  bool onesided = false;
};

// Resolves DFT's axis (attribute before opset 20, input 2 from opset 20) and dft_length (input 1)
// against the input dims. Returns false with `err` set on bad attributes or values.
bool resolve_dft(const ir::Node& node, int64_t opset, const std::vector<int64_t>& dims, const ScalarArg& axis,
                 const ScalarArg& length, DftSpec& s, std::string& err);
// Output dims: the axis becomes the transform length (floor(L/2)+1 for a one-sided forward DFT),
// the last dim 2 (complex) or 1 (real result of the inverse one-sided DFT).
std::vector<int64_t> dft_output_dims(const std::vector<int64_t>& dims, const DftSpec& s);

struct StftSpec {
  int64_t step = -1;
  int64_t frame_length = -1;
  int64_t frames = -1;
  int64_t bins = -1;  // frame_length / 2 + 1 when onesided, else frame_length
  bool onesided = true;
};
// STFT framing from the signal dims [batch, length, 1|2], frame_step (input 1), the window dims
// (input 2; nullptr when left out or of unknown rank) and frame_length (input 3).
bool resolve_stft(const ir::Node& node, const std::vector<int64_t>& signal, const ScalarArg& step,
                  const std::vector<int64_t>* window, bool window_given, const ScalarArg& frame_length, StftSpec& s,
                  std::string& err);

// The window ops' and MelWeightMatrix's `output_datatype`: a numeric dtype other than bool.
bool signal_output_dtype(const ir::Node& node, DType& out, std::string& err);

}  // namespace ms::ops::signal
