// modescope._C: the native module of the Python package (see app/python/modescope/__init__.py).
#include "app/python/src/py_common.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Modescope's engine for Python: Tensor, cells, ops, jit, training";
  ms::py::bind_tensor(m);
  ms::py::bind_context(m);
  ms::py::bind_ops(m);
  ms::py::bind_cells(m);
  ms::py::bind_layers(m);
  ms::py::bind_jit(m);
  ms::py::bind_train(m);
  ms::py::bind_export(m);
  ms::py::bind_custom(m);
  ms::py::bind_dist(m);
}
