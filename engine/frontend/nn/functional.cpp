// Dispatch of one functional op: traced (append a node) or eager (infer, allocate, run the kernel
// at once, the way the interpreter dispatches one step, without building a Program).
#include "engine/frontend/nn/functional.h"

#include "engine/frontend/nn/autocast.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/eager_observe.h"
#include "engine/frontend/nn/tape.h"
#include "engine/frontend/nn/trace.h"
#include "engine/ops/schema.h"
#include "engine/runtime/interpreter.h"

namespace ms::nn::F {
namespace {

class EagerAllocator final : public runtime::OutputAllocator {
 public:
  explicit EagerAllocator(runtime::Backend& be) : be_(be) {}
  Expected<Tensor> allocate(size_t, DType dtype, const Shape& shape) override {
    return runtime::allocate_value(be_, nullptr, "", ir::NodeId{}, dtype, shape);
  }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override {
    return runtime::allocate_value(be_, nullptr, "", ir::NodeId{}, dtype, shape);
  }

 private:
  runtime::Backend& be_;
};

Vars fail_all(Status st, int n) { return Vars(static_cast<size_t>(n), Var::failed(std::move(st))); }

Status with_path(Status st) {
  const std::string path = current_path();
  if (!path.empty() && st.message().find(path) == std::string::npos) st.prepend("in module '" + path + "': ");
  return st;
}

Vars eager_op(const std::string& op_type, const std::string& domain, const Vars& inputs, Attrs attrs, int nout) {
  if (op_type == "If" || op_type == "Loop" || op_type == "Scan")
    return fail_all(invalid_argument(op_type + " has subgraphs: use nn::cond / nn::fori_loop"), nout);
  ir::Node node;
  node.op_type = op_type;
  node.domain = domain;
  node.name = current_path();
  node.attrs = std::move(attrs);
  std::vector<const Tensor*> ins(inputs.size(), nullptr);
  ::ms::ops::InferContext ictx{node, domain.empty() ? kTraceOpset : 1, {}, {}, {}};
  ictx.types.resize(inputs.size());
  ictx.values.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Var& v = inputs[i];
    if (!v.defined()) {
      node.inputs.emplace_back();
      continue;
    }
    if (!v.ok()) return fail_all(v.status(), nout);
    if (v.is_symbolic())
      return fail_all(
          with_path(invalid_argument("symbolic tensor '" + v.name() + "' used outside its trace (" + op_type + ")")),
          nout);
    const Tensor& t = v.impl()->value;
    node.inputs.push_back("in" + std::to_string(i));
    ins[i] = &t;
    ictx.types[i].dtype = t.dtype();
    ictx.types[i].dims = t.shape();
    ictx.values[i] = &t;
  }
  for (int i = 0; i < nout; ++i) node.outputs.push_back("out" + std::to_string(i));
  Status st = ::ms::ops::infer_node(ictx);
  if (!st.is_ok()) return fail_all(with_path(std::move(st)), nout);
  runtime::Backend& be = backend();
  // Observed (a profiled step): reported like an interpreter step, under a node id of its own.
  EagerObserveScope* observe = eager_observer();
  runtime::RunObserver* obs = observe ? &observe->observer() : nullptr;
  if (observe) {
    observe->record(node, ictx.types, ictx.outputs);
    obs->on_op_begin(node);
  }
  std::vector<Tensor> outs(static_cast<size_t>(nout));
  if (!runtime::is_view_op(op_type)) {
    for (size_t i = 0; i < outs.size(); ++i) {
      const auto& t = ictx.outputs[i];
      if (!t.is_static() || t.dtype == DType::Undefined) continue;
      auto a = runtime::allocate_value(be, obs, obs ? node.label() : "", node.id, t.dtype, *t.dims);
      if (!a) {
        if (obs) obs->on_op_end(node);
        return fail_all(std::move(a).take_status(), nout);
      }
      outs[i] = std::move(*a);
    }
  }
  runtime::KernelFn kernel = be.find_kernel(node);
  if (!kernel)
    return fail_all(with_path(unsupported(node.label() + ": no " + be.name() + " kernel for op '" + op_type + "'")),
                    nout);
  EagerAllocator alloc(be);
  runtime::KernelContext kctx(node, ictx.opset, be, std::span<const Tensor* const>(ins.data(), ins.size()),
                              std::span<Tensor>(outs.data(), outs.size()), alloc, nullptr);
  if (obs) obs->on_kernel_begin(node, "");
  st = kernel(kctx);
  if (obs) {
    if (!kctx.impl().empty()) obs->on_kernel_impl(node, kctx.impl());
    obs->on_kernel_end(node);
    obs->on_op_end(node);
  }
  if (!st.is_ok()) return fail_all(with_path(std::move(st)), nout);
  Vars result;
  result.reserve(outs.size());
  for (auto& t : outs) {
    if (!t.defined()) return fail_all(internal_error(node.label() + ": kernel produced no output"), nout);
    result.emplace_back(std::move(t));
  }
  return result;
}

Tensor scalar_tensor(double v, DType dtype) {
  Tensor t = Tensor::empty(dtype, {});
  if (!visit_dtype(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        *t.data<T>() = static_cast<T>(v);
      }))
    return Tensor::scalar<float>(static_cast<float>(v));
  return t;
}

DType dtype_or_f32(const Var& v) { return v.ok() && v.dtype() != DType::Undefined ? v.dtype() : DType::F32; }

}  // namespace

namespace {
Vars dispatch(const std::string& op_type, const Vars& inputs, Attrs attrs, int num_outputs, const std::string& domain) {
  if (TraceState* t = active_trace()) {
    for (const Var& v : inputs)
      if (v.defined() && !v.ok()) return fail_all(v.status(), num_outputs);
    return t->add_op(op_type, domain, inputs, std::move(attrs), num_outputs);
  }
  return eager_op(op_type, domain, inputs, std::move(attrs), num_outputs);
}
}  // namespace

Vars op_n(const std::string& op_type, const Vars& inputs, Attrs attrs, int num_outputs, const std::string& domain) {
  // Autocast (mixed precision): the Casts are ops of their own, so the tape records them too.
  if (const DType amp = autocast::compute_type(op_type, domain); amp != DType::Undefined) {
    Vars outs = [&] {
      const AutocastPause pause;  // the op itself, with cast inputs, runs as written
      return op_n(op_type, autocast::cast_inputs(op_type, inputs, amp), std::move(attrs), num_outputs, domain);
    }();
    if (autocast::outputs_back_to_f32(op_type, domain))
      for (Var& v : outs)
        if (v.ok() && v.dtype() == amp) v = cast(v, DType::F32);
    return outs;
  }
  // Under value_and_grad the op is also recorded on the tape (eager and traced alike).
  autodiff::Tape* tape = autodiff::active_tape();
  if (!tape) return dispatch(op_type, inputs, std::move(attrs), num_outputs, domain);
  Vars outs = dispatch(op_type, inputs, attrs, num_outputs, domain);
  tape->record(op_type, domain, inputs, attrs, outs);
  return outs;
}

Var op(const std::string& op_type, const Vars& inputs, Attrs attrs, const std::string& domain) {
  return op_n(op_type, inputs, std::move(attrs), 1, domain)[0];
}

Var constant(const Tensor& t) { return Var(t); }
Var scalar(double v, DType dtype) { return Var(scalar_tensor(v, dtype)); }
Var ints(const std::vector<int64_t>& v) {
  return Var(Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}));
}

Var add(const Var& a, const Var& b) { return op("Add", {a, b}); }
Var sub(const Var& a, const Var& b) { return op("Sub", {a, b}); }
Var mul(const Var& a, const Var& b) { return op("Mul", {a, b}); }
Var div(const Var& a, const Var& b) { return op("Div", {a, b}); }
Var add(const Var& a, double b) { return add(a, scalar(b, dtype_or_f32(a))); }
Var mul(const Var& a, double b) { return mul(a, scalar(b, dtype_or_f32(a))); }
Var neg(const Var& x) { return op("Neg", {x}); }
Var exp(const Var& x) { return op("Exp", {x}); }
Var sqrt(const Var& x) { return op("Sqrt", {x}); }
Var erf(const Var& x) { return op("Erf", {x}); }
Var tanh(const Var& x) { return op("Tanh", {x}); }
Var relu(const Var& x) { return op("Relu", {x}); }
Var relu6(const Var& x) { return op("Clip", {x, scalar(0.0, dtype_or_f32(x)), scalar(6.0, dtype_or_f32(x))}); }
Var sigmoid(const Var& x) { return op("Sigmoid", {x}); }
Var gelu(const Var& x) {
  // 0.5 * x * (1 + erf(x / sqrt(2))): Gelu itself is opset 20, this form exports at opset 17.
  Var e = erf(mul(x, 0.7071067811865476));
  return mul(mul(x, add(e, 1.0)), 0.5);
}
Var greater(const Var& a, const Var& b) { return op("Greater", {a, b}); }
Var greater(const Var& a, double b) { return greater(a, scalar(b, dtype_or_f32(a))); }
Var less(const Var& a, double b) { return op("Less", {a, scalar(b, dtype_or_f32(a))}); }
Var cast(const Var& x, DType to) { return op("Cast", {x}, {{"to", int64_t{dtype_to_onnx(to)}}}); }
Var identity(const Var& x) { return op("Identity", {x}); }

Var matmul(const Var& a, const Var& b) { return op("MatMul", {a, b}); }

Var linear(const Var& x, const Var& weight, const Var& bias) {
  if (x.ok() && x.rank() == 2) {
    Vars in{x, weight};
    if (bias.defined()) in.push_back(bias);
    return op("Gemm", in, {{"transB", int64_t{1}}});
  }
  Var y = matmul(x, transpose(weight, {1, 0}));
  return bias.defined() ? add(y, bias) : y;
}

Var conv2d(const Var& x, const Var& weight, const Var& bias, std::vector<int64_t> stride, std::vector<int64_t> padding,
           std::vector<int64_t> dilation, int64_t groups) {
  Vars in{x, weight};
  if (bias.defined()) in.push_back(bias);
  const Shape ws = weight.shape();
  Attrs a{{"strides", std::move(stride)},
          {"dilations", std::move(dilation)},
          {"group", groups},
          {"pads", std::vector<int64_t>{padding.at(0), padding.at(1), padding.at(0), padding.at(1)}}};
  if (ws.size() == 4) a["kernel_shape"] = std::vector<int64_t>{ws[2], ws[3]};
  return op("Conv", in, std::move(a));
}

namespace {
Var pool(const char* type, const Var& x, std::vector<int64_t> kernel, std::vector<int64_t> stride,
         std::vector<int64_t> padding) {
  if (stride.empty()) stride = kernel;
  if (padding.size() == 2) padding = {padding[0], padding[1], padding[0], padding[1]};
  return op(type, {x},
            {{"kernel_shape", std::move(kernel)}, {"strides", std::move(stride)}, {"pads", std::move(padding)}});
}
}  // namespace

Var max_pool2d(const Var& x, std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p) {
  return pool("MaxPool", x, std::move(k), std::move(s), std::move(p));
}
Var avg_pool2d(const Var& x, std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p) {
  return pool("AveragePool", x, std::move(k), std::move(s), std::move(p));
}
Var global_avg_pool(const Var& x) { return op("GlobalAveragePool", {x}); }

Var batch_norm(const Var& x, const Var& scale, const Var& bias, const Var& mean, const Var& var, float eps) {
  return op("BatchNormalization", {x, scale, bias, mean, var}, {{"epsilon", eps}});
}
Var layer_norm(const Var& x, const Var& scale, const Var& bias, float eps) {
  return op("LayerNormalization", {x, scale, bias}, {{"axis", int64_t{-1}}, {"epsilon", eps}});
}
Var softmax(const Var& x, int64_t axis) { return op("Softmax", {x}, {{"axis", axis}}); }
Var dropout(const Var& x) { return identity(x); }

Var flatten(const Var& x, int64_t axis) { return op("Flatten", {x}, {{"axis", axis}}); }
Var reshape(const Var& x, const std::vector<int64_t>& shape) { return op("Reshape", {x, ints(shape)}); }
Var transpose(const Var& x, const std::vector<int64_t>& perm) { return op("Transpose", {x}, {{"perm", perm}}); }
Var concat(const Vars& xs, int64_t axis) { return op("Concat", xs, {{"axis", axis}}); }
Var gather(const Var& data, const Var& indices, int64_t axis) {
  return op("Gather", {data, indices}, {{"axis", axis}});
}

Var reduce_sum(const Var& x, const std::vector<int64_t>& axes) {
  Vars in{x};
  if (!axes.empty()) in.push_back(ints(axes));
  return op("ReduceSum", in, {{"keepdims", int64_t{0}}});
}
Var reduce_mean(const Var& x, const std::vector<int64_t>& axes) {
  Attrs a{{"keepdims", int64_t{0}}};
  if (!axes.empty()) a["axes"] = axes;
  return op("ReduceMean", {x}, std::move(a));
}

}  // namespace ms::nn::F
