// The layer set of the builder API (PyTorch/MindSpore-like constructors and parameter names:
// weight/bias, running_mean/running_var). By default they are inference-mode layers: BatchNorm uses
// its running statistics, Dropout is the identity; Module::set_training(true) switches BatchNorm to
// batch statistics (updating the running ones) and Dropout to a random mask.
#pragma once

#include "engine/frontend/nn/module.h"

namespace ms::nn {

class Dense : public Module {
 public:
  Dense(int64_t in_features, int64_t out_features, bool bias = true);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "Dense"; }
  int64_t in_features, out_features;
  bool has_bias;
};

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t padding = 0,
         int64_t groups = 1, bool bias = true, int64_t dilation = 1);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "Conv2d"; }
  int64_t in_channels, out_channels, kernel, stride, padding, groups, dilation;
  bool has_bias;
};

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, float eps = 1e-5f);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "BatchNorm2d"; }
  // Scale (gamma) for every channel, e.g. small for the last norm of a residual branch.
  void fill_weight(float v);
  int64_t channels;
  float eps;
  float momentum = 0.1f;  // running statistics update in training mode
  // Data parallel (SyncBatchNorm): the batch statistics are taken over every rank's slice of the
  // global batch, through ai.modescope AllReduce ops (each rank's sums and count, added over the
  // ranks; their gradients are added over the ranks the same way). Set by set_sync_batchnorm.
  bool sync_stats = false;

 private:
  Var forward_training(const Var& x);
  Var sum_over_ranks(const Var& s, double local_count, Var* count);
};

// Turns synchronized batch statistics on or off in every BatchNorm2d of `m` (itself included);
// returns how many it set. Only for data parallel runs: the AllReduce ops need the world
// communicator (engine/dist).
int set_sync_batchnorm(Module& m, bool on);

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, float eps = 1e-5f);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "LayerNorm"; }
  int64_t dim;
  float eps;
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim);
  Var forward(const Var& ids) override;
  std::string type_name() const override { return "Embedding"; }
  int64_t num_embeddings, dim;
};

// Self-attention over x [batch, seq, embed] with separate q/k/v/out projections.
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t embed_dim, int64_t num_heads);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "MultiHeadAttention"; }
  int64_t embed_dim, num_heads;

 private:
  std::shared_ptr<Dense> q_, k_, v_, out_;
};

// Parameter-free layers.
class ReLU : public Module {
 public:
  Var forward(const Var& x) override { return F::relu(x); }
  std::string type_name() const override { return "ReLU"; }
};
class ReLU6 : public Module {
 public:
  Var forward(const Var& x) override { return F::relu6(x); }
  std::string type_name() const override { return "ReLU6"; }
};
class GELU : public Module {
 public:
  Var forward(const Var& x) override { return F::gelu(x); }
  std::string type_name() const override { return "GELU"; }
};
class Sigmoid : public Module {
 public:
  Var forward(const Var& x) override { return F::sigmoid(x); }
  std::string type_name() const override { return "Sigmoid"; }
};
class Softmax : public Module {
 public:
  explicit Softmax(int64_t axis = -1) : axis(axis) {}
  Var forward(const Var& x) override { return F::softmax(x, axis); }
  std::string type_name() const override { return "Softmax"; }
  int64_t axis;
};
class Flatten : public Module {
 public:
  Var forward(const Var& x) override { return F::flatten(x, 1); }
  std::string type_name() const override { return "Flatten"; }
};
class Dropout : public Module {
 public:
  explicit Dropout(float p = 0.5f) : p(p) {}
  // Inference: identity. Training: drops with probability p and scales by 1/(1-p).
  Var forward(const Var& x) override;
  std::string type_name() const override { return "Dropout"; }
  float p;
  uint64_t seed_base = 0;  // masks are seeded seed_base, seed_base + 1, ... per training call

 private:
  uint64_t calls_ = 0;
};
class MaxPool2d : public Module {
 public:
  MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  int64_t kernel, stride, padding;
};
class AvgPool2d : public Module {
 public:
  AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  Var forward(const Var& x) override;
  std::string type_name() const override { return "AvgPool2d"; }
  int64_t kernel, stride, padding;
};
// Output size 1 only (GlobalAveragePool), the form classifiers use.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(int64_t output_size = 1) : output_size(output_size) {}
  Var forward(const Var& x) override;
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  int64_t output_size;
};

// Shape check helper for layers: a failed Var naming the module path, the layer and the shapes.
Var layer_error(const Module& m, const std::string& layer, const Var& x, const std::string& what);

}  // namespace ms::nn
