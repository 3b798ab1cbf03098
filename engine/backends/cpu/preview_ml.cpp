// CPU kernels of the numeric ai.onnx.ml ops: ArrayFeatureExtractor, Binarizer, TreeEnsemble.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/backends/cpu/preview_internal.h"
#include "engine/ops/preview_internal.h"

namespace ms::cpu::preview {
namespace {

using ops::preview::TreeEnsembleModel;
using std::to_string;
constexpr const char* kMl = "ai.onnx.ml";

bool ml_numeric(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::I32 || t == DType::I64; }

// out[..., i] = X[..., Y[i]] over the last axis; a rank-1 X is one row ([1, k] out).
Status array_feature_extractor_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (!ml_numeric(x.dtype()) || x.rank() < 1)
    return ctx.fail("input 0 (X) must be an f32/f64/i32/i64 tensor of rank >= 1, got " +
                    std::string(dtype_name(x.dtype())) + shape_to_string(x.shape()));
  if (y.dtype() != DType::I64) return ctx.fail("input 1 (Y) must be i64, got " + std::string(dtype_name(y.dtype())));
  const int64_t d = x.dim(-1), k = y.numel();
  const int64_t* idx = y.data<int64_t>();
  for (int64_t i = 0; i < k; ++i)
    if (idx[i] < 0 || idx[i] >= d)
      return ctx.fail("index " + to_string(idx[i]) + " in Y is out of range [0, " + to_string(d) + ")");
  Shape shape = x.rank() == 1 ? Shape{1} : Shape(x.shape().begin(), x.shape().end() - 1);
  shape.push_back(k);
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), shape));
  const size_t es = dtype_size(x.dtype());
  const int64_t rows = k == 0 ? 0 : numel(shape) / k;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out->raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i)
      std::memcpy(dst + static_cast<size_t>(r * k + i) * es, src + static_cast<size_t>(r * d + idx[i]) * es, es);
  return Status::ok();
}

Status binarizer_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ml_numeric(x.dtype()))
    return ctx.fail("input 0 (X) must be f32, f64, i32 or i64, got " + std::string(dtype_name(x.dtype())));
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), x.shape()));
  const double threshold = ctx.node().attr_float("threshold", 0.f);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) {
      const T* in = x.data<T>();
      T* o = out->data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<double>(in[i]) > threshold ? T(1) : T(0);
    }
  });
  return Status::ok();
}

// ---- TreeEnsemble ----

bool goes_true(const TreeEnsembleModel& m, const TreeEnsembleModel::Node& n, double v) {
  if (n.missing_tracks_true && std::isnan(v)) return true;
  switch (n.mode) {
    case TreeEnsembleModel::Leq: return v <= n.split;
    case TreeEnsembleModel::Lt: return v < n.split;
    case TreeEnsembleModel::Gte: return v >= n.split;
    case TreeEnsembleModel::Gt: return v > n.split;
    case TreeEnsembleModel::Eq: return v == n.split;
    case TreeEnsembleModel::Neq: return v != n.split;
    case TreeEnsembleModel::Member: {
      const auto b = m.members.begin();
      return std::binary_search(b + static_cast<std::ptrdiff_t>(n.members_begin),
                                b + static_cast<std::ptrdiff_t>(n.members_end), v);
    }
  }
  return false;
}

// The leaf the sample `x` reaches from `root`; -1 when the walk revisits more nodes than exist
// (a cycle in the node ids).
int64_t find_leaf(const TreeEnsembleModel& m, int64_t root, const double* x) {
  if (m.root_is_leaf(root)) return m.nodes[static_cast<size_t>(root)].true_id;
  int64_t id = root;
  for (size_t steps = 0; steps <= m.nodes.size(); ++steps) {
    const auto& n = m.nodes[static_cast<size_t>(id)];
    const bool t = goes_true(m, n, x[n.feature]);
    const bool leaf = t ? n.true_leaf : n.false_leaf;
    id = t ? n.true_id : n.false_id;
    if (leaf) return id;
  }
  return -1;
}

void post_transform(TreeEnsembleModel::Post post, std::vector<double>& v) {
  if (post == TreeEnsembleModel::Logistic) {
    for (double& a : v) a = 1.0 / (1.0 + std::exp(-a));
    return;
  }
  if (post != TreeEnsembleModel::Softmax && post != TreeEnsembleModel::SoftmaxZero) return;
  const bool skip_zero = post == TreeEnsembleModel::SoftmaxZero;  // zeros stay zero
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (double a : v)
    if (!(skip_zero && a == 0)) mx = std::max(mx, a);
  for (double& a : v)
    if (!(skip_zero && a == 0)) sum += (a = std::exp(a - mx));
  for (double& a : v)
    if (sum > 0) a /= sum;
}

double type_max(DType t) {
  if (t == DType::F16) return 65504.0;
  return t == DType::F32 ? static_cast<double>(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
}

// Scores of one sample: each tree's leaf weight aggregated into its target, then post-transformed.
Status score_sample(runtime::KernelContext& ctx, const TreeEnsembleModel& m, const double* x, DType dt,
                    std::vector<double>& acc) {
  const double init = m.aggregate == TreeEnsembleModel::Min   ? type_max(dt)
                      : m.aggregate == TreeEnsembleModel::Max ? -type_max(dt)
                                                              : 0.0;
  std::fill(acc.begin(), acc.end(), init);
  const auto trees = static_cast<double>(m.roots.size());
  for (int64_t root : m.roots) {
    const int64_t leaf = find_leaf(m, root, x);
    if (leaf < 0) return ctx.fail("the tree at root " + to_string(root) + " has a cycle in its node ids");
    const double w = m.leaf_weights[static_cast<size_t>(leaf)];
    double& a = acc[static_cast<size_t>(m.leaf_targets[static_cast<size_t>(leaf)])];
    switch (m.aggregate) {
      case TreeEnsembleModel::Sum: a += w; break;
      case TreeEnsembleModel::Average: a += w / trees; break;
      case TreeEnsembleModel::Min: a = std::min(a, w); break;
      case TreeEnsembleModel::Max: a = std::max(a, w); break;
    }
  }
  post_transform(m.post, acc);
  return Status::ok();
}

template <class T> double widen(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}

template <class T> T narrow_to(double v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return T(static_cast<float>(v));
}

template <class T>
Status run_tree_ensemble(runtime::KernelContext& ctx, const TreeEnsembleModel& m, const Tensor& x, Tensor& y) {
  const int64_t rows = x.dim(0), features = x.dim(1);
  std::vector<double> row(static_cast<size_t>(features)), acc(static_cast<size_t>(m.n_targets));
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < features; ++f) row[static_cast<size_t>(f)] = widen(xp[r * features + f]);
    MS_RETURN_IF_ERROR(score_sample(ctx, m, row.data(), x.dtype(), acc));
    for (int64_t t = 0; t < m.n_targets; ++t) yp[r * m.n_targets + t] = narrow_to<T>(acc[static_cast<size_t>(t)]);
  }
  return Status::ok();
}

Status tree_ensemble_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if ((x.dtype() != DType::F32 && x.dtype() != DType::F64 && x.dtype() != DType::F16) || x.rank() != 2)
    return ctx.fail("input 0 (X) must be an f32/f64/f16 matrix [N, F], got " + std::string(dtype_name(x.dtype())) +
                    shape_to_string(x.shape()));
  TreeEnsembleModel m;
  std::string err;
  if (!ops::preview::parse_tree_ensemble(ctx.node(), m, err)) return ctx.fail(err);
  if (m.max_feature >= x.dim(1))
    return ctx.fail("a node reads feature " + to_string(m.max_feature) + " but X has " + to_string(x.dim(1)));
  if (m.post == TreeEnsembleModel::Probit) return ctx.unsupported_case("post_transform PROBIT is not supported");
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), {x.dim(0), m.n_targets}));
  if (x.dtype() == DType::F32) return run_tree_ensemble<float>(ctx, m, x, *y);
  if (x.dtype() == DType::F64) return run_tree_ensemble<double>(ctx, m, x, *y);
  return run_tree_ensemble<f16>(ctx, m, x, *y);
}

}  // namespace

void register_ml_kernels(runtime::KernelRegistry& r) {
  r.add("ArrayFeatureExtractor", array_feature_extractor_kernel, kMl);
  r.add("Binarizer", binarizer_kernel, kMl);
  r.add("TreeEnsemble", tree_ensemble_kernel, kMl);
}

}  // namespace ms::cpu::preview
