// The C++ layers as MindSpore's nn classes (MindSpore's constructor names and defaults): Dense with
// has_bias and activation, Conv2d with pad_mode, BatchNorm2d with MindSpore's momentum, pools, ...
// Weights come from the engine's seeded generator, so the same ms.set_seed and construction order
// give the same weights as the C++ API.
#include <cmath>

#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/layers.h"

namespace ms::py {

namespace {

using nn::Var;

// Dense with an activation (a name or a cell) applied to its output.
class DenseAct : public nn::Dense {
 public:
  DenseAct(int64_t in, int64_t out, bool bias, pyb::handle activation) : nn::Dense(in, out, bias) {
    if (activation.is_none()) return;
    if (pyb::isinstance<pyb::str>(activation)) {
      act_name_ = activation.cast<std::string>();
      static const char* kKnown[] = {"relu", "relu6", "sigmoid", "tanh", "gelu", "softmax"};
      bool known = false;
      for (const char* k : kKnown) known = known || act_name_ == k;
      if (!known) throw pyb::value_error("Dense: unknown activation '" + act_name_ + "'");
    } else {
      act_cell_ = activation.cast<std::shared_ptr<nn::Module>>();
      register_module("activation", act_cell_);
    }
  }
  Var forward(const Var& x) override {
    Var y = nn::Dense::forward(x);
    if (act_cell_) return (*act_cell_)(y);
    if (act_name_.empty()) return y;
    if (act_name_ == "relu") return nn::F::relu(y);
    if (act_name_ == "relu6") return nn::F::relu6(y);
    if (act_name_ == "sigmoid") return nn::F::sigmoid(y);
    if (act_name_ == "tanh") return nn::F::tanh(y);
    if (act_name_ == "gelu") return nn::F::gelu(y);
    return nn::F::softmax(y, -1);
  }

 private:
  std::string act_name_;
  std::shared_ptr<nn::Module> act_cell_;
};

// weight_init / bias_init: None (the layer's default), "zeros", "ones", or values (Tensor, array).
void init_parameter(nn::Module& m, const std::string& name, pyb::handle init) {
  if (init.is_none()) return;
  Tensor* target = nullptr;
  for (auto& slot : m.parameter_slots())
    if (slot.name == name) target = slot.tensor;
  if (!target) return;
  if (pyb::isinstance<pyb::str>(init)) {
    const std::string s = init.cast<std::string>();
    const float v = s == "zeros" ? 0.0f : s == "ones" ? 1.0f : NAN;
    if (std::isnan(v))
      throw pyb::value_error(m.type_name() + ": " + name + "_init '" + s +
                             "' is not supported (zeros, ones, or a Tensor of values)");
    for (float& x : target->span<float>()) x = v;
    return;
  }
  Tensor src = host_tensor(checked(nn::F::cast(to_var(init), target->dtype())));
  if (src.shape() != target->shape())
    throw pyb::value_error(m.type_name() + ": " + name + "_init has shape " + shape_to_string(src.shape()) +
                           ", the parameter " + shape_to_string(target->shape()));
  std::memcpy(target->raw(), src.raw(), target->nbytes());
}

int64_t conv_padding(const std::string& pad_mode, int64_t padding, int64_t kernel, int64_t dilation) {
  if (pad_mode == "pad") return padding;
  if (pad_mode == "valid") return 0;
  if (pad_mode == "same") {
    if (kernel % 2 == 0) throw pyb::value_error("Conv2d: pad_mode 'same' needs an odd kernel_size");
    return (kernel - 1) / 2 * dilation;
  }
  throw pyb::value_error("Conv2d: pad_mode '" + pad_mode + "' (same, valid or pad)");
}

int64_t first_int(pyb::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) return h.cast<int64_t>();
  auto v = h.cast<std::vector<int64_t>>();
  if (v.empty() || std::any_of(v.begin(), v.end(), [&](int64_t x) { return x != v[0]; }))
    throw pyb::value_error(std::string(what) + ": only square sizes are supported");
  return v[0];
}

template <class L> using Layer = pyb::class_<L, nn::Module, std::shared_ptr<L>>;

}  // namespace

void bind_layers(pyb::module_& root) {
  pyb::module_ m = root.def_submodule("layers", "the C++ layers");
  Layer<nn::Dense>(m, "DenseBase");
  Layer<DenseAct>(m, "Dense")
      .def(pyb::init([](int64_t in, int64_t out, pyb::object w, pyb::object b, bool has_bias, pyb::object act) {
             auto d = std::make_shared<DenseAct>(in, out, has_bias, act);
             init_parameter(*d, "weight", w);
             init_parameter(*d, "bias", b);
             return d;
           }),
           "in_channels"_a, "out_channels"_a, "weight_init"_a = pyb::none(), "bias_init"_a = pyb::none(),
           "has_bias"_a = true, "activation"_a = pyb::none())
      .def_readonly("in_channels", &nn::Dense::in_features)
      .def_readonly("out_channels", &nn::Dense::out_features)
      .def_readonly("has_bias", &nn::Dense::has_bias);
  Layer<nn::Conv2d>(m, "Conv2d")
      .def(pyb::init([](int64_t in, int64_t out, pyb::object kernel_size, pyb::object stride,
                        const std::string& pad_mode, int64_t padding, pyb::object dilation, int64_t group,
                        bool has_bias, pyb::object w, pyb::object b) {
             const int64_t k = first_int(kernel_size, "Conv2d kernel_size");
             const int64_t d = first_int(dilation, "Conv2d dilation");
             auto c = std::make_shared<nn::Conv2d>(in, out, k, first_int(stride, "Conv2d stride"),
                                                   conv_padding(pad_mode, padding, k, d), group, has_bias, d);
             init_parameter(*c, "weight", w);
             init_parameter(*c, "bias", b);
             return c;
           }),
           "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "pad_mode"_a = "same", "padding"_a = 0,
           "dilation"_a = 1, "group"_a = 1, "has_bias"_a = false, "weight_init"_a = pyb::none(),
           "bias_init"_a = pyb::none());
  Layer<nn::BatchNorm2d>(m, "BatchNorm2d")
      .def(pyb::init([](int64_t n, float eps, float momentum) {
             auto bn = std::make_shared<nn::BatchNorm2d>(n, eps);
             bn->momentum = 1.0f - momentum;  // MindSpore's momentum keeps the old statistics
             return bn;
           }),
           "num_features"_a, "eps"_a = 1e-5f, "momentum"_a = 0.9f);
  Layer<nn::LayerNorm>(m, "LayerNorm")
      .def(pyb::init([](pyb::object shape, float eps) {
             auto dims = PyLong_Check(shape.ptr()) ? std::vector<int64_t>{shape.cast<int64_t>()}
                                                   : shape.cast<std::vector<int64_t>>();
             if (dims.size() != 1) throw pyb::value_error("LayerNorm: only the last axis is normalized (one size)");
             return std::make_shared<nn::LayerNorm>(dims[0], eps);
           }),
           "normalized_shape"_a, "epsilon"_a = 1e-7f);
  Layer<nn::Embedding>(m, "Embedding").def(pyb::init<int64_t, int64_t>(), "vocab_size"_a, "embedding_size"_a);
  Layer<nn::ReLU>(m, "ReLU").def(pyb::init<>());
  Layer<nn::ReLU6>(m, "ReLU6").def(pyb::init<>());
  Layer<nn::GELU>(m, "GELU").def(pyb::init([](bool) { return std::make_shared<nn::GELU>(); }), "approximate"_a = false);
  Layer<nn::Sigmoid>(m, "Sigmoid").def(pyb::init<>());
  Layer<nn::Softmax>(m, "Softmax").def(pyb::init<int64_t>(), "axis"_a = -1);
  Layer<nn::Flatten>(m, "Flatten").def(pyb::init<>());
  Layer<nn::Dropout>(m, "Dropout")
      .def(pyb::init([](float keep_prob, pyb::object p) {
             return std::make_shared<nn::Dropout>(p.is_none() ? 1.0f - keep_prob : p.cast<float>());
           }),
           "keep_prob"_a = 0.5f, "p"_a = pyb::none());
  auto pool = [](const char* what, pyb::object kernel, pyb::object stride, const std::string& pad_mode) {
    const int64_t k = first_int(kernel, what);
    const int64_t s = first_int(stride, what);
    if (pad_mode != "valid" && pad_mode != "same") throw pyb::value_error(std::string(what) + ": pad_mode " + pad_mode);
    return std::array<int64_t, 3>{k, s, pad_mode == "same" ? (k - 1) / 2 : 0};
  };
  Layer<nn::MaxPool2d>(m, "MaxPool2d")
      .def(pyb::init([pool](pyb::object k, pyb::object s, const std::string& pm) {
             auto [kk, ss, pp] = pool("MaxPool2d", k, s, pm);
             return std::make_shared<nn::MaxPool2d>(kk, ss, pp);
           }),
           "kernel_size"_a = 1, "stride"_a = 1, "pad_mode"_a = "valid");
  Layer<nn::AvgPool2d>(m, "AvgPool2d")
      .def(pyb::init([pool](pyb::object k, pyb::object s, const std::string& pm) {
             auto [kk, ss, pp] = pool("AvgPool2d", k, s, pm);
             return std::make_shared<nn::AvgPool2d>(kk, ss, pp);
           }),
           "kernel_size"_a = 1, "stride"_a = 1, "pad_mode"_a = "valid");
  Layer<nn::AdaptiveAvgPool2d>(m, "AdaptiveAvgPool2d").def(pyb::init<int64_t>(), "output_size"_a = 1);
}

}  // namespace ms::py
