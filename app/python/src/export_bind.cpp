// _C._export_onnx: a Python function (a Cell call, a jitted body) traced for example inputs into a
// graph and written as an ONNX model, so ms.profile can hand it to modescope-cli (both modes,
// profiled, a session file) and the desktop app can open it. Parameters become initializers.
#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::py {

namespace {

void export_onnx(pyb::function fn, pyb::list inputs, const std::string& path, const std::string& graph_name) {
  std::vector<ir::ValueType> types;
  nn::TraceSpec spec;
  spec.graph_name = graph_name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_tensor(inputs[i])) throw pyb::type_error("profile: input " + std::to_string(i) + " is not a Tensor");
    const nn::Var& x = inputs[i].cast<const nn::Var&>();
    types.push_back(nn::static_type(x.dtype(), x.shape()));
    spec.input_names.push_back("input_" + std::to_string(i));
  }
  nn::Fn traced = [fn](const nn::Vars& xs) -> nn::Vars {
    pyb::gil_scoped_acquire gil;
    try {
      pyb::tuple args(xs.size());
      for (size_t i = 0; i < xs.size(); ++i) args[i] = pyb::cast(xs[i]);
      bool as_tuple = false;
      return outputs_to_vars(fn(*args), "profile", &as_tuple);
    } catch (pyb::error_already_set& e) {
      return {nn::Var::failed(stash_python_error(e))};
    }
  };
  Expected<ir::Graph> g = invalid_argument("not traced");
  {
    pyb::gil_scoped_release nogil;
    g = nn::trace_function(traced, types, spec);
  }
  rethrow_pending();
  if (!g) raise_status(g.status());
  const Status st = onnx_io::save_model(*g, path);
  if (!st.is_ok()) raise_status(st);
}

}  // namespace

void bind_export(pyb::module_& m) {
  m.def("_export_onnx", &export_onnx, pybind11::arg("fn"), pybind11::arg("inputs"), pybind11::arg("path"),
        pybind11::arg("graph_name") = "main", "Trace fn(*inputs) and write the graph as an ONNX model");
}

}  // namespace ms::py
