// Errors across the binding: Status -> Python exception, Python exceptions carried through engine
// callbacks, the source line of the running Python code, and the process-wide counters.
#include <atomic>
#include <optional>

#include "app/python/src/py_common.h"
// After Python.h (through pybind11).
#include <frameobject.h>

namespace ms::py {

namespace {
// One pending Python exception per thread: set by a callback, raised when the engine returns.
thread_local std::optional<pyb::error_already_set> t_pending_error;
std::atomic<uint64_t> g_weights_version{0};
std::atomic<int64_t> g_compiles{0};
}  // namespace

void rethrow_pending() {
  if (t_pending_error) {
    pyb::error_already_set e = std::move(*t_pending_error);
    t_pending_error.reset();
    throw e;
  }
}

[[noreturn]] void raise_status(const Status& st) {
  rethrow_pending();
  std::string msg = st.message();
  for (char& c : msg)
    if (c == '\n') c = ' ';
  switch (st.code()) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::InvalidModel: throw pyb::value_error(msg);
    default: throw std::runtime_error(msg);
  }
}

nn::Var checked(nn::Var v) {
  if (!v.ok()) raise_status(v.status());
  return v;
}

nn::Vars checked(nn::Vars vs) {
  for (const nn::Var& v : vs)
    if (!v.ok()) raise_status(v.status());
  return vs;
}

Status stash_python_error(pyb::error_already_set& e) {
  std::string what = e.what();
  if (!t_pending_error) t_pending_error.emplace(std::move(e));
  return invalid_argument("Python error: " + what);
}

Status current_exception_status(const std::string& where) {
  try {
    throw;
  } catch (pyb::error_already_set& e) {
    return stash_python_error(e);
  } catch (pyb::builtin_exception& e) {  // TypeError, ValueError, ... thrown from C++
    e.set_error();
    pyb::error_already_set python_error;
    return stash_python_error(python_error);
  } catch (std::exception& e) {
    return invalid_argument(where + ": " + e.what());
  }
}

std::string python_location() {
  PyFrameObject* f = PyEval_GetFrame();
  if (!f) return "<unknown>";
  PyCodeObject* code = PyFrame_GetCode(f);
  std::string file = pyb::str(code->co_filename);
  Py_DECREF(code);
  return file + ":" + std::to_string(PyFrame_GetLineNumber(f));
}

uint64_t weights_version() { return g_weights_version.load(std::memory_order_relaxed); }
void bump_weights_version() { g_weights_version.fetch_add(1, std::memory_order_relaxed); }
int64_t compile_count() { return g_compiles.load(std::memory_order_relaxed); }
void add_compiles(int64_t n) { g_compiles.fetch_add(n, std::memory_order_relaxed); }

}  // namespace ms::py
