// Shared by the binding sources of modescope._C: Tensor <-> Var conversion, errors as Python
// exceptions, and Python errors raised inside engine callbacks (a traced construct) carried back
// across the engine as a failed Var and raised again once the engine returns.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/frontend/nn/var.h"

namespace ms::nn::train {
class TrainStep;
}

namespace ms::py {

namespace pyb = pybind11;

// A Parameter: a Tensor with a name that a Cell trains (requires_grad) or keeps as state.
struct Parameter : nn::Var {
  std::string name;
  bool requires_grad = true;
};

// Raises the Status as a one-line Python exception (ValueError for invalid arguments and models,
// RuntimeError otherwise). A Python exception stashed by a callback is raised instead.
[[noreturn]] void raise_status(const Status& st);
// The Var, or the exception its error stands for.
nn::Var checked(nn::Var v);
nn::Vars checked(nn::Vars vs);
// Raises a stashed Python exception, if any (after the engine returned).
void rethrow_pending();

// Runs a Python callable from an engine callback (GIL taken): a Python exception is stashed and
// becomes a failed Var, so the engine unwinds by values and the binding raises it afterwards.
Status stash_python_error(pyb::error_already_set& e);
// Inside a catch block of such a callback: the exception being handled as a Status (a Python or a
// pybind11 exception stashed, any other one's message after `where`).
Status current_exception_status(const std::string& where);

// Tensor argument or Python value (number, list, ndarray, Tensor) as a Var. `like`: scalars take
// its dtype.
bool is_tensor(pyb::handle h);
nn::Var to_var(pyb::handle h, const nn::Var* like = nullptr);
// Python return value of a construct / function: a Tensor, or a tuple/list of them.
nn::Vars outputs_to_vars(pyb::handle out, const std::string& what, bool* was_tuple);
pyb::object vars_to_output(nn::Vars vs, bool as_tuple);

// File and line of the Python code running now ("model.py:12"), for errors naming the line.
std::string python_location();

// Parameters changed in place (optimizer steps, set_data, training steps) bump this version:
// compiled graphs captured the old values and are dropped before the next call.
uint64_t weights_version();
void bump_weights_version();

// Raised while tracing by what only runs op by op (value_and_grad): ms.jit then runs the function
// in PyNative, saying so once.
PyObject* eager_fallback_error();

// A training step made data parallel when set_auto_parallel_context asked for it (dist_bind.cpp).
void apply_data_parallel(nn::train::TrainStep& step);

// Graphs traced and compiled by this process's jit calls and Graph-mode cell calls.
int64_t compile_count();
void add_compiles(int64_t n);

void bind_tensor(pyb::module_& m);
void bind_ops(pyb::module_& m);
void bind_context(pyb::module_& m);
void bind_cells(pyb::module_& m);
void bind_layers(pyb::module_& m);
void bind_jit(pyb::module_& m);
void bind_train(pyb::module_& m);
void bind_export(pyb::module_& m);
void bind_custom(pyb::module_& m);
void bind_dist(pyb::module_& m);

}  // namespace ms::py
