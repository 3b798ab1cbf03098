// ms.Tensor (a Var: a concrete tensor in PyNative, a traced value inside ms.jit / Graph mode),
// ms.Parameter, the dtypes, and the Tensor's operators and methods.
#include <pybind11/operators.h>

#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/functional.h"

namespace ms::py {

namespace {

PyObject* g_graph_mode_error = nullptr;

// `if x:` / float(x) / int(x) on a traced value: the Python line and the way out.
[[noreturn]] void raise_traced_control(const nn::Var& v, const std::string& what) {
  std::string msg = python_location() + ": " + what + " on a Tensor ('" + v.name() +
                    "') while tracing for Graph mode (ms.jit or GRAPH_MODE): its value is known only when the "
                    "compiled graph runs; write the branch as ms.cond(pred, true_fn, false_fn), or run in "
                    "PyNative mode";
  PyErr_SetString(g_graph_mode_error, msg.c_str());
  throw pyb::error_already_set();
}

double scalar_value(const nn::Var& v, const char* what) {
  if (v.is_symbolic()) raise_traced_control(v, what);
  Tensor t = host_tensor(v);
  if (t.numel() != 1)
    throw pyb::value_error(std::string(what) + " needs a Tensor of one element, got shape " +
                           shape_to_string(t.shape()));
  return t.at_double(0);
}

bool is_float_value_dtype(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

// a <op> b with NumPy-like scalars; an int tensor meeting a Python float computes in float32.
nn::Var binary(const char* op, const nn::Var& a, pyb::handle b, bool reflected) {
  nn::Var x = a;
  if (PyFloat_Check(b.ptr()) && !is_float_value_dtype(a.dtype())) x = checked(nn::F::cast(a, DType::F32));
  nn::Var y = to_var(b, &x);
  return checked(reflected ? nn::F::op(op, {y, x}) : nn::F::op(op, {x, y}));
}

std::vector<int64_t> axes_arg(pyb::handle axis) {
  if (axis.is_none()) return {};
  if (PyLong_Check(axis.ptr())) return {axis.cast<int64_t>()};
  return axis.cast<std::vector<int64_t>>();
}

// x[key] with ints and slices per axis (an int drops its axis), or a Tensor of indices (Gather on
// axis 0): one Slice (and a Reshape for the dropped axes), in both modes.
nn::Var index_tensor(const nn::Var& x, pyb::handle key) {
  if (is_tensor(key)) return checked(nn::F::gather(x, key.cast<const nn::Var&>(), 0));
  pyb::tuple keys = pyb::isinstance<pyb::tuple>(key) ? pyb::reinterpret_borrow<pyb::tuple>(key) : pyb::make_tuple(key);
  const Shape shape = x.shape();
  if (keys.size() > shape.size())
    throw pyb::index_error("too many indices (" + std::to_string(keys.size()) + ") for a Tensor of rank " +
                           std::to_string(shape.size()));
  std::vector<int64_t> starts, ends, axes, steps;
  Shape out;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    const int64_t n = shape[axis];
    if (axis >= keys.size()) {
      out.push_back(n);
      continue;
    }
    pyb::handle k = keys[axis];
    if (PyLong_Check(k.ptr())) {
      int64_t i = k.cast<int64_t>();
      if (i < -n || i >= n)
        throw pyb::index_error("index " + std::to_string(i) + " out of range for axis " + std::to_string(axis) +
                               " of size " + std::to_string(n));
      i = i < 0 ? i + n : i;
      starts.push_back(i), ends.push_back(i + 1), axes.push_back(static_cast<int64_t>(axis)), steps.push_back(1);
    } else if (PySlice_Check(k.ptr())) {
      Py_ssize_t start = 0, stop = 0, step = 1;
      if (PySlice_Unpack(k.ptr(), &start, &stop, &step) < 0) throw pyb::error_already_set();
      const Py_ssize_t len = PySlice_AdjustIndices(static_cast<Py_ssize_t>(n), &start, &stop, step);
      starts.push_back(start), ends.push_back(stop < 0 ? INT64_MIN : stop);
      axes.push_back(static_cast<int64_t>(axis)), steps.push_back(step);
      out.push_back(len);
    } else {
      throw pyb::type_error("Tensor index: ints, slices or a Tensor of indices, got " +
                            std::string(pyb::str(k.get_type().attr("__name__"))));
    }
  }
  if (starts.empty()) return x;
  nn::Var y =
      checked(nn::F::op("Slice", {x, nn::F::ints(starts), nn::F::ints(ends), nn::F::ints(axes), nn::F::ints(steps)}));
  if (out.size() != shape.size()) y = checked(nn::F::reshape(y, out));
  return y;
}

}  // namespace

// ReduceSum takes its axes as an input (opset 13+), the others as an attribute (opset 17).
nn::Var reduce(const char* op, const nn::Var& x, pyb::handle axis, bool keepdims) {
  std::vector<int64_t> axes = axes_arg(axis);
  nn::F::Attrs attrs{{"keepdims", int64_t{keepdims ? 1 : 0}}};
  nn::Vars in{x};
  if (std::string(op) == "ReduceSum") {
    if (!axes.empty()) in.push_back(nn::F::ints(axes));
  } else if (!axes.empty()) {
    attrs["axes"] = axes;
  }
  return checked(nn::F::op(op, in, std::move(attrs)));
}

std::vector<int64_t> shape_arg(pyb::args args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return args[0].cast<std::vector<int64_t>>();
  return args.cast<std::vector<int64_t>>();
}

pyb::object graph_mode_error_type() { return pyb::reinterpret_borrow<pyb::object>(g_graph_mode_error); }

const char* mindspore_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "Float32";
    case DType::F64: return "Float64";
    case DType::F16: return "Float16";
    case DType::BF16: return "BFloat16";
    case DType::I8: return "Int8";
    case DType::I16: return "Int16";
    case DType::I32: return "Int32";
    case DType::I64: return "Int64";
    case DType::U8: return "UInt8";
    case DType::U16: return "UInt16";
    case DType::U32: return "UInt32";
    case DType::U64: return "UInt64";
    case DType::Bool: return "Bool";
    default: return "Undefined";
  }
}

std::string tensor_repr(const nn::Var& v) {
  std::string shape = "[";
  const Shape s = v.shape();
  for (size_t i = 0; i < s.size(); ++i) shape += (i ? ", " : "") + std::to_string(s[i]);
  shape += "]";
  const std::string head = "Tensor(shape=" + shape + ", dtype=" + mindspore_dtype_name(v.dtype());
  if (v.is_symbolic()) return head + ", traced '" + v.name() + "')";
  return head + ", value=\n" + std::string(pyb::str(tensor_to_numpy(v))) + ")";
}

void bind_tensor(pyb::module_& m) {
  g_graph_mode_error = PyErr_NewExceptionWithDoc(
      "modescope._C.GraphModeError",
      "Python control flow on a traced Tensor (ms.jit / GRAPH_MODE): use ms.cond, or PyNative mode.",
      PyExc_RuntimeError, nullptr);
  m.add_object("GraphModeError", pyb::handle(g_graph_mode_error));

  pyb::enum_<DType> dt(m, "dtype");
  dt.value("float32", DType::F32)
      .value("float64", DType::F64)
      .value("float16", DType::F16)
      .value("bfloat16", DType::BF16)
      .value("int8", DType::I8)
      .value("int16", DType::I16)
      .value("int32", DType::I32)
      .value("int64", DType::I64)
      .value("uint8", DType::U8)
      .value("uint16", DType::U16)
      .value("uint32", DType::U32)
      .value("uint64", DType::U64)
      .value("bool_", DType::Bool);
  // Replaced, not overloaded (an overload would come after enum_'s own): MindSpore's names.
  dt.attr("__repr__") =
      pyb::cpp_function([](DType t) { return std::string(mindspore_dtype_name(t)); }, pyb::is_method(dt));
  dt.attr("__str__") =
      pyb::cpp_function([](DType t) { return std::string(mindspore_dtype_name(t)); }, pyb::is_method(dt));
  dt.def_property_readonly("itemsize", [](DType t) { return dtype_size(t); });

  pyb::class_<nn::Var> t(m, "Tensor", pyb::buffer_protocol());
  t.def(pyb::init([](pyb::object input_data, pyb::object dtype) { return make_tensor(input_data, dtype); }),
        "input_data"_a = pyb::none(), "dtype"_a = pyb::none());
  t.def_buffer([](nn::Var& v) -> pyb::buffer_info {
    Tensor h = host_tensor(v);
    pyb::array a = tensor_to_numpy(nn::Var(h));
    if (h.dtype() == DType::BF16) throw pyb::type_error("a bfloat16 Tensor has no buffer; use asnumpy()");
    pyb::buffer_info info = a.request(true);
    return info;
  });
  t.def("asnumpy", &tensor_to_numpy, "The values as a NumPy array sharing the tensor's memory (host tensors).");
  t.def("numpy", &tensor_to_numpy);
  t.def(
      "__array__",
      [](const nn::Var& v, pyb::object dtype) -> pyb::object {
        pyb::array a = tensor_to_numpy(v);
        if (dtype.is_none()) return a;
        return a.attr("astype")(dtype);
      },
      "dtype"_a = pyb::none());
  t.def_property_readonly("shape", [](const nn::Var& v) {
    const Shape s = checked(v).shape();
    return pyb::tuple(pyb::cast(s));
  });
  t.def_property_readonly("dtype", [](const nn::Var& v) { return checked(v).dtype(); });
  t.def_property_readonly("ndim", [](const nn::Var& v) { return v.rank(); });
  t.def_property_readonly("size", [](const nn::Var& v) { return numel(v.shape()); });
  t.def_property_readonly("nbytes", [](const nn::Var& v) { return numel(v.shape()) * dtype_size(v.dtype()); });
  t.def_property_readonly("itemsize", [](const nn::Var& v) { return dtype_size(v.dtype()); });
  t.def_property_readonly("is_traced", &nn::Var::is_symbolic);
  t.def("dim", [](const nn::Var& v) { return v.rank(); });
  t.def("__len__", [](const nn::Var& v) {
    if (v.rank() == 0) throw pyb::type_error("len() of a 0-d Tensor");
    return v.dim(0);
  });
  t.def("__getitem__", &index_tensor);
  t.def("__repr__", &tensor_repr);
  t.def("__str__", [](const nn::Var& v) {
    if (v.is_symbolic()) return tensor_repr(v);
    return std::string(pyb::str(tensor_to_numpy(v)));
  });
  t.def("__bool__", [](const nn::Var& v) { return scalar_value(v, "a Python `if`/`while`/bool()") != 0.0; });
  t.def("__float__", [](const nn::Var& v) { return scalar_value(v, "float()"); });
  t.def("__int__", [](const nn::Var& v) { return static_cast<int64_t>(scalar_value(v, "int()")); });
  t.def("__index__", [](const nn::Var& v) { return static_cast<int64_t>(scalar_value(v, "an index")); });
  t.def("item", [](const nn::Var& v) -> pyb::object {
    const double x = scalar_value(v, "item()");
    if (is_float_value_dtype(v.dtype())) return pyb::float_(x);
    if (v.dtype() == DType::Bool) return pyb::bool_(x != 0.0);
    return pyb::int_(static_cast<int64_t>(x));
  });
  t.def("__hash__", [](pyb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  struct Op {
    const char* py;
    const char* onnx;
    bool reflected;
  };
  static const Op kOps[] = {
      {"__add__", "Add", false},        {"__radd__", "Add", true},     {"__sub__", "Sub", false},
      {"__rsub__", "Sub", true},        {"__mul__", "Mul", false},     {"__rmul__", "Mul", true},
      {"__truediv__", "Div", false},    {"__rtruediv__", "Div", true}, {"__matmul__", "MatMul", false},
      {"__rmatmul__", "MatMul", true},  {"__pow__", "Pow", false},     {"__rpow__", "Pow", true},
      {"__gt__", "Greater", false},     {"__lt__", "Less", false},     {"__ge__", "GreaterOrEqual", false},
      {"__le__", "LessOrEqual", false}, {"__mod__", "Mod", false},
  };
  for (const Op& op : kOps) {
    const char* onnx = op.onnx;
    const bool refl = op.reflected;
    t.def(
        op.py, [onnx, refl](const nn::Var& a, pyb::handle b) { return binary(onnx, a, b, refl); }, pyb::is_operator());
  }
  t.def(
      "__eq__",
      [](const nn::Var& a, pyb::handle b) -> pyb::object {
        if (b.is_none()) return pyb::bool_(false);
        return pyb::cast(binary("Equal", a, b, false));
      },
      pyb::is_operator());
  t.def(
      "__ne__",
      [](const nn::Var& a, pyb::handle b) -> pyb::object {
        if (b.is_none()) return pyb::bool_(true);
        return pyb::cast(checked(nn::F::op("Not", {binary("Equal", a, b, false)})));
      },
      pyb::is_operator());
  t.def("__neg__", [](const nn::Var& a) { return checked(nn::F::neg(a)); });
  t.def("__pos__", [](const nn::Var& a) { return a; });
  t.def("__abs__", [](const nn::Var& a) { return checked(nn::F::op("Abs", {a})); });

  t.def(
      "sum", [](const nn::Var& x, pyb::object axis, bool keepdims) { return reduce("ReduceSum", x, axis, keepdims); },
      "axis"_a = pyb::none(), "keepdims"_a = false);
  t.def(
      "mean", [](const nn::Var& x, pyb::object axis, bool keepdims) { return reduce("ReduceMean", x, axis, keepdims); },
      "axis"_a = pyb::none(), "keep_dims"_a = false);
  t.def(
      "max", [](const nn::Var& x, pyb::object axis, bool keepdims) { return reduce("ReduceMax", x, axis, keepdims); },
      "axis"_a = pyb::none(), "keepdims"_a = false);
  t.def(
      "min", [](const nn::Var& x, pyb::object axis, bool keepdims) { return reduce("ReduceMin", x, axis, keepdims); },
      "axis"_a = pyb::none(), "keepdims"_a = false);
  t.def("reshape", [](const nn::Var& x, pyb::args shape) { return checked(nn::F::reshape(x, shape_arg(shape))); });
  t.def("view", [](const nn::Var& x, pyb::args shape) { return checked(nn::F::reshape(x, shape_arg(shape))); });
  t.def("flatten", [](const nn::Var& x) { return checked(nn::F::reshape(x, {-1})); });
  t.def("transpose", [](const nn::Var& x, pyb::args perm) {
    std::vector<int64_t> p = shape_arg(perm);
    if (p.empty())
      for (int64_t i = x.rank(); i-- > 0;) p.push_back(i);
    return checked(nn::F::transpose(x, p));
  });
  t.def_property_readonly("T", [](const nn::Var& x) {
    std::vector<int64_t> p;
    for (int64_t i = x.rank(); i-- > 0;) p.push_back(i);
    return checked(nn::F::transpose(x, p));
  });
  t.def("astype", [](const nn::Var& x, pyb::handle dtype) { return checked(nn::F::cast(x, dtype_arg(dtype))); });
  t.def("to", [](const nn::Var& x, pyb::handle dtype) { return checked(nn::F::cast(x, dtype_arg(dtype))); });
  t.def("copy", [](const nn::Var& x) { return nn::Var(host_tensor(x).clone()); });
  t.def("abs", [](const nn::Var& a) { return checked(nn::F::op("Abs", {a})); });
  t.def("exp", [](const nn::Var& a) { return checked(nn::F::exp(a)); });
  t.def("sqrt", [](const nn::Var& a) { return checked(nn::F::sqrt(a)); });

  // Parameter(default_input, name=None, requires_grad=True): a named Tensor a Cell owns.
  pyb::class_<Parameter, nn::Var> p(m, "Parameter");
  p.def(pyb::init([](pyb::object data, pyb::object name, bool requires_grad) {
          Parameter prm;
          static_cast<nn::Var&>(prm) = make_tensor(data, pyb::none());
          if (!name.is_none()) prm.name = name.cast<std::string>();
          prm.requires_grad = requires_grad;
          return prm;
        }),
        "default_input"_a, "name"_a = pyb::none(), "requires_grad"_a = true);
  p.def_readwrite("name", &Parameter::name);
  p.def_readwrite("requires_grad", &Parameter::requires_grad);
  p.def("set_data", [](Parameter& self, pyb::handle data) {
    nn::Var v = to_var(data, &self);
    Tensor src = host_tensor(v), dst = host_tensor(self);
    if (src.dtype() != dst.dtype() || src.shape() != dst.shape())
      throw pyb::value_error("Parameter '" + self.name + "'.set_data: " + std::string(dtype_name(src.dtype())) +
                             shape_to_string(src.shape()) + " does not fit " + std::string(dtype_name(dst.dtype())) +
                             shape_to_string(dst.shape()));
    if (src.raw() != dst.raw()) std::memmove(dst.raw(), src.raw(), dst.nbytes());
    bump_weights_version();
    return self;
  });
  p.def("__repr__", [](const Parameter& self) {
    return "Parameter (name=" + self.name + ", shape=" + std::string(pyb::str(pyb::cast(self.shape()))) +
           ", dtype=" + mindspore_dtype_name(self.dtype()) +
           ", requires_grad=" + (self.requires_grad ? "True" : "False") + ")";
  });
}

}  // namespace ms::py
