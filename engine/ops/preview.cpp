// Schemas of the non-default ONNX domains: ai.onnx.preview.training (Adagrad, Adam, Momentum) and
// the numeric ai.onnx.ml ops (ArrayFeatureExtractor, Binarizer, TreeEnsemble).
#include <algorithm>
#include <cmath>

#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"
#include "engine/ops/preview_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::ops {

namespace preview {

using std::to_string;

namespace {

constexpr const char* kTraining = "ai.onnx.preview.training";
constexpr const char* kMl = "ai.onnx.ml";

// ---- TreeEnsemble attributes ----

bool tensor_attr(const ir::Node& node, const char* name, bool required, std::vector<double>& out, std::string& err) {
  const Tensor* t = node.attr_tensor(name);
  if (!t) {
    if (required) err = std::string("attribute '") + name + "' (a tensor) is required";
    return !required;
  }
  if (!is_numeric(t->dtype()) || !t->device().is_cpu()) {
    err = std::string("attribute '") + name + "' must be a numeric tensor";
    return false;
  }
  out.resize(static_cast<size_t>(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i) out[static_cast<size_t>(i)] = t->at_double(i);
  return true;
}

bool ints_attr(const ir::Node& node, const char* name, size_t n, std::vector<int64_t>& out, std::string& err) {
  if (!node.has_attr(name)) {
    err = std::string("attribute '") + name + "' is required";
    return false;
  }
  out = node.attr_ints(name);
  if (n != SIZE_MAX && out.size() != n) {
    err = std::string("attribute '") + name + "' has " + to_string(out.size()) + " values, nodes_featureids has " +
          to_string(n);
    return false;
  }
  return true;
}

// BRANCH_MEMBER nodes take NaN-terminated runs of membership_values, in node order.
bool assign_members(const ir::Node& node, TreeEnsembleModel& m, std::string& err) {
  std::vector<double> values;
  if (!tensor_attr(node, "membership_values", false, values, err)) return false;
  size_t pos = 0;
  for (auto& n : m.nodes) {
    if (n.mode != TreeEnsembleModel::Member) continue;
    n.members_begin = m.members.size();
    while (pos < values.size() && !std::isnan(values[pos])) m.members.push_back(values[pos++]);
    if (pos == values.size()) {
      err = "membership_values has fewer NaN-terminated sets than there are BRANCH_MEMBER nodes";
      return false;
    }
    ++pos;  // the NaN
    n.members_end = m.members.size();
    std::sort(m.members.begin() + static_cast<std::ptrdiff_t>(n.members_begin), m.members.end());
  }
  return true;
}

bool check_branch(bool leaf, int64_t id, size_t nodes, size_t leaves, size_t i, std::string& err) {
  const size_t limit = leaf ? leaves : nodes;
  if (id < 0 || static_cast<size_t>(id) >= limit) {
    err = "node " + to_string(i) + " branches to " + (leaf ? "leaf " : "node ") + to_string(id) +
          ", out of range [0, " + to_string(limit) + ")";
    return false;
  }
  return true;
}

bool parse_nodes(const ir::Node& node, TreeEnsembleModel& m, std::string& err) {
  std::vector<int64_t> feat, tid, fid, tleaf, fleaf, missing;
  std::vector<double> splits, modes;
  if (!ints_attr(node, "nodes_featureids", SIZE_MAX, feat, err)) return false;
  const size_t n = feat.size();
  if (!ints_attr(node, "nodes_truenodeids", n, tid, err) || !ints_attr(node, "nodes_falsenodeids", n, fid, err) ||
      !ints_attr(node, "nodes_trueleafs", n, tleaf, err) || !ints_attr(node, "nodes_falseleafs", n, fleaf, err) ||
      !tensor_attr(node, "nodes_splits", true, splits, err) || !tensor_attr(node, "nodes_modes", true, modes, err))
    return false;
  missing = node.attr_ints("nodes_missing_value_tracks_true", std::vector<int64_t>(n, 0));
  if (splits.size() != n || modes.size() != n || missing.size() != n) {
    err = "attributes nodes_splits, nodes_modes and nodes_missing_value_tracks_true must have one value per node (" +
          to_string(n) + ")";
    return false;
  }
  m.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    auto& nd = m.nodes[i];
    if (modes[i] < 0 || modes[i] > 6 || feat[i] < 0) {
      err = "node " + to_string(i) + " has mode " + to_string(modes[i]) + " / feature " + to_string(feat[i]) +
            " (modes are 0..6, features >= 0)";
      return false;
    }
    nd = {splits[i],       feat[i],       static_cast<TreeEnsembleModel::Mode>(modes[i]),
          missing[i] != 0, tleaf[i] != 0, fleaf[i] != 0,
          tid[i],          fid[i]};
    m.max_feature = std::max(m.max_feature, feat[i]);
  }
  return assign_members(node, m, err);
}

bool parse_leaves_and_roots(const ir::Node& node, TreeEnsembleModel& m, std::string& err) {
  if (!tensor_attr(node, "leaf_weights", true, m.leaf_weights, err)) return false;
  if (!node.has_attr("leaf_targetids") || !node.has_attr("tree_roots")) {
    err = "attributes 'leaf_targetids' and 'tree_roots' are required";
    return false;
  }
  m.leaf_targets = node.attr_ints("leaf_targetids");
  m.roots = node.attr_ints("tree_roots");
  if (m.leaf_targets.size() != m.leaf_weights.size()) {
    err = "leaf_targetids has " + to_string(m.leaf_targets.size()) + " values, leaf_weights " +
          to_string(m.leaf_weights.size());
    return false;
  }
  for (int64_t t : m.leaf_targets)
    if (t < 0 || t >= m.n_targets) {
      err = "leaf target id " + to_string(t) + " is out of range [0, n_targets=" + to_string(m.n_targets) + ")";
      return false;
    }
  for (int64_t r : m.roots)
    if (r < 0 || static_cast<size_t>(r) >= m.nodes.size()) {
      err = "tree root " + to_string(r) + " is out of range [0, " + to_string(m.nodes.size()) + ")";
      return false;
    }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const auto& nd = m.nodes[i];
    if (!check_branch(nd.true_leaf, nd.true_id, m.nodes.size(), m.leaf_weights.size(), i, err) ||
        !check_branch(nd.false_leaf, nd.false_id, m.nodes.size(), m.leaf_weights.size(), i, err))
      return false;
  }
  return true;
}

}  // namespace

bool parse_tree_ensemble(const ir::Node& node, TreeEnsembleModel& m, std::string& err) {
  m.n_targets = node.attr_int("n_targets", 0);
  if (m.n_targets < 1) {
    err = "attribute 'n_targets' must be >= 1, got " + to_string(m.n_targets);
    return false;
  }
  const int64_t agg = node.attr_int("aggregate_function", 1), post = node.attr_int("post_transform", 0);
  if (agg < 0 || agg > 3 || post < 0 || post > 4) {
    err = "aggregate_function must be 0..3 and post_transform 0..4, got " + to_string(agg) + " and " + to_string(post);
    return false;
  }
  m.aggregate = static_cast<TreeEnsembleModel::Aggregate>(agg);
  m.post = static_cast<TreeEnsembleModel::Post>(post);
  return parse_nodes(node, m, err) && parse_leaves_and_roots(node, m, err);
}

namespace {

// ---- Training optimizers: R, T, then `groups` runs of n tensors; `out_groups` runs of n outputs ----

Status require_scalar(const InferContext& ctx, size_t i, const char* name) {
  const auto* d = ctx.dims(i);
  if (d && !(d->empty() || (d->size() == 1 && (*d)[0] == 1)))
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be a scalar, got " + shape_to_string(*d));
  return Status::ok();
}

Status infer_optimizer(InferContext& ctx, size_t groups, size_t out_groups) {
  const size_t tensors = ctx.num_inputs() - 2;
  if (tensors % groups != 0)
    return ctx.fail("expects R, T and " + to_string(groups) + " equal runs of tensors, got " + to_string(tensors) +
                    " tensors after T");
  const size_t n = tensors / groups;
  if (ctx.node.outputs.size() != out_groups * n)
    return ctx.fail("has " + to_string(ctx.node.outputs.size()) + " outputs, expected " + to_string(out_groups * n) +
                    " (" + to_string(out_groups) + " per optimized tensor)");
  const DType r = ctx.in(0).dtype;
  if (r != DType::F32 && r != DType::F64)
    return ctx.fail("input 0 (R) must be f32 or f64, got " + std::string(dtype_name(r)));
  MS_RETURN_IF_ERROR(require_scalar(ctx, 0, "R"));
  if (ctx.in(1).dtype != DType::I64)
    return ctx.fail("input 1 (T) must be i64, got " + std::string(dtype_name(ctx.in(1).dtype)));
  MS_RETURN_IF_ERROR(require_scalar(ctx, 1, "T"));
  for (size_t j = 0; j < n; ++j) {
    const ir::ValueType& x = ctx.in(2 + j);
    if (x.dtype != DType::F32 && x.dtype != DType::F64)
      return ctx.fail("input " + to_string(2 + j) + " (X) must be f32 or f64, got " + std::string(dtype_name(x.dtype)));
    for (size_t g = 1; g < groups; ++g) {
      const ir::ValueType& t = ctx.in(2 + g * n + j);
      bool differ = t.dtype != x.dtype;
      if (t.dims && x.dims) {
        differ |= t.dims->size() != x.dims->size();
        for (size_t k = 0; !differ && k < t.dims->size(); ++k) differ |= nn::dims_conflict((*t.dims)[k], (*x.dims)[k]);
      }
      if (differ)
        return ctx.fail("input " + to_string(2 + g * n + j) + " is " + t.to_string() +
                        " but the tensor it updates is " + x.to_string());
    }
    for (size_t g = 0; g < out_groups; ++g) ctx.outputs[g * n + j] = x;
  }
  return Status::ok();
}

Status infer_momentum(InferContext& ctx) {
  for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!ctx.node.has_attr(a)) return ctx.fail(std::string("attribute '") + a + "' is required");
  const std::string mode = ctx.node.attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return ctx.fail("attribute 'mode' must be \"standard\" or \"nesterov\", got \"" + mode + "\"");
  return infer_optimizer(ctx, 3, 2);
}

// ---- ai.onnx.ml ----

Status require_ml_numeric(const InferContext& ctx, size_t i, const char* name, bool allow_int) {
  const DType t = ctx.in(i).dtype;
  if (t == DType::String) return ctx.fail(std::string("input ") + name + ": string tensors are not supported");
  const bool ok = t == DType::F32 || t == DType::F64 || (allow_int && (t == DType::I32 || t == DType::I64));
  if (!ok)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be f32, f64" + (allow_int ? ", i32 or i64" : "") +
                    ", got " + std::string(dtype_name(t)));
  return Status::ok();
}

Status infer_array_feature_extractor(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_ml_numeric(ctx, 0, "X", true));
  if (ctx.in(1).dtype != DType::I64)
    return ctx.fail("input 1 (Y) must be i64, got " + std::string(dtype_name(ctx.in(1).dtype)));
  const auto* x = ctx.dims(0);
  if (!x) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  if (x->empty()) return ctx.fail("input 0 (X) must have rank >= 1");
  const int64_t k = static_numel(ctx.in(1));
  if (auto idx = tensor::known_ints(ctx, 1); idx && x->back() >= 0)
    for (int64_t i : *idx)
      if (i < 0 || i >= x->back())
        return ctx.fail("index " + to_string(i) + " in Y is out of range [0, " + to_string(x->back()) + ")");
  std::vector<int64_t> out = x->size() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>(x->begin(), x->end() - 1);
  out.push_back(k);
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

Status infer_binarizer(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_ml_numeric(ctx, 0, "X", true));
  ctx.outputs[0] = ctx.in(0);
  return Status::ok();
}

Status infer_tree_ensemble(InferContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (t != DType::F32 && t != DType::F64 && t != DType::F16)
    return ctx.fail("input 0 (X) must be f32, f64 or f16, got " + std::string(dtype_name(t)));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* x, nn::require_rank(ctx, 0, "X", 2, 2));
  TreeEnsembleModel m;
  std::string err;
  if (!parse_tree_ensemble(ctx.node, m, err)) return ctx.fail(err);
  if (x && (*x)[1] >= 0 && m.max_feature >= (*x)[1])
    return ctx.fail("a node reads feature " + to_string(m.max_feature) + " but X has " + to_string((*x)[1]));
  ctx.set_output(0, t, {x ? (*x)[0] : -1, m.n_targets});
  return Status::ok();
}

OpSchema domain_schema(std::string op, const char* domain, int since, int min_in, int max_in, int min_out, int max_out,
                       std::function<Status(InferContext&)> infer, double flops) {
  OpSchema s = nn::make_schema(std::move(op), since, min_in, max_in, min_out, max_out, OpCategory::Other,
                               std::move(infer), [flops](const CostContext& c) { return nn::io_cost(c, flops); });
  s.domain = domain;
  return s;
}

}  // namespace
}  // namespace preview

void register_preview_ops(Registry& r) {
  using preview::domain_schema;
  using preview::kMl;
  using preview::kTraining;
  r.add(domain_schema(
      "Adagrad", kTraining, 1, 5, -1, 2, -1, [](InferContext& c) { return preview::infer_optimizer(c, 3, 2); }, 8));
  r.add(domain_schema(
      "Adam", kTraining, 1, 6, -1, 3, -1, [](InferContext& c) { return preview::infer_optimizer(c, 4, 3); }, 12));
  r.add(domain_schema("Momentum", kTraining, 1, 5, -1, 2, -1, preview::infer_momentum, 6));
  r.add(domain_schema("ArrayFeatureExtractor", kMl, 1, 2, 2, 1, 1, preview::infer_array_feature_extractor, 0));
  r.add(domain_schema("Binarizer", kMl, 1, 1, 1, 1, 1, preview::infer_binarizer, 1));
  r.add(domain_schema("TreeEnsemble", kMl, 5, 1, 1, 1, 1, preview::infer_tree_ensemble, 20));
}

}  // namespace ms::ops
