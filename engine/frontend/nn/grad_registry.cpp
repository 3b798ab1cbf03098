#include "engine/frontend/nn/grad.h"

#include <algorithm>

namespace ms::autodiff {

namespace F = nn::F;

Status GradContext::fail(const std::string& what) const {
  return invalid_argument("gradient of " + node.op_type + (node.name.empty() ? "" : " in '" + node.name + "'") + ": " +
                          what);
}

GradRegistry& GradRegistry::instance() {
  static GradRegistry* r = [] {
    auto* reg = new GradRegistry();
    register_elementwise_grads(*reg);
    register_nn_grads(*reg);
    register_norm_grads(*reg);
    register_tensor_grads(*reg);
    return reg;
  }();
  return *r;
}

void GradRegistry::add(const std::string& op_type, GradFn fn, const std::string& domain) {
  rules_.emplace_back(domain + ":" + op_type, std::move(fn));
}

const GradFn* GradRegistry::find(const std::string& op_type, const std::string& domain) const {
  const std::string key = (domain == "ai.onnx" ? std::string() : domain) + ":" + op_type;
  for (const auto& [k, fn] : rules_)
    if (k == key) return &fn;
  return nullptr;
}

std::vector<std::string> GradRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [k, fn] : rules_) out.push_back(k.substr(k.find(':') + 1));
  std::sort(out.begin(), out.end());
  return out;
}

Var reduce_to(const Var& g, const Shape& shape) {
  if (!g.ok()) return g;
  const Shape gs = g.shape();
  if (gs == shape) return g;
  const int64_t gr = static_cast<int64_t>(gs.size()), r = static_cast<int64_t>(shape.size());
  if (gr < r)
    return Var::failed(internal_error("reduce_to: gradient " + shape_to_string(gs) + " has lower rank than " +
                                      shape_to_string(shape)));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < gr; ++i) {
    const int64_t j = i - (gr - r);
    if (j < 0 || (shape[static_cast<size_t>(j)] == 1 && gs[static_cast<size_t>(i)] != 1)) axes.push_back(i);
  }
  Var s = axes.empty() ? g : sum_keepdims(g, axes);
  return s.shape() == shape ? s : F::reshape(s, shape);
}

Var sum_keepdims(const Var& x, const std::vector<int64_t>& axes) {
  return F::op("ReduceSum", {x, F::ints(axes)}, {{"keepdims", int64_t{1}}});
}

Var full(double value, DType dtype, const Shape& shape) {
  Tensor t = Tensor::empty(dtype, shape);
  const bool ok = visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, double>)
        d[i] = value;
      else
        d[i] = static_cast<T>(static_cast<float>(value));
    }
  });
  if (!ok) return Var::failed(unsupported(std::string("constant of dtype ") + std::string(dtype_name(dtype))));
  return F::constant(t);
}

Var zeros(DType dtype, const Shape& shape) { return F::constant(Tensor::zeros(dtype, shape)); }

Var scalar_like(double v, const Var& like) { return F::scalar(v, like.ok() ? like.dtype() : DType::F32); }

Var cast_like(const Var& mask, const Var& like) { return F::cast(mask, like.dtype()); }

Expected<std::vector<int64_t>> const_ints(const Var& v, const std::string& what) {
  if (!v.defined()) return std::vector<int64_t>{};
  if (!v.is_concrete()) return unsupported(what + " must be a constant to differentiate (it is computed in the graph)");
  return v.impl()->value.to_int_vector();
}

}  // namespace ms::autodiff
