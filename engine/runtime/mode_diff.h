// The node-by-node diff of the two modes. Every value Graph mode captured is aligned with the
// PyNative value it stands for through NodeIds and origins: a node the passes kept (same id) against
// itself, a node they made (a fusion, a folded BatchNorm) against its last origin in the original
// graph's order, otherwise a value of the same name. Each pair gets its largest absolute difference
// and that relative to the reference's largest magnitude; the first value past the tolerance, in the
// order Graph mode produced them, is where the two modes part.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/value_capture.h"

namespace ms::runtime {

struct ValueDiff {
  std::string value;  // the Graph-mode value
  std::string node, op;
  ir::NodeId node_id;     // its producer in the compiled graph
  std::string ref_value;  // the PyNative value it stands for ("" when none)
  std::string ref_node;
  ir::NodeId ref_node_id;
  std::string match;  // "same node" | "last origin" | "same name" | "" (no counterpart)
  std::string note;   // why it was not compared, or how (a reshaped counterpart)
  bool compared = false;
  double max_abs = 0;                // largest |graph - pynative|
  double max_rel = 0;                // max_abs over the largest |pynative| (max_abs when that is 0)
  int64_t nonfinite_mismatches = 0;  // elements where exactly one side is finite, or NaN against inf
  bool diverged = false;             // max_rel above the tolerance, or a non-finite mismatch
  size_t order = 0;                  // when Graph mode produced it
};

struct ModeDiff {
  std::vector<ValueDiff> values;  // in the order Graph mode produced them
  int first_divergence = -1;      // index into values
  double tol = 0;
  size_t compared = 0, diverged = 0;
  double max_rel = 0;           // over the compared values
  std::string summary() const;  // one line
};

// `pynative` and `graph`: ValueCapture::values() of a PyNative run of `original` and a Graph run of
// `compiled` on the same inputs, values kept.
ModeDiff diff_modes(const ir::Graph& original, const std::vector<CapturedValue>& pynative, const ir::Graph& compiled,
                    const std::vector<CapturedValue>& graph, double tol);

// Largest |a - b| over the largest |b| (|a - b| when b is all zeros), comparing element by element;
// shapes must hold the same number of elements. Counts positions where finiteness differs.
struct TensorDiff {
  double max_abs = 0, max_rel = 0;
  int64_t nonfinite_mismatches = 0;
};
TensorDiff diff_tensors(const Tensor& a, const Tensor& b);

}  // namespace ms::runtime
