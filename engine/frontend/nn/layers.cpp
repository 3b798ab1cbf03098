#include "engine/frontend/nn/layers.h"

#include <cmath>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/init.h"
#include "engine/frontend/nn/trace.h"

namespace ms::nn {

namespace {
std::string type_str(const Var& x) { return std::string(dtype_name(x.dtype())) + shape_to_string(x.shape()); }
}  // namespace

Var layer_error(const Module& m, const std::string& layer, const Var& x, const std::string& what) {
  std::string path = current_path();
  if (path.empty()) path = m.name().empty() ? "<top>" : m.name();
  return Var::failed(invalid_argument("module '" + path + "' (" + layer + "): input " + type_str(x) + " " + what));
}

Dense::Dense(int64_t in, int64_t out, bool bias) : in_features(in), out_features(out), has_bias(bias) {
  register_parameter("weight", kaiming_uniform({out, in}, in));
  if (bias) register_parameter("bias", kaiming_uniform({out}, in));
}

Var Dense::forward(const Var& x) {
  if (!x.ok()) return x;
  const std::string layer = "Dense " + std::to_string(in_features) + "->" + std::to_string(out_features);
  if (x.rank() < 2) return layer_error(*this, layer, x, "must have rank >= 2");
  if (x.dim(-1) != in_features)
    return layer_error(*this, layer, x,
                       "has " + std::to_string(x.dim(-1)) + " features, expected " + std::to_string(in_features));
  return F::linear(x, param("weight"), has_bias ? param("bias") : Var());
}

Conv2d::Conv2d(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t g, bool bias, int64_t d)
    : in_channels(in), out_channels(out), kernel(k), stride(s), padding(p), groups(g), dilation(d), has_bias(bias) {
  const int64_t fan_in = (g > 0 ? in / g : in) * k * k;
  register_parameter("weight", kaiming_uniform({out, g > 0 ? in / g : in, k, k}, fan_in));
  if (bias) register_parameter("bias", kaiming_uniform({out}, fan_in));
}

Var Conv2d::forward(const Var& x) {
  if (!x.ok()) return x;
  const std::string layer =
      "Conv2d " + std::to_string(in_channels) + "->" + std::to_string(out_channels) + " k" + std::to_string(kernel);
  if (x.rank() != 4) return layer_error(*this, layer, x, "must be NCHW (rank 4)");
  if (x.dim(1) != in_channels)
    return layer_error(*this, layer, x,
                       "has " + std::to_string(x.dim(1)) + " channels, expected " + std::to_string(in_channels));
  return F::conv2d(x, param("weight"), has_bias ? param("bias") : Var(), {stride, stride}, {padding, padding},
                   {dilation, dilation}, groups);
}

BatchNorm2d::BatchNorm2d(int64_t c, float e) : channels(c), eps(e) {
  register_parameter("weight", filled({c}, 1.0f));
  register_parameter("bias", filled({c}, 0.0f));
  register_buffer("running_mean", filled({c}, 0.0f));
  register_buffer("running_var", filled({c}, 1.0f));
}

void BatchNorm2d::fill_weight(float v) {
  if (Tensor* t = param_tensor("weight"))
    for (float& x : t->span<float>()) x = v;
}

Var BatchNorm2d::forward(const Var& x) {
  if (!x.ok()) return x;
  if (x.rank() != 4 || x.dim(1) != channels)
    return layer_error(*this, "BatchNorm2d " + std::to_string(channels), x,
                       "must be NCHW with " + std::to_string(channels) + " channels");
  if (training()) return forward_training(x);
  return F::batch_norm(x, param("weight"), param("bias"), param("running_mean"), param("running_var"), eps);
}

Var BatchNorm2d::forward_training(const Var& x) {
  // Batch statistics over N, H, W written with plain ops, so autodiff differentiates through them;
  // running statistics move by `momentum` (unbiased variance, as PyTorch does).
  const int64_t c = channels;
  const std::vector<int64_t> axes{0, 2, 3};
  const double n = static_cast<double>(x.dim(0) * x.dim(2) * x.dim(3));
  Var mean, xc, var;
  Var var_term;  // the running variance's update term: momentum * var * n / (n - 1)
  if (sync_stats) {
    // Two passes as on one rank (the mean, then the centred squares), each a sum over this rank's
    // values added over the ranks and divided by the global count.
    F::Attrs keep{{"keepdims", int64_t{1}}};
    Var count;
    mean = F::div(sum_over_ranks(F::op("ReduceSum", {x, F::ints(axes)}, keep), n, &count), count);
    xc = x - mean;
    var = F::div(sum_over_ranks(F::op("ReduceSum", {xc * xc, F::ints(axes)}, keep), n, nullptr), count);
    const Var unbias = F::div(count, F::add(count, -1.0));
    var_term = F::mul(F::reshape(var, {c}) * unbias, momentum);
  } else {
    F::Attrs keep{{"axes", axes}, {"keepdims", int64_t{1}}};
    mean = F::op("ReduceMean", {x}, keep);
    xc = x - mean;
    var = F::op("ReduceMean", {xc * xc}, keep);
    const double unbias = n > 1 ? n / (n - 1) : 1.0;
    var_term = F::mul(F::reshape(var, {c}), momentum * unbias);
  }
  Var rstd = F::op("Reciprocal", {F::sqrt(F::add(var, eps))});
  Var y = xc * (F::reshape(param("weight"), {1, c, 1, 1}) * rstd) + F::reshape(param("bias"), {1, c, 1, 1});
  update_buffer("running_mean",
                F::mul(param("running_mean"), 1.0 - momentum) + F::mul(F::reshape(mean, {c}), momentum));
  update_buffer("running_var", F::mul(param("running_var"), 1.0 - momentum) + var_term);
  return y;
}

// One collective: the per-channel sums `s` added over the ranks; with `count`, also this rank's
// number of values per channel (`local_count`), added over the ranks into *count (a scalar).
// Attribute batch_stats keeps the node out of fuse-allreduce (which groups the gradients' nodes)
// and out of the step's gradient all-reduce figures.
Var BatchNorm2d::sum_over_ranks(const Var& s, double local_count, Var* count) {
  F::Attrs attrs{{"mean", int64_t{0}}, {"batch_stats", int64_t{1}}};
  if (!count) return F::op("AllReduce", {s}, std::move(attrs), "ai.modescope");
  Vars out = F::op_n("AllReduce", {s, F::scalar(local_count, s.dtype())}, std::move(attrs), 2, "ai.modescope");
  *count = out[1];
  return out[0];
}

int set_sync_batchnorm(Module& m, bool on) {
  int n = 0;
  if (auto* bn = dynamic_cast<BatchNorm2d*>(&m)) {
    bn->sync_stats = on;
    ++n;
  }
  for (auto& [name, child] : m.children()) n += set_sync_batchnorm(*child, on);
  return n;
}

Var Dropout::forward(const Var& x) {
  if (!training() || p <= 0.0f) return F::dropout(x);
  // ONNX Dropout in training mode; its mask output feeds the gradient. A fresh seed per call
  // (PyNative); traced (a compiled training step), "reseed" draws a new mask on every run.
  const uint64_t seed = seed_base + calls_++;
  F::Attrs attrs{{"seed", static_cast<float>(seed % (1u << 24))}};
  if (active_trace()) attrs.emplace("reseed", int64_t{1});
  Vars r =
      F::op_n("Dropout", {x, F::scalar(p, x.dtype()), F::constant(Tensor::scalar<bool>(true))}, std::move(attrs), 2);
  return r[0];
}

LayerNorm::LayerNorm(int64_t d, float e) : dim(d), eps(e) {
  register_parameter("weight", filled({d}, 1.0f));
  register_parameter("bias", filled({d}, 0.0f));
}

Var LayerNorm::forward(const Var& x) {
  if (!x.ok()) return x;
  if (x.rank() < 1 || x.dim(-1) != dim)
    return layer_error(*this, "LayerNorm " + std::to_string(dim), x, "must end in " + std::to_string(dim));
  return F::layer_norm(x, param("weight"), param("bias"), eps);
}

Embedding::Embedding(int64_t n, int64_t d) : num_embeddings(n), dim(d) {
  register_parameter("weight", uniform_tensor({n, d}, std::sqrt(3.0f)));  // variance 1, like N(0, 1)
}

Var Embedding::forward(const Var& ids) {
  if (!ids.ok()) return ids;
  if (ids.dtype() != DType::I64 && ids.dtype() != DType::I32)
    return layer_error(*this, "Embedding", ids, "must hold integer ids");
  return F::gather(param("weight"), ids, 0);
}

MultiHeadAttention::MultiHeadAttention(int64_t e, int64_t h) : embed_dim(e), num_heads(h) {
  q_ = register_module("q_proj", std::make_shared<Dense>(e, e));
  k_ = register_module("k_proj", std::make_shared<Dense>(e, e));
  v_ = register_module("v_proj", std::make_shared<Dense>(e, e));
  out_ = register_module("out_proj", std::make_shared<Dense>(e, e));
}

Var MultiHeadAttention::forward(const Var& x) {
  if (!x.ok()) return x;
  const std::string layer = "MultiHeadAttention " + std::to_string(embed_dim) + "/" + std::to_string(num_heads);
  if (num_heads <= 0 || embed_dim % num_heads != 0)
    return layer_error(*this, layer, x, "cannot be split: embed_dim not divisible by num_heads");
  if (x.rank() != 3 || x.dim(2) != embed_dim)
    return layer_error(*this, layer, x, "must be [batch, seq, " + std::to_string(embed_dim) + "]");
  const int64_t b = x.dim(0), s = x.dim(1), d = embed_dim / num_heads;
  auto heads = [&](const Var& t, std::vector<int64_t> perm) {
    return F::transpose(F::reshape(t, {b, s, num_heads, d}), std::move(perm));
  };
  Var q = heads((*q_)(x), {0, 2, 1, 3});  // [b, h, s, d]
  Var k = heads((*k_)(x), {0, 2, 3, 1});  // [b, h, d, s]
  Var v = heads((*v_)(x), {0, 2, 1, 3});
  Var scores = F::mul(F::matmul(q, k), 1.0 / std::sqrt(static_cast<double>(d)));
  Var ctx = F::matmul(F::softmax(scores, -1), v);  // [b, h, s, d]
  ctx = F::reshape(F::transpose(ctx, {0, 2, 1, 3}), {b, s, embed_dim});
  return (*out_)(ctx);
}

MaxPool2d::MaxPool2d(int64_t k, int64_t s, int64_t p) : kernel(k), stride(s > 0 ? s : k), padding(p) {}
Var MaxPool2d::forward(const Var& x) {
  return F::max_pool2d(x, {kernel, kernel}, {stride, stride}, {padding, padding});
}

AvgPool2d::AvgPool2d(int64_t k, int64_t s, int64_t p) : kernel(k), stride(s > 0 ? s : k), padding(p) {}
Var AvgPool2d::forward(const Var& x) {
  return F::avg_pool2d(x, {kernel, kernel}, {stride, stride}, {padding, padding});
}

Var AdaptiveAvgPool2d::forward(const Var& x) {
  if (output_size != 1)
    return layer_error(*this, "AdaptiveAvgPool2d", x,
                       "pooling to " + std::to_string(output_size) + " is not supported (only 1)");
  return F::global_avg_pool(x);
}

}  // namespace ms::nn
