#include "engine/runtime/backend_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <tuple>

#include "engine/ops/fused.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/observer.h"

namespace ms::runtime {

namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  Tensor uniform(const Shape& shape, float lo = -1.f, float hi = 1.f) {
    Tensor t = Tensor::empty(DType::F32, shape);
    std::uniform_real_distribution<float> d(lo, hi);
    for (float& v : t.span<float>()) v = d(gen_);
    return t;
  }
  Tensor indices(const Shape& shape, int64_t bound) {
    Tensor t = Tensor::empty(DType::I64, shape);
    std::uniform_int_distribution<int64_t> d(-bound, bound - 1);  // negative indices wrap
    for (int64_t& v : t.span<int64_t>()) v = d(gen_);
    return t;
  }

 private:
  std::mt19937_64 gen_;
};

Tensor i64s(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

OpCase make(std::string name, std::string op, std::vector<Tensor> inputs,
            std::map<std::string, ir::Attribute> attrs = {}, std::vector<bool> constant = {}) {
  OpCase c;
  c.name = std::move(name);
  c.op_type = std::move(op);
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.constant = std::move(constant);
  c.constant.resize(c.inputs.size(), false);
  return c;
}

// Remembers the device kernel's implementation string.
class ImplObserver final : public RunObserver {
 public:
  void on_kernel_impl(const ir::Node&, std::string_view impl) override { impl_ = std::string(impl); }
  const std::string& impl() const { return impl_; }

 private:
  std::string impl_;
};

Expected<Tensor> to_host(Backend& b, const Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return t;
  Tensor host = Tensor::empty(t.dtype(), t.shape());
  MS_RETURN_IF_ERROR(b.copy_to_host(t, host));
  return host;
}

// Largest |a - b| and whether every element is within atol + rtol * |b|.
bool close(const Tensor& got, const Tensor& want, double rtol, double atol, double& max_abs, std::string& why) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    why =
        "dtype/shape differ: " + std::string(dtype_name(got.dtype())) + " vs " + std::string(dtype_name(want.dtype()));
    return false;
  }
  const int64_t n = got.numel();
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    double a = 0, b = 0;
    switch (got.dtype()) {
      case DType::F32:
        a = got.data<float>()[i];
        b = want.data<float>()[i];
        break;
      case DType::I64:
      case DType::I32:
      case DType::BF16:
      case DType::F16:
      case DType::Bool:
        a = got.at_double(i);
        b = want.at_double(i);
        break;
      default: why = "dtype " + std::string(dtype_name(got.dtype())) + " not compared"; return false;
    }
    if (std::isnan(a) && std::isnan(b)) continue;
    const double d = std::fabs(a - b);
    if (!(d <= atol + rtol * std::fabs(b))) {
      if (ok) why = "element " + std::to_string(i) + ": " + std::to_string(a) + " vs " + std::to_string(b);
      ok = false;
    }
    if (d > max_abs || std::isnan(d)) max_abs = std::isnan(d) ? INFINITY : d;
  }
  return ok;
}

ir::Graph one_node_graph(const OpCase& c) {
  ir::Graph g;
  g.name = c.name;
  g.opsets[""] = c.opset;
  if (!c.domain.empty()) g.opsets[c.domain] = 1;
  ir::Node n;
  n.op_type = c.op_type;
  n.domain = c.domain;
  n.name = c.name;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    if (c.constant[i]) {
      g.add_initializer(name, c.inputs[i]);
    } else {
      ir::Value v;
      v.name = name;
      v.type.dtype = c.inputs[i].dtype();
      v.type.dims = c.inputs[i].shape();
      v.type.dim_params.assign(c.inputs[i].shape().size(), "");
      g.add_value(v);
      g.inputs.push_back(name);
    }
  }
  for (int k = 0; k < c.num_outputs; ++k) {
    n.outputs.push_back("out" + std::to_string(k));
    g.outputs.push_back("out" + std::to_string(k));
  }
  g.add_node(std::move(n));
  return g;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Elementwise, with and without broadcasting.
void elementwise_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
    const bool pow = std::string(op) == "Pow";
    cs.push_back(make(std::string(op) + "/same", op,
                      {r.uniform({4, 33, 7}, pow ? 0.1f : -1.f, 1.f), r.uniform({4, 33, 7}, 0.5f, 2.f)}));
    cs.push_back(make(std::string(op) + "/broadcast", op,
                      {r.uniform({2, 3, 5, 7}, pow ? 0.1f : -1.f, 1.f), r.uniform({3, 1, 7}, 0.5f, 2.f)}));
  }
  for (const char* op :
       {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Softplus", "Sin", "Cos", "HardSwish"})
    cs.push_back(make(std::string(op) + "/1000", op, {r.uniform({10, 100}, -3.f, 3.f)}));
  cs.push_back(make("Log/positive", "Log", {r.uniform({257}, 0.01f, 5.f)}));
  cs.push_back(make("Sqrt/positive", "Sqrt", {r.uniform({257}, 0.f, 5.f)}));
  cs.push_back(make("Reciprocal/positive", "Reciprocal", {r.uniform({257}, 0.5f, 5.f)}));
  cs.push_back(make("LeakyRelu/alpha", "LeakyRelu", {r.uniform({3, 50})}, {{"alpha", A(0.2f)}}));
  cs.push_back(make("Elu/alpha", "Elu", {r.uniform({3, 50})}, {{"alpha", A(0.7f)}}));
  cs.push_back(make("HardSigmoid/default", "HardSigmoid", {r.uniform({3, 50}, -4.f, 4.f)}));
  {
    Tensor lo = Tensor::from_vector<float>({-0.5f}, {});
    Tensor hi = Tensor::from_vector<float>({0.25f}, {});
    cs.push_back(make("Clip/min_max", "Clip", {r.uniform({6, 40}), lo, hi}, {}, {false, true, true}));
  }
}

// Softmax family, reductions, norms.
void reduction_and_norm_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  cs.push_back(make("Softmax/last", "Softmax", {r.uniform({8, 1000}, -5.f, 5.f)}));
  cs.push_back(make("Softmax/middle", "Softmax", {r.uniform({2, 17, 9}, -5.f, 5.f)}, {{"axis", A(int64_t{1})}}));
  cs.push_back(make("LogSoftmax/last", "LogSoftmax", {r.uniform({8, 10}, -5.f, 5.f)}));
  cs.push_back(make("ReduceMean/last", "ReduceMean", {r.uniform({4, 6, 300}), i64s({-1})}, {}, {false, true}));
  cs.push_back(make("ReduceSum/middle", "ReduceSum", {r.uniform({4, 6, 5}), i64s({1})}, {{"keepdims", A(int64_t{0})}},
                    {false, true}));
  cs.back().opset = 13;
  cs.push_back(make("ReduceMax/all", "ReduceMax", {r.uniform({3, 70})}, {{"keepdims", A(int64_t{0})}}));
  cs.back().opset = 13;
  cs.push_back(make("GlobalAveragePool/7x7", "GlobalAveragePool", {r.uniform({2, 64, 7, 7})}));
  cs.push_back(make("LayerNormalization/768", "LayerNormalization",
                    {r.uniform({2, 5, 768}), r.uniform({768}), r.uniform({768})}, {{"axis", A(int64_t{-1})}},
                    {false, true, true}));
  cs.back().atol = 1e-4;
  cs.push_back(
      make("BatchNormalization/inference", "BatchNormalization",
           {r.uniform({2, 16, 9, 9}), r.uniform({16}), r.uniform({16}), r.uniform({16}), r.uniform({16}, 0.5f, 2.f)},
           {}, {false, true, true, true, true}));
}

// Linear algebra.
void linear_algebra_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  cs.push_back(make("MatMul/2d", "MatMul", {r.uniform({33, 65}), r.uniform({65, 17})}));
  cs.push_back(make("MatMul/batched", "MatMul", {r.uniform({3, 4, 8, 16}), r.uniform({3, 4, 16, 8})}));
  cs.push_back(make("MatMul/nd_x_2d", "MatMul", {r.uniform({2, 7, 64}), r.uniform({64, 32})}, {}, {false, true}));
  cs.push_back(make("Gemm/transB_bias", "Gemm", {r.uniform({5, 784}), r.uniform({128, 784}), r.uniform({128})},
                    {{"transB", A(int64_t{1})}}, {false, true, true}));
  cs.push_back(make("Gemm/alpha_beta_transA", "Gemm", {r.uniform({16, 5}), r.uniform({16, 9}), r.uniform({5, 9})},
                    {{"transA", A(int64_t{1})}, {"alpha", A(0.5f)}, {"beta", A(2.f)}}, {false, true, true}));
  for (auto& c : cs)
    if (c.op_type == "MatMul" || c.op_type == "Gemm") c.atol = 1e-4;
}

// Convolution and pooling.
void conv_and_pool_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  cs.push_back(make("Conv/3x3_pad1", "Conv", {r.uniform({1, 8, 14, 14}), r.uniform({16, 8, 3, 3}), r.uniform({16})},
                    {{"pads", A(std::vector<int64_t>{1, 1, 1, 1})}}, {false, true, true}));
  cs.push_back(make("Conv/7x7_s2", "Conv", {r.uniform({2, 3, 32, 32}), r.uniform({8, 3, 7, 7})},
                    {{"pads", A(std::vector<int64_t>{3, 3, 3, 3})}, {"strides", A(std::vector<int64_t>{2, 2})}},
                    {false, true}));
  cs.push_back(make("Conv/depthwise", "Conv", {r.uniform({1, 32, 10, 10}), r.uniform({32, 1, 3, 3})},
                    {{"group", A(int64_t{32})}, {"pads", A(std::vector<int64_t>{1, 1, 1, 1})}}, {false, true}));
  cs.push_back(make("Conv/dilated", "Conv", {r.uniform({1, 4, 12, 12}), r.uniform({4, 4, 3, 3})},
                    {{"dilations", A(std::vector<int64_t>{2, 2})}}, {false, true}));
  // The conv gradients of a training step: input gradients as ConvTranspose (output padding, and
  // the 1x1 stride-2 case whose last rows no input reaches), weight gradients as ConvGradWeight.
  cs.push_back(make("ConvTranspose/3x3_s2_outpad", "ConvTranspose", {r.uniform({1, 8, 7, 7}), r.uniform({8, 4, 3, 3})},
                    {{"pads", A(std::vector<int64_t>{1, 1, 1, 1})},
                     {"strides", A(std::vector<int64_t>{2, 2})},
                     {"output_padding", A(std::vector<int64_t>{1, 1})}},
                    {false, true}));
  cs.push_back(make("ConvTranspose/1x1_s2", "ConvTranspose", {r.uniform({2, 16, 5, 5}), r.uniform({16, 8, 1, 1})},
                    {{"strides", A(std::vector<int64_t>{2, 2})}, {"output_padding", A(std::vector<int64_t>{1, 1})}},
                    {false, true}));
  for (auto [name, xs, gys, k, s, pad] : {std::tuple{"ConvGradWeight/3x3_pad1", Shape{2, 8, 9, 9}, Shape{2, 16, 9, 9},
                                                     int64_t{3}, int64_t{1}, int64_t{1}},
                                          std::tuple{"ConvGradWeight/1x1_s2", Shape{2, 16, 10, 10}, Shape{2, 32, 5, 5},
                                                     int64_t{1}, int64_t{2}, int64_t{0}}}) {
    OpCase c = make(name, "ConvGradWeight", {r.uniform(xs), r.uniform(gys)},
                    {{"kernel_shape", A(std::vector<int64_t>{k, k})},
                     {"strides", A(std::vector<int64_t>{s, s})},
                     {"pads", A(std::vector<int64_t>{pad, pad, pad, pad})}});
    c.domain = "ai.modescope";
    cs.push_back(std::move(c));
  }
  for (auto& c : cs)
    if (c.op_type == "Conv" || c.op_type == "ConvTranspose")
      c.atol = 1e-4;
    else if (c.op_type == "ConvGradWeight")
      c.atol = 1e-3;  // sums over batch and positions
  cs.push_back(make("MaxPool/3x3_s2", "MaxPool", {r.uniform({1, 8, 15, 15})},
                    {{"kernel_shape", A(std::vector<int64_t>{3, 3})},
                     {"strides", A(std::vector<int64_t>{2, 2})},
                     {"pads", A(std::vector<int64_t>{1, 1, 1, 1})}}));
  cs.push_back(make("AveragePool/2x2", "AveragePool", {r.uniform({2, 4, 8, 8})},
                    {{"kernel_shape", A(std::vector<int64_t>{2, 2})}, {"strides", A(std::vector<int64_t>{2, 2})}}));
  // The pools' gradients (a training step's): dY of the forward output's shape.
  for (auto [name, op, pads, count_pad] :
       {std::tuple{"MaxPoolGrad/3x3_s2_pad1", "MaxPoolGrad", int64_t{1}, int64_t{0}},
        std::tuple{"AveragePoolGrad/3x3_s2_pad1", "AveragePoolGrad", int64_t{1}, int64_t{1}},
        std::tuple{"AveragePoolGrad/3x3_s2_exclude_pad", "AveragePoolGrad", int64_t{1}, int64_t{0}}}) {
    OpCase c = make(name, op, {r.uniform({2, 8, 15, 15}), r.uniform({2, 8, 8, 8})},
                    {{"kernel_shape", A(std::vector<int64_t>{3, 3})},
                     {"strides", A(std::vector<int64_t>{2, 2})},
                     {"pads", A(std::vector<int64_t>{pads, pads, pads, pads})}});
    if (std::string(op) == "AveragePoolGrad") c.attrs["count_include_pad"] = A(count_pad);
    c.domain = "ai.modescope";
    cs.push_back(std::move(c));
  }
}

// The compiler's fused ops.
void fused_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  {
    OpCase c =
        make("FusedConv/bias_relu_residual", "FusedConv",
             {r.uniform({1, 8, 9, 9}), r.uniform({8, 8, 3, 3}), r.uniform({8}), r.uniform({1, 8, 9, 9})},
             {{"pads", A(std::vector<int64_t>{1, 1, 1, 1})}, {"post_ops", A(std::vector<std::string>{"Add", "Relu"})}},
             {false, true, true, false});
    c.domain = ops::kFusedDomain;
    c.atol = 1e-4;
    cs.push_back(std::move(c));
    OpCase g =
        make("FusedGemm/bias_relu", "FusedGemm", {r.uniform({4, 64}), r.uniform({32, 64}), r.uniform({32})},
             {{"transB", A(int64_t{1})}, {"post_ops", A(std::vector<std::string>{"Relu"})}}, {false, true, true});
    g.domain = ops::kFusedDomain;
    g.atol = 1e-4;
    cs.push_back(std::move(g));
  }
  // Elementwise chains (the fuse-elementwise pass's): per-channel operands broadcast over NCHW, an
  // operand on the left, and a chain that squares, rounds to bf16 (a Cast link) and ends in bf16.
  auto chain = [](std::vector<std::string> names, std::vector<int64_t> arity, std::vector<int64_t> side,
                  std::vector<float> alphas) {
    std::map<std::string, A> attrs{{"chain", A(std::move(names))},
                                   {"chain_arity", A(std::move(arity))},
                                   {"chain_side", A(std::move(side))},
                                   {"chain_alphas", A(std::move(alphas))}};
    return attrs;
  };
  {
    OpCase c = make("FusedElementwise/bias_relu_scale_sigmoid", "FusedElementwise",
                    {r.uniform({2, 8, 5, 5}), r.uniform({8, 1, 1}), r.uniform({1, 8, 1, 1})},
                    chain({"Add", "Relu", "Mul", "Sigmoid"}, {2, 1, 2, 1}, {0, 0, 1, 0}, {0, 0, 0, 0}));
    c.domain = ops::kFusedDomain;
    cs.push_back(std::move(c));
    OpCase b =
        make("FusedElementwise/square_sub_cast_bf16_tanh", "FusedElementwise", {r.uniform({4, 33}), r.uniform({33})},
             chain({"Square", "Sub", "Cast", "Tanh"}, {1, 2, 1, 1}, {0, 1, 0, 0},
                   {0, 0, static_cast<float>(dtype_to_onnx(DType::BF16)), 0}));
    b.domain = ops::kFusedDomain;
    b.rtol = 1.6e-2;
    b.atol = 2e-2;
    cs.push_back(std::move(b));
  }
}

// Data movement.
void data_movement_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  cs.push_back(
      make("Transpose/0231", "Transpose", {r.uniform({2, 3, 4, 5})}, {{"perm", A(std::vector<int64_t>{0, 2, 3, 1})}}));
  cs.push_back(make("Concat/axis1", "Concat", {r.uniform({2, 3, 4}), r.uniform({2, 5, 4}), r.uniform({2, 1, 4})},
                    {{"axis", A(int64_t{1})}}));
  cs.push_back(make("Gather/axis0", "Gather", {r.uniform({50, 16}), r.indices({7}, 50)}, {}, {true, false}));
  cs.push_back(
      make("Gather/axis1", "Gather", {r.uniform({3, 20, 4}), r.indices({2, 3}, 20)}, {{"axis", A(int64_t{1})}}));
  cs.push_back(make("Reshape/flat", "Reshape", {r.uniform({2, 3, 4}), i64s({6, -1})}, {}, {false, true}));
  cs.push_back(make("Flatten/axis1", "Flatten", {r.uniform({2, 3, 4, 5})}));
  cs.push_back(make("Cast/f32_to_f32", "Cast", {r.uniform({3, 7})}, {{"to", A(int64_t{1})}}));
  cs.push_back(make("Where/broadcast", "Where",
                    {Tensor::from_vector<bool>({true, false, true, false, true, true}, {2, 3}), r.uniform({4, 2, 3}),
                     r.uniform({3})}));
  cs.push_back(make("Slice/steps", "Slice",
                    {r.uniform({4, 9, 10}), i64s({1, -1, 0}), i64s({4, -10, 9}), i64s({0, 1, 2}), i64s({1, -2, 3})}, {},
                    {false, true, true, true, true}));
  cs.push_back(make("Slice/last_axis", "Slice", {r.uniform({2, 3, 16}), i64s({4}), i64s({12}), i64s({-1})}, {},
                    {false, true, true, true}));
  cs.push_back(
      make("Split/sizes", "Split", {r.uniform({2, 10, 3}), i64s({3, 7})}, {{"axis", A(int64_t{1})}}, {false, true}));
  cs.back().num_outputs = 2;
  cs.push_back(make("Expand/broadcast", "Expand", {r.uniform({3, 1, 5}), i64s({2, 3, 4, 5})}, {}, {false, true}));
  for (const char* mode : {"constant", "edge", "reflect", "wrap"})
    cs.push_back(
        make(std::string("Pad/") + mode, "Pad",
             {r.uniform({2, 3, 5, 6}), i64s({0, 0, 1, 2, 0, 1, 2, -1}), Tensor::from_vector<float>({0.5f}, {})},
             {{"mode", A(std::string(mode))}}, {false, true, true}));
  cs.back().opset = 19;  // wrap mode
  cs.push_back(make("Dropout/inference", "Dropout", {r.uniform({4, 33})}));
  cs.push_back(make("Max/broadcast", "Max", {r.uniform({2, 3, 5}), r.uniform({3, 1})}));
  cs.push_back(make("Min/same", "Min", {r.uniform({2, 3, 5}), r.uniform({2, 3, 5})}));
  cs.push_back(make("Dropout/with_mask", "Dropout", {r.uniform({4, 33})}));
  cs.back().num_outputs = 2;
  cs.push_back(make("Cast/i64_to_f32", "Cast", {r.indices({3, 7}, 50)}, {{"to", A(int64_t{1})}}));
  cs.push_back(make("Dropout/training_ratio0", "Dropout",
                    {r.uniform({4, 33}), Tensor::from_vector<float>({0.f}, {}), Tensor::from_vector<bool>({true}, {})},
                    {}, {false, true, true}));
  cs.back().num_outputs = 2;
  // An op the CUDA backend leaves to the CPU: the fallback path must give the same answer.
  cs.push_back(make("Hardmax/fallback", "Hardmax", {r.uniform({3, 7})}, {{"axis", A(int64_t{1})}}));
}

// Masks, scatters and constants: comparisons of floats give device masks, ScatterND and OneHot
// write float data, ConstantOfShape and Constant make float values on the device.
void mask_and_constant_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  Tensor a = r.uniform({3, 4, 5});
  Tensor b = r.uniform({4, 1});
  for (int64_t i = 0; i < 4; ++i) a.data<float>()[i * 5] = b.data<float>()[i];  // some equal pairs
  cs.push_back(make("Equal/broadcast", "Equal", {a, b}));
  cs.push_back(make("Less/broadcast", "Less", {r.uniform({3, 4, 5}), r.uniform({5})}));
  cs.push_back(make("GreaterOrEqual/same", "GreaterOrEqual", {r.uniform({6, 7}), r.uniform({6, 7})}));
  cs.push_back(make("ScatterND/rows", "ScatterND",
                    {r.uniform({4, 5, 6}), Tensor::from_vector<int64_t>({1, -1}, {2, 1}), r.uniform({2, 5, 6})}, {},
                    {false, true, false}));
  cs.push_back(make("ScatterND/elements", "ScatterND",
                    {r.uniform({4, 5}), Tensor::from_vector<int64_t>({0, 1, 3, 4, 2, 2}, {3, 2}), r.uniform({3})}, {},
                    {false, true, false}));
  cs.push_back(
      make("OneHot/last_axis", "OneHot",
           {r.indices({3, 4}, 5), Tensor::from_vector<int64_t>({5}, {}), Tensor::from_vector<float>({0.1f, 0.9f}, {2})},
           {}, {false, true, true}));
  cs.push_back(make("ConstantOfShape/float", "ConstantOfShape", {i64s({2, 3, 4})},
                    {{"value", A(Tensor::from_vector<float>({1.5f}, {1}))}}, {true}));
  cs.push_back(make("Constant/float", "Constant", {}, {{"value", A(r.uniform({3, 5}))}}));
  cs.push_back(make("ReduceSum/axes_0_2_3", "ReduceSum", {r.uniform({4, 6, 5, 3}), i64s({0, 2, 3})},
                    {{"keepdims", A(int64_t{1})}}, {false, true}));
  cs.push_back(make("ReduceMean/axes_0_2", "ReduceMean", {r.uniform({4, 6, 5}), i64s({0, 2})},
                    {{"keepdims", A(int64_t{0})}}, {false, true}));
}

// `t` rounded to bf16 (nearest even).
Tensor bf16_of(const Tensor& t) {
  Tensor o = Tensor::empty(DType::BF16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) o.data<bf16>()[i] = bf16(t.data<float>()[i]);
  return o;
}

// A mixed-precision graph's ops in bf16 (what --precision bf16 compiles to): the products on the
// device's bf16 units against the CPU's bf16 kernels, f32 accumulation on both, so the outputs
// differ by bf16 rounding of the result (and of the epilogue's steps) only.
void bf16_cases(Rng& r, std::vector<OpCase>& cs) {
  using A = ir::Attribute;
  const size_t first = cs.size();
  cs.push_back(make("bf16/Add_broadcast", "Add", {r.uniform({2, 3, 5, 7}), r.uniform({3, 1, 7})}));
  cs.push_back(make("bf16/Mul_same", "Mul", {r.uniform({4, 33}), r.uniform({4, 33})}));
  cs.push_back(make("bf16/Erf", "Erf", {r.uniform({10, 100}, -3.f, 3.f)}));
  cs.push_back(make("bf16/Relu", "Relu", {r.uniform({10, 100}, -3.f, 3.f)}));
  cs.push_back(make("bf16/MatMul_batched", "MatMul", {r.uniform({2, 16, 64}), r.uniform({2, 64, 24})}));
  cs.push_back(make("bf16/Gemm_transB", "Gemm", {r.uniform({8, 64}), r.uniform({32, 64}), r.uniform({32})},
                    {{"transB", A(int64_t{1})}}, {false, true, true}));
  cs.push_back(make("bf16/Conv_3x3_pad1", "Conv",
                    {r.uniform({1, 16, 12, 12}), r.uniform({32, 16, 3, 3}), r.uniform({32})},
                    {{"pads", A(std::vector<int64_t>{1, 1, 1, 1})}}, {false, true, true}));
  OpCase fc =
      make("bf16/FusedConv_bias_relu_residual", "FusedConv",
           {r.uniform({1, 8, 9, 9}), r.uniform({8, 8, 3, 3}), r.uniform({8}), r.uniform({1, 8, 9, 9})},
           {{"pads", A(std::vector<int64_t>{1, 1, 1, 1})}, {"post_ops", A(std::vector<std::string>{"Add", "Relu"})}},
           {false, true, true, false});
  fc.domain = ops::kFusedDomain;
  cs.push_back(std::move(fc));
  cs.push_back(make("bf16/MaxPool_3x3_s2", "MaxPool", {r.uniform({1, 8, 15, 15})},
                    {{"kernel_shape", A(std::vector<int64_t>{3, 3})},
                     {"strides", A(std::vector<int64_t>{2, 2})},
                     {"pads", A(std::vector<int64_t>{1, 1, 1, 1})}}));
  cs.push_back(make("bf16/Transpose_0231", "Transpose", {r.uniform({2, 3, 4, 5})},
                    {{"perm", A(std::vector<int64_t>{0, 2, 3, 1})}}));
  cs.push_back(make("bf16/GlobalAveragePool", "GlobalAveragePool", {r.uniform({2, 8, 7, 7})}));
  cs.push_back(make("bf16/ReduceMean_axes_0_2", "ReduceMean", {r.uniform({4, 6, 5}), i64s({0, 2})},
                    {{"keepdims", A(int64_t{1})}}, {false, true}));
  cs.push_back(make("bf16/LayerNormalization_96", "LayerNormalization",
                    {r.uniform({2, 7, 96}), r.uniform({96}), r.uniform({96})}, {{"axis", A(int64_t{-1})}},
                    {false, true, true}));
  // A mixed-precision training step's gradients.
  cs.push_back(make("bf16/ConvTranspose_3x3_s2", "ConvTranspose", {r.uniform({1, 8, 7, 7}), r.uniform({8, 4, 3, 3})},
                    {{"pads", A(std::vector<int64_t>{1, 1, 1, 1})},
                     {"strides", A(std::vector<int64_t>{2, 2})},
                     {"output_padding", A(std::vector<int64_t>{1, 1})}},
                    {false, true}));
  OpCase gw =
      make("bf16/ConvGradWeight_3x3_pad1", "ConvGradWeight", {r.uniform({2, 8, 9, 9}), r.uniform({2, 16, 9, 9})},
           {{"kernel_shape", A(std::vector<int64_t>{3, 3})}, {"pads", A(std::vector<int64_t>{1, 1, 1, 1})}});
  gw.domain = "ai.modescope";
  cs.push_back(std::move(gw));
  OpCase mpg = make("bf16/MaxPoolGrad_3x3_s2", "MaxPoolGrad", {r.uniform({2, 8, 15, 15}), r.uniform({2, 8, 8, 8})},
                    {{"kernel_shape", A(std::vector<int64_t>{3, 3})},
                     {"strides", A(std::vector<int64_t>{2, 2})},
                     {"pads", A(std::vector<int64_t>{1, 1, 1, 1})}});
  mpg.domain = "ai.modescope";
  cs.push_back(std::move(mpg));
  cs.push_back(make("bf16/Slice", "Slice", {r.uniform({4, 9, 10}), i64s({1}), i64s({8}), i64s({1})}, {},
                    {false, true, true, true}));
  for (size_t i = first; i < cs.size(); ++i) {
    OpCase& c = cs[i];
    for (Tensor& t : c.inputs)
      if (t.defined() && t.dtype() == DType::F32) t = bf16_of(t);
    // One bf16 ulp of the output (2^-8 relative) plus the products' sums rounded once more.
    c.rtol = 1.6e-2;
    c.atol = 2e-2;
  }
}

}  // namespace

std::vector<OpCase> backend_check_cases(uint64_t seed) {
  Rng r(seed);
  std::vector<OpCase> cs;
  elementwise_cases(r, cs);
  reduction_and_norm_cases(r, cs);
  linear_algebra_cases(r, cs);
  conv_and_pool_cases(r, cs);
  fused_cases(r, cs);
  data_movement_cases(r, cs);
  mask_and_constant_cases(r, cs);
  bf16_cases(r, cs);
  return cs;
}

OpCaseResult run_op_case(Backend& reference, Backend& device, const OpCase& c, int perf_iters) {
  OpCaseResult res;
  res.name = c.name;
  const ir::Graph g = one_node_graph(c);
  TensorMap feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].defined() && !c.constant[i]) feeds["in" + std::to_string(i)] = c.inputs[i];
  EagerExecutor ref_exe(g, reference);
  EagerExecutor dev_exe(g, device);
  auto want = ref_exe.run(feeds);
  if (!want) {
    res.message = "reference: " + want.status().message();
    return res;
  }
  ImplObserver obs;
  RunOptions opts;
  opts.observer = &obs;
  auto got = dev_exe.run(feeds, opts);
  if (!got) {
    res.message = "device: " + got.status().message();
    return res;
  }
  res.impl = obs.impl();
  if (got->size() != want->size()) {
    res.message = "output count differs";
    return res;
  }
  res.passed = true;
  for (size_t k = 0; k < want->size(); ++k) {
    auto host = to_host(device, (*got)[k]);
    if (!host) {
      res.passed = false;
      res.message = "copy to host: " + host.status().message();
      return res;
    }
    std::string why;
    if (!close(*host, (*want)[k], c.rtol, c.atol, res.max_abs_error, why)) {
      res.passed = false;
      res.message = "output " + std::to_string(k) + ": " + why;
    }
  }
  if (perf_iters > 0) {
    auto time = [&](EagerExecutor& exe, Backend& b) {
      std::vector<double> ms;
      for (int i = 0; i < perf_iters; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto out = exe.run(feeds);
        b.synchronize();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (!out) break;
      }
      return median(ms);
    };
    res.reference_ms = time(ref_exe, reference);
    res.device_ms = time(dev_exe, device);
  }
  return res;
}

}  // namespace ms::runtime
