// ai.onnx.ml TreeEnsemble's attributes, parsed and checked once for both the schema
// (ops/preview.cpp) and the CPU kernel (backends/cpu/preview_ml.cpp).
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops::preview {

struct TreeEnsembleModel {
  enum Mode : uint8_t { Leq = 0, Lt = 1, Gte = 2, Gt = 3, Eq = 4, Neq = 5, Member = 6 };
  enum Aggregate : uint8_t { Average = 0, Sum = 1, Min = 2, Max = 3 };
  enum Post : uint8_t { None = 0, Softmax = 1, Logistic = 2, SoftmaxZero = 3, Probit = 4 };
  struct Node {
    double split = 0;
    int64_t feature = 0;
    Mode mode = Leq;
    bool missing_tracks_true = false;
    bool true_leaf = false, false_leaf = false;
    int64_t true_id = 0, false_id = 0;          // index into nodes or leaves
    size_t members_begin = 0, members_end = 0;  // BRANCH_MEMBER: its values in `members`
  };
  std::vector<Node> nodes;
  std::vector<double> members;
  std::vector<double> leaf_weights;
  std::vector<int64_t> leaf_targets;
  std::vector<int64_t> roots;
  int64_t n_targets = 0;
  int64_t max_feature = -1;  // largest feature id any node reads
  Aggregate aggregate = Sum;
  Post post = None;

  // A root whose both branches name the same leaf is a one-leaf tree.
  bool root_is_leaf(int64_t root) const {
    const Node& n = nodes[static_cast<size_t>(root)];
    return n.true_leaf && n.false_leaf && n.true_id == n.false_id;
  }
};

// Reads and checks the attributes (lengths agree, ids in range, known enums). False with `err`.
bool parse_tree_ensemble(const ir::Node& node, TreeEnsembleModel& m, std::string& err);

}  // namespace ms::ops::preview
