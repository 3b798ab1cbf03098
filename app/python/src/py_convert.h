// NumPy <-> Tensor conversion of the binding (py_convert.cpp).
#pragma once

#include <optional>

#include "app/python/src/py_common.h"

namespace ms::py {

using namespace pybind11::literals;

// The interpreter can still take references back (not finalizing); _Py_IsFinalizing became public
// as Py_IsFinalizing in 3.13.
inline bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

pyb::dtype numpy_dtype(DType t);
std::optional<DType> dtype_of_numpy(const pyb::dtype& d);
// ms.float32, np.float32, "float32", np.dtype(...) -> DType (TypeError naming the value otherwise).
DType dtype_arg(pyb::handle h);
// A host Tensor over the array's memory when it is C-contiguous, aligned and writable (the array is
// kept alive by the Tensor), else over a copy.
Tensor tensor_from_numpy(pyb::array arr);
// The value on the host (copied from a device); a traced tensor raises naming the Python line.
Tensor host_tensor(const nn::Var& v);
// An array over the tensor's memory (bf16/f8: a float32 copy).
pyb::array tensor_to_numpy(const nn::Var& v);
// Tensor(input_data, dtype): Tensors, NumPy arrays, lists and Python numbers.
nn::Var make_tensor(pyb::handle data, pyb::handle dtype);

}  // namespace ms::py
