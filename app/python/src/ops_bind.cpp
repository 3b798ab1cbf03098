// modescope._C.ops: the functional ops (MindSpore's names and arguments) over F::, each running at
// once (PyNative) or appended to the active trace; ms.cond; the context.
#include <chrono>

#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/control.h"
#include "engine/frontend/nn/functional.h"
#include "engine/frontend/nn/init.h"

namespace ms::py {

nn::Var reduce(const char* op, const nn::Var& x, pyb::handle axis, bool keepdims);
std::vector<int64_t> shape_arg(pyb::args args);

namespace {

using nn::Var;
using nn::Vars;

Var unary(const char* op, const Var& x) { return checked(nn::F::op(op, {x})); }
Var two(const char* op, pyb::handle a, pyb::handle b) {
  if (is_tensor(a)) {
    const Var& x = a.cast<const Var&>();
    return checked(nn::F::op(op, {x, to_var(b, &x)}));
  }
  const Var y = to_var(b);
  return checked(nn::F::op(op, {to_var(a, &y), y}));
}

Var full_like_shape(pyb::handle shape, DType dtype, double value) {
  std::vector<int64_t> s =
      PyLong_Check(shape.ptr()) ? std::vector<int64_t>{shape.cast<int64_t>()} : shape.cast<std::vector<int64_t>>();
  Tensor t = Tensor::zeros(DType::F64, s);
  for (auto& x : t.span<double>()) x = value;
  return checked(nn::F::cast(Var(t), dtype));
}

// ms.cond(pred, true_fn, false_fn): one branch at once in PyNative; traced, both branches become
// the subgraphs of an If node.
pyb::object cond(const Var& pred, pyb::function true_fn, pyb::function false_fn) {
  bool as_tuple = false;
  auto branch = [&as_tuple](pyb::function fn, const char* which) {
    return [fn, which, &as_tuple]() -> Vars {
      try {
        return outputs_to_vars(fn(), std::string("ms.cond ") + which, &as_tuple);
      } catch (...) {
        return {Var::failed(current_exception_status(std::string("ms.cond ") + which))};
      }
    };
  };
  Vars out = checked(nn::cond(pred, branch(true_fn, "true_fn"), branch(false_fn, "false_fn")));
  return vars_to_output(std::move(out), as_tuple);
}

// ops.print: one label (the strings before it) per tensor; PyNative prints now, traced a Print node
// prints whenever the compiled graph runs.
void print_values(pyb::args args) {
  std::string label;
  bool any_tensor = false;
  for (pyb::handle a : args) {
    if (is_tensor(a)) {
      nn::ops::print(label, a.cast<const Var&>());
      label.clear();
      any_tensor = true;
    } else {
      label += (label.empty() ? "" : " ") + std::string(pyb::str(a));
    }
  }
  if (!label.empty() || !any_tensor) pyb::print(label);
}

}  // namespace

void bind_ops(pyb::module_& root) {
  pyb::module_ m = root.def_submodule("ops", "functional ops");
  m.def("add", [](pyb::handle a, pyb::handle b) { return two("Add", a, b); });
  m.def("sub", [](pyb::handle a, pyb::handle b) { return two("Sub", a, b); });
  m.def("mul", [](pyb::handle a, pyb::handle b) { return two("Mul", a, b); });
  m.def("div", [](pyb::handle a, pyb::handle b) { return two("Div", a, b); });
  m.def("pow", [](pyb::handle a, pyb::handle b) { return two("Pow", a, b); });
  m.def("maximum", [](pyb::handle a, pyb::handle b) { return two("Max", a, b); });
  m.def("minimum", [](pyb::handle a, pyb::handle b) { return two("Min", a, b); });
  m.def("greater", [](pyb::handle a, pyb::handle b) { return two("Greater", a, b); });
  m.def("less", [](pyb::handle a, pyb::handle b) { return two("Less", a, b); });
  m.def("equal", [](pyb::handle a, pyb::handle b) { return two("Equal", a, b); });
  m.def("matmul", [](const Var& a, const Var& b) {
    pyb::gil_scoped_release nogil;
    return checked(nn::F::matmul(a, b));
  });
  m.def("relu", [](const Var& x) { return checked(nn::F::relu(x)); });
  m.def("relu6", [](const Var& x) { return checked(nn::F::relu6(x)); });
  m.def("sigmoid", [](const Var& x) { return checked(nn::F::sigmoid(x)); });
  m.def("tanh", [](const Var& x) { return checked(nn::F::tanh(x)); });
  m.def("gelu", [](const Var& x) { return checked(nn::F::gelu(x)); });
  m.def("exp", [](const Var& x) { return checked(nn::F::exp(x)); });
  m.def("log", [](const Var& x) { return unary("Log", x); });
  m.def("sqrt", [](const Var& x) { return checked(nn::F::sqrt(x)); });
  m.def("abs", [](const Var& x) { return unary("Abs", x); });
  m.def("neg", [](const Var& x) { return checked(nn::F::neg(x)); });
  m.def("square", [](const Var& x) { return checked(nn::F::mul(x, x)); });
  m.def("erf", [](const Var& x) { return checked(nn::F::erf(x)); });
  m.def(
      "softmax", [](const Var& x, int64_t axis) { return checked(nn::F::softmax(x, axis)); }, "x"_a, "axis"_a = -1);
  m.def(
      "log_softmax",
      [](const Var& x, int64_t axis) {
        return checked(nn::F::op("LogSoftmax", {x}, {{"axis", axis}}));
      },
      "x"_a, "axis"_a = -1);
  m.def(
      "reduce_sum", [](const Var& x, pyb::object axis, bool keep) { return reduce("ReduceSum", x, axis, keep); }, "x"_a,
      "axis"_a = pyb::none(), "keep_dims"_a = false);
  m.def(
      "sum", [](const Var& x, pyb::object dim, bool keep) { return reduce("ReduceSum", x, dim, keep); }, "input"_a,
      "dim"_a = pyb::none(), "keepdim"_a = false);
  m.def(
      "reduce_mean", [](const Var& x, pyb::object axis, bool keep) { return reduce("ReduceMean", x, axis, keep); },
      "x"_a, "axis"_a = pyb::none(), "keep_dims"_a = false);
  m.def(
      "mean", [](const Var& x, pyb::object axis, bool keep) { return reduce("ReduceMean", x, axis, keep); }, "x"_a,
      "axis"_a = pyb::none(), "keep_dims"_a = false);
  m.def(
      "reduce_max", [](const Var& x, pyb::object axis, bool keep) { return reduce("ReduceMax", x, axis, keep); }, "x"_a,
      "axis"_a = pyb::none(), "keep_dims"_a = false);
  m.def(
      "argmax",
      [](const Var& x, int64_t axis, bool keep) {
        return checked(nn::F::op("ArgMax", {x}, {{"axis", axis}, {"keepdims", int64_t{keep ? 1 : 0}}}));
      },
      "x"_a, "axis"_a = -1, "keepdims"_a = false);
  m.def("reshape", [](const Var& x, std::vector<int64_t> shape) { return checked(nn::F::reshape(x, shape)); });
  m.def("transpose", [](const Var& x, std::vector<int64_t> perm) { return checked(nn::F::transpose(x, perm)); });
  m.def(
      "flatten", [](const Var& x, int64_t start_dim) { return checked(nn::F::flatten(x, start_dim)); }, "input"_a,
      "start_dim"_a = 1);
  m.def(
      "concat", [](const Vars& xs, int64_t axis) { return checked(nn::F::concat(xs, axis)); }, "tensors"_a,
      "axis"_a = 0);
  m.def(
      "cat", [](const Vars& xs, int64_t axis) { return checked(nn::F::concat(xs, axis)); }, "tensors"_a, "axis"_a = 0);
  m.def("cast", [](const Var& x, pyb::handle dtype) { return checked(nn::F::cast(x, dtype_arg(dtype))); });
  m.def("dense", [](const Var& x, const Var& w, std::optional<Var> b) {
    pyb::gil_scoped_release nogil;
    return checked(nn::F::linear(x, w, b ? *b : Var()));
  });
  m.def("shape", [](const Var& x) { return pyb::tuple(pyb::cast(x.shape())); });
  m.def(
      "ones",
      [](pyb::handle shape, pyb::handle dtype) {
        return full_like_shape(shape, dtype.is_none() ? DType::F32 : dtype_arg(dtype), 1.0);
      },
      "shape"_a, "dtype"_a = pyb::none());
  m.def(
      "zeros",
      [](pyb::handle shape, pyb::handle dtype) {
        return full_like_shape(shape, dtype.is_none() ? DType::F32 : dtype_arg(dtype), 0.0);
      },
      "shape"_a, "dtype"_a = pyb::none());
  m.def("ones_like", [](const Var& x) { return full_like_shape(pyb::cast(x.shape()), x.dtype(), 1.0); });
  m.def("zeros_like", [](const Var& x) { return full_like_shape(pyb::cast(x.shape()), x.dtype(), 0.0); });
  m.def(
      "one_hot",
      [](const Var& indices, int64_t depth, double on_value, double off_value, int64_t axis) {
        Var values(Tensor::from_vector<float>({static_cast<float>(off_value), static_cast<float>(on_value)}, {2}));
        return checked(nn::F::op("OneHot", {indices, nn::F::ints({depth}), values}, {{"axis", axis}}));
      },
      "indices"_a, "depth"_a, "on_value"_a = 1.0, "off_value"_a = 0.0, "axis"_a = -1);
  m.def("print_", &print_values, "ops.print: prints in PyNative now, in Graph mode whenever the compiled graph runs");
  root.def("cond", &cond, "pred"_a, "true_fn"_a, "false_fn"_a);
}

void bind_context(pyb::module_& m) {
  m.def(
      "_set_context",
      [](pyb::object mode, pyb::object device, pyb::object threads) {
        nn::Context ctx = nn::get_context();
        if (!mode.is_none()) ctx.mode = mode.cast<int>() == 0 ? nn::Mode::Graph : nn::Mode::PyNative;
        if (!device.is_none()) ctx.device = device.cast<std::string>();
        if (!threads.is_none()) ctx.threads = threads.cast<int>();
        nn::set_context(ctx);
      },
      "mode"_a = pyb::none(), "device"_a = pyb::none(), "threads"_a = pyb::none());
  m.def("_get_context", []() {
    nn::Context ctx = nn::get_context();
    pyb::dict d;
    d["mode"] = ctx.mode == nn::Mode::Graph ? 0 : 1;
    d["device"] = ctx.device;
    d["threads"] = ctx.threads;
    d["backend"] = nn::backend().name();
    return d;
  });
  m.def(
      "set_seed", [](uint64_t seed) { nn::manual_seed(seed); }, "seed"_a);
  // The C++ eager dispatch of one op, `iterations` times (the baseline of Python's per-op overhead).
  m.def("_time_eager_op", [](const std::string& op, const Vars& inputs, int64_t iterations) {
    pyb::gil_scoped_release nogil;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iterations; ++i) {
      Var out = nn::F::op(op, inputs);
      if (!out.ok()) return -1.0;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  m.def("compile_count", &compile_count, "graphs traced and compiled so far by ms.jit and Graph-mode cells");
}

}  // namespace ms::py
