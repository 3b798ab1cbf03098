// _C._custom_op: a Python function as an op (the builder API's F::custom). compute(*arrays) gets
// NumPy arrays and returns one array (or a tuple). With infer(shapes, dtypes) -> (shapes, dtypes)
// the op traces into Graph mode as an ai.modescope.custom node and the compiled graph calls back
// into Python when it runs (the engine runs with the GIL released, the kernel takes it); without
// it the op runs in PyNative only and tracing it says so, naming the op.
#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/custom.h"

namespace ms::py {

namespace {

using nn::Var;
using nn::Vars;

pyb::tuple dims_of(const ir::ValueType& t) {
  if (!t.dims) return pyb::tuple(0);
  pyb::tuple dims(t.dims->size());
  for (size_t i = 0; i < t.dims->size(); ++i) dims[i] = (*t.dims)[i];
  return dims;
}

Expected<std::vector<Tensor>> call_compute(const pyb::object& compute, const std::string& name,
                                           const std::vector<Tensor>& inputs, int num_outputs) {
  pyb::gil_scoped_acquire gil;
  try {
    pyb::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = pyb::cast(Var(inputs[i])).attr("asnumpy")();
    pyb::object out = compute(*args);
    bool as_tuple = false;
    Vars vs = outputs_to_vars(out, "custom op '" + name + "'", &as_tuple);
    if (static_cast<int>(vs.size()) != num_outputs)
      return invalid_argument("custom op '" + name + "': compute returned " + std::to_string(vs.size()) +
                              " outputs, the op has " + std::to_string(num_outputs));
    std::vector<Tensor> result;
    for (Var& v : vs) {
      if (!v.ok()) return v.status();
      result.push_back(*v.tensor());
    }
    return result;
  } catch (pyb::error_already_set& e) {
    return stash_python_error(e);
  }
}

Expected<std::vector<ir::ValueType>> call_infer(const pyb::object& infer, const std::string& name,
                                                const std::vector<ir::ValueType>& inputs) {
  pyb::gil_scoped_acquire gil;
  try {
    pyb::list shapes, dtypes;
    for (const ir::ValueType& t : inputs) {
      shapes.append(dims_of(t));
      dtypes.append(pyb::cast(t.dtype));
    }
    pyb::tuple res = infer(shapes, dtypes).cast<pyb::tuple>();
    auto out_shapes = res[0].cast<std::vector<std::vector<int64_t>>>();
    auto out_dtypes = res[1].cast<std::vector<DType>>();
    if (out_shapes.size() != out_dtypes.size())
      return invalid_argument("custom op '" + name + "': infer gave " + std::to_string(out_shapes.size()) +
                              " shapes and " + std::to_string(out_dtypes.size()) + " dtypes");
    std::vector<ir::ValueType> types;
    for (size_t i = 0; i < out_shapes.size(); ++i) {
      ir::ValueType t;
      t.dtype = out_dtypes[i];
      t.dims = out_shapes[i];
      t.dim_params.assign(out_shapes[i].size(), "");
      types.push_back(std::move(t));
    }
    return types;
  } catch (pyb::error_already_set& e) {
    return stash_python_error(e);
  } catch (pyb::cast_error& e) {
    return invalid_argument("custom op '" + name + "': infer must return (shapes, dtypes): " + e.what());
  }
}

// The op as a callable: op(*tensors) -> Tensor or tuple.
class PyCustomOp {
 public:
  PyCustomOp(const std::string& name, pyb::object compute, pyb::object infer, int num_outputs)
      : num_outputs_(num_outputs),
        op_(nn::F::custom(
            name,
            [compute, name, num_outputs](const std::vector<Tensor>& in) {
              return call_compute(compute, name, in, num_outputs);
            },
            num_outputs)) {
    if (num_outputs < 1) throw pyb::value_error("custom op '" + name + "': num_outputs must be >= 1");
    if (!infer.is_none())
      op_.infer([infer, name](const std::vector<ir::ValueType>& in) { return call_infer(infer, name, in); });
  }

  pyb::object call(pyb::args args) {
    Vars in;
    for (pyb::handle a : args) in.push_back(to_var(a));
    Vars out;
    {
      pyb::gil_scoped_release nogil;
      out = op_(in);
    }
    checked(out);
    return vars_to_output(std::move(out), num_outputs_ > 1);
  }

 private:
  int num_outputs_;
  nn::F::CustomOp op_;
};

}  // namespace

void bind_custom(pyb::module_& m) {
  pyb::class_<PyCustomOp>(m, "_CustomOp")
      .def(pyb::init<const std::string&, pyb::object, pyb::object, int>(), pybind11::arg("name"),
           pybind11::arg("compute"), pybind11::arg("infer") = pyb::none(), pybind11::arg("num_outputs") = 1)
      .def("__call__", &PyCustomOp::call);
}

}  // namespace ms::py
