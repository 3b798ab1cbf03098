// PyCell: the engine Module behind a Python nn.Cell. Its forward runs the Python construct (GIL
// taken), so a Python cell is a Module like the C++ layers: it nests in SequentialCell/CellList,
// runs op by op (PyNative), is traced and compiled per input signature (GRAPH_MODE, @ms.jit on
// construct), and is trained by the engine's TrainStep, which binds its parameters.
#pragma once

#include <string>

#include "app/python/src/py_common.h"
#include "engine/frontend/nn/module.h"

namespace ms::py {

class PyCell : public nn::Module {
 public:
  explicit PyCell(std::string type) : type_(std::move(type)) {}
  // The last owner may be engine code running without the GIL (a C++ parent): the Python function
  // it holds is released under the GIL.
  ~PyCell() override;
  std::string type_name() const override { return type_; }
  nn::Vars forward_n(const nn::Vars& xs) override;

  void set_child(const std::string& name, std::shared_ptr<nn::Module> m) { set_module(name, std::move(m)); }
  void set_param(const std::string& name, const Tensor& t, bool buffer) { set_parameter(name, t, buffer); }
  // The parameter as construct should see it: the bound graph input inside a traced training
  // step, else the parameter itself (named in an active trace).
  nn::Var param_var(const std::string& name) const { return param(name); }

  // The Python object of this cell (none once it is gone).
  pybind11::handle self_handle() const;
  // construct, unwrapped from ms.jit (the jit is this module's: set_jit).
  pybind11::object construct_fn();

  bool returns_tuple = false;
  int jit_level = 1;  // of @ms.jit on construct (O1 otherwise)

 private:
  std::string type_;
  pybind11::object construct_;
};

// cell(*args): Tensors only go through the engine (Graph mode and jit compile per signature);
// other arguments call construct directly.
pybind11::object call_module(const std::shared_ptr<nn::Module>& self, pybind11::args args, pybind11::kwargs kwargs);
// Graph compiles of this module's calls so far.
int64_t module_compiles(const std::shared_ptr<nn::Module>& m);

}  // namespace ms::py
