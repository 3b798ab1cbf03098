// Values between Python and the engine: NumPy arrays <-> host Tensors (memory shared where the
// layout allows), Python numbers and lists, and a construct's return value <-> Vars.
#include "app/python/src/py_convert.h"

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"

namespace ms::py {

namespace {

// Drops the array a Tensor borrowed its memory from. Buffers may die on an engine thread, without
// the GIL; at interpreter exit nothing is released any more.
void release_numpy_owner(PyObject* owner) {
  if (!python_alive()) return;
  pyb::gil_scoped_acquire gil;
  Py_DECREF(owner);
}

}  // namespace

pyb::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::F32: return pyb::dtype::of<float>();
    case DType::F64: return pyb::dtype::of<double>();
    case DType::F16: return pyb::dtype("float16");
    case DType::I8: return pyb::dtype::of<int8_t>();
    case DType::I16: return pyb::dtype::of<int16_t>();
    case DType::I32: return pyb::dtype::of<int32_t>();
    case DType::I64: return pyb::dtype::of<int64_t>();
    case DType::U8: return pyb::dtype::of<uint8_t>();
    case DType::U16: return pyb::dtype::of<uint16_t>();
    case DType::U32: return pyb::dtype::of<uint32_t>();
    case DType::U64: return pyb::dtype::of<uint64_t>();
    case DType::Bool: return pyb::dtype::of<bool>();
    default: throw pyb::type_error("no NumPy dtype for " + std::string(dtype_name(t)));
  }
}

std::optional<DType> dtype_of_numpy(const pyb::dtype& d) {
  const auto size = d.itemsize();
  switch (d.kind()) {
    case 'f': return size == 4 ? DType::F32 : size == 8 ? DType::F64 : size == 2 ? DType::F16 : std::optional<DType>{};
    case 'i':
      return size == 1   ? DType::I8
             : size == 2 ? DType::I16
             : size == 4 ? DType::I32
             : size == 8 ? DType::I64
                         : std::optional<DType>{};
    case 'u':
      return size == 1   ? DType::U8
             : size == 2 ? DType::U16
             : size == 4 ? DType::U32
             : size == 8 ? DType::U64
                         : std::optional<DType>{};
    case 'b': return DType::Bool;
    default: return std::nullopt;
  }
}

DType dtype_arg(pyb::handle h) {
  if (pyb::isinstance<DType>(h)) return h.cast<DType>();
  pyb::dtype d;
  try {
    d = pyb::dtype::from_args(pyb::reinterpret_borrow<pyb::object>(h));
  } catch (pyb::error_already_set&) {
    throw pyb::type_error("not a dtype: " + std::string(pyb::repr(h)));
  }
  auto t = dtype_of_numpy(d);
  if (!t) throw pyb::type_error("dtype " + std::string(pyb::str(d)) + " has no Tensor dtype");
  return *t;
}

Tensor tensor_from_numpy(pyb::array arr) {
  auto t = dtype_of_numpy(arr.dtype());
  if (!t) throw pyb::type_error("NumPy dtype " + std::string(pyb::str(arr.dtype())) + " has no Tensor dtype");
  const int flags = pyb::array::c_style;
  const bool shareable =
      (arr.flags() & flags) && arr.writeable() && (arr.flags() & pyb::detail::npy_api::NPY_ARRAY_ALIGNED_);
  if (!shareable) arr = pyb::array::ensure(pyb::module_::import("numpy").attr("array")(arr, "copy"_a = true), flags);
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  PyObject* owner = arr.ptr();
  Py_INCREF(owner);
  auto buffer = std::make_shared<Buffer>(arr.mutable_data(), static_cast<size_t>(arr.nbytes()), Device{},
                                         [owner](void*, size_t) { release_numpy_owner(owner); });
  return Tensor(std::move(buffer), *t, std::move(shape));
}

Tensor host_tensor(const nn::Var& v) {
  if (v.is_symbolic())
    throw pyb::value_error(python_location() + ": tensor '" + v.name() +
                           "' is traced for Graph mode and has no value yet; return it from the function, or "
                           "print it with ops.print");
  Tensor t = *checked(v).tensor();
  if (!t.device().is_cpu()) {
    Tensor host = Tensor::empty(t.dtype(), t.shape());
    Status st = nn::backend().copy_to_host(t, host);
    if (!st.is_ok()) raise_status(st);
    t = host;
  }
  return t;
}

pyb::array tensor_to_numpy(const nn::Var& v) {
  Tensor t = host_tensor(v);
  if (t.dtype() == DType::BF16 || t.dtype() == DType::F8E4M3FN || t.dtype() == DType::F8E5M2)
    t = host_tensor(checked(nn::F::cast(nn::Var(t), DType::F32)));
  const pyb::dtype dt = numpy_dtype(t.dtype());
  std::vector<pyb::ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<pyb::ssize_t> strides(shape.size());
  pyb::ssize_t stride = static_cast<pyb::ssize_t>(dtype_size(t.dtype()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  if (!t.buffer() || t.numel() == 0) return pyb::array(dt, shape, strides);
  auto* keep = new std::shared_ptr<Buffer>(t.buffer());
  pyb::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<Buffer>*>(p); });
  return pyb::array(dt, shape, strides, t.raw(), base);
}

nn::Var make_tensor(pyb::handle data, pyb::handle dtype) {
  const bool has_dtype = !dtype.is_none();
  const DType want = has_dtype ? dtype_arg(dtype) : DType::Undefined;
  if (is_tensor(data)) {
    const nn::Var& v = data.cast<const nn::Var&>();
    if (!has_dtype || v.dtype() == want) return nn::Var(*checked(v).tensor());
    return checked(nn::F::cast(v, want));
  }
  if (data.is_none()) throw pyb::type_error("Tensor: input_data is None");
  pyb::module_ np = pyb::module_::import("numpy");
  const bool is_array = pyb::isinstance<pyb::array>(data);
  pyb::array arr = pyb::reinterpret_borrow<pyb::array>(np.attr("asarray")(data));
  // Python floats and lists of them are float32, as in MindSpore; ints int64; NumPy arrays keep theirs.
  DType target = want;
  if (!has_dtype) {
    auto own = dtype_of_numpy(arr.dtype());
    if (!own)
      throw pyb::type_error("Tensor: data of NumPy dtype " + std::string(pyb::str(arr.dtype())) + " (" +
                            std::string(pyb::repr(data)).substr(0, 60) + ") is not numeric");
    target = (!is_array && *own == DType::F64) ? DType::F32 : *own;
  }
  if (target == DType::BF16) {
    arr = pyb::reinterpret_borrow<pyb::array>(np.attr("asarray")(arr, "dtype"_a = "float32"));
    return checked(nn::F::cast(nn::Var(tensor_from_numpy(arr)), DType::BF16));
  }
  pyb::dtype np_target = numpy_dtype(target);
  if (!arr.dtype().is(np_target) && !np_target.equal(arr.dtype()))
    arr = pyb::reinterpret_borrow<pyb::array>(np.attr("asarray")(arr, "dtype"_a = np_target));
  return nn::Var(tensor_from_numpy(arr));
}

bool is_tensor(pyb::handle h) {
  // The registered type, looked up once (pybind11's isinstance looks it up by typeid every call).
  static PyTypeObject* const type = reinterpret_cast<PyTypeObject*>(pyb::type::of<nn::Var>().ptr());
  return PyObject_TypeCheck(h.ptr(), type);
}

nn::Var to_var(pyb::handle h, const nn::Var* like) {
  if (is_tensor(h)) return h.cast<const nn::Var&>();
  if (like && (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()))) {
    const DType t = like->dtype();
    const bool float_like = t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
    if (PyFloat_Check(h.ptr()) && !float_like) return nn::F::scalar(h.cast<double>(), DType::F32);
    return nn::F::scalar(h.cast<double>(), t == DType::Undefined ? DType::F32 : t);
  }
  return make_tensor(h, pyb::none());
}

nn::Vars outputs_to_vars(pyb::handle out, const std::string& what, bool* was_tuple) {
  nn::Vars vs;
  if (is_tensor(out)) {
    if (was_tuple) *was_tuple = false;
    vs.push_back(out.cast<const nn::Var&>());
    return vs;
  }
  if (pyb::isinstance<pyb::tuple>(out) || pyb::isinstance<pyb::list>(out)) {
    if (was_tuple) *was_tuple = true;
    for (pyb::handle item : out) {
      if (!is_tensor(item))
        throw pyb::type_error(what + " returned a " + std::string(pyb::str(item.get_type().attr("__name__"))) +
                              " inside its tuple; only Tensors can be returned");
      vs.push_back(item.cast<const nn::Var&>());
    }
    if (vs.empty()) throw pyb::type_error(what + " returned an empty tuple");
    return vs;
  }
  throw pyb::type_error(what + " returned " + std::string(pyb::str(out.get_type().attr("__name__"))) +
                        ", not a Tensor or a tuple of Tensors");
}

pyb::object vars_to_output(nn::Vars vs, bool as_tuple) {
  if (vs.size() == 1 && !as_tuple) return pyb::cast(std::move(vs[0]));
  pyb::tuple t(vs.size());
  for (size_t i = 0; i < vs.size(); ++i) t[i] = pyb::cast(std::move(vs[i]));
  return t;
}

}  // namespace ms::py
