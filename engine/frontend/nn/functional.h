// The functional op set (ms::nn::F). Every op runs at once on the context's backend (PyNative) or,
// while a trace is active, appends a node named after the module path. `F::op` reaches any op of
// the registry generically; the named helpers below are the common ones with PyTorch-like
// arguments. Errors are values: a failed op returns a failed Var and later ops pass it on.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/frontend/nn/var.h"

namespace ms::nn::F {

using Attrs = std::map<std::string, ir::Attribute>;

// Any registered op: F::op("LeakyRelu", {x}, {{"alpha", 0.1f}}).
Var op(const std::string& op_type, const Vars& inputs, Attrs attrs = {}, const std::string& domain = "");
Vars op_n(const std::string& op_type, const Vars& inputs, Attrs attrs, int num_outputs, const std::string& domain = "");

// Constants (f32 scalars take the dtype of `like` when given).
Var constant(const Tensor& t);
Var scalar(double v, DType dtype = DType::F32);
Var ints(const std::vector<int64_t>& v);  // i64 vector (shapes, axes)

// Elementwise.
Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
Var add(const Var& a, double b);
Var mul(const Var& a, double b);
Var neg(const Var& x);
Var exp(const Var& x);
Var sqrt(const Var& x);
Var erf(const Var& x);
Var tanh(const Var& x);
Var relu(const Var& x);
Var relu6(const Var& x);
Var sigmoid(const Var& x);
Var gelu(const Var& x);  // exact (erf) form
Var greater(const Var& a, const Var& b);
Var greater(const Var& a, double b);
Var less(const Var& a, double b);
Var cast(const Var& x, DType to);
Var identity(const Var& x);

// Linear algebra and nn.
Var matmul(const Var& a, const Var& b);
// y = x W^T + b with W [out, in] (PyTorch layout); any rank >= 2 for x.
Var linear(const Var& x, const Var& weight, const Var& bias);
Var conv2d(const Var& x, const Var& weight, const Var& bias, std::vector<int64_t> stride = {1, 1},
           std::vector<int64_t> padding = {0, 0}, std::vector<int64_t> dilation = {1, 1}, int64_t groups = 1);
Var max_pool2d(const Var& x, std::vector<int64_t> kernel, std::vector<int64_t> stride = {},
               std::vector<int64_t> padding = {0, 0});
Var avg_pool2d(const Var& x, std::vector<int64_t> kernel, std::vector<int64_t> stride = {},
               std::vector<int64_t> padding = {0, 0});
Var global_avg_pool(const Var& x);
Var batch_norm(const Var& x, const Var& scale, const Var& bias, const Var& mean, const Var& var, float eps = 1e-5f);
Var layer_norm(const Var& x, const Var& scale, const Var& bias, float eps = 1e-5f);
Var softmax(const Var& x, int64_t axis = -1);
Var dropout(const Var& x);  // inference: identity

// Shapes and data movement.
Var flatten(const Var& x, int64_t axis = 1);
Var reshape(const Var& x, const std::vector<int64_t>& shape);
Var transpose(const Var& x, const std::vector<int64_t>& perm);
Var concat(const Vars& xs, int64_t axis);
Var gather(const Var& data, const Var& indices, int64_t axis = 0);

// Reductions (keepdims off; all axes when `axes` is empty).
Var reduce_sum(const Var& x, const std::vector<int64_t>& axes = {});
Var reduce_mean(const Var& x, const std::vector<int64_t>& axes = {});

}  // namespace ms::nn::F

namespace ms::nn {
// Operators for readable forward code.
inline Var operator+(const Var& a, const Var& b) { return F::add(a, b); }
inline Var operator-(const Var& a, const Var& b) { return F::sub(a, b); }
inline Var operator*(const Var& a, const Var& b) { return F::mul(a, b); }
inline Var operator/(const Var& a, const Var& b) { return F::div(a, b); }
inline Var operator>(const Var& a, double b) { return F::greater(a, b); }
inline Var operator<(const Var& a, double b) { return F::less(a, b); }
}  // namespace ms::nn
