// Shared by the RNN/GRU/LSTM and Scan schemas (ops/recurrent.cpp, ops/recurrent_scan.cpp), their CPU
// kernels (backends/cpu/recurrent*.cpp) and type inference: the attribute parsing all must agree on.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/schema.h"

namespace ms::ops::rnn {

// The activation functions the ONNX recurrent ops accept (names are matched case-insensitively).
enum class Act : uint8_t {
  Relu,
  Tanh,
  Sigmoid,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus
};

struct ActSpec {
  Act kind = Act::Tanh;
  float alpha = 0;
  float beta = 0;
};

// Activations per direction: RNN f; GRU f, g; LSTM f, g, h.
int activations_per_direction(const std::string& op_type);

// 1 for forward/reverse, 2 for bidirectional, 0 for anything else.
int num_directions(const ir::Node& n);

// The `per_dir * dirs` activations of the node (attribute `activations` or the op's defaults, with
// activation_alpha/activation_beta), direction-major. Returns an error message, empty when fine.
std::string parse_activations(const ir::Node& n, int per_dir, int dirs, std::vector<ActSpec>& out);

}  // namespace ms::ops::rnn

namespace ms::ops::scan {

// Scan's layout, read from its attributes and arity. Opset 8: inputs (sequence_lens?, states...,
// scans...) with a batch axis 0 and the sequence on axis 1. Opset 9+: (states..., scans...), each scan
// input iterated over its own axis and direction.
struct ScanParams {
  bool v8 = false;
  size_t first_state = 0;         // 1 in opset 8 (input 0 is sequence_lens)
  size_t states = 0;              // N
  size_t scans = 0;               // M
  size_t scan_outputs = 0;        // K
  std::vector<int64_t> in_axes;   // M axes (not yet normalized); all 1 in opset 8 (0 is the batch)
  std::vector<int64_t> in_dirs;   // M flags, 1 = reverse
  std::vector<int64_t> out_axes;  // K axes (not yet normalized)
  std::vector<int64_t> out_dirs;  // K flags, 1 = prepend
};

// Fills `p` from the node (which must carry a body graph); returns an error message, empty when fine.
std::string parse_scan(const ir::Node& n, int64_t opset, size_t num_inputs, size_t num_outputs, ScanParams& p);

Status infer_scan(InferContext& ctx);  // recurrent_scan.cpp

}  // namespace ms::ops::scan

namespace ms::ops {

// Scan body inputs the model left untyped get the types the Scan node's inputs imply; called by
// type inference (compiler/infer.cpp) before it infers the body.
void seed_scan_body(const ir::Node& n, int64_t opset, const ir::Graph& outer, ir::Graph& body);

}  // namespace ms::ops
