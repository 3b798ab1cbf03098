// ms.jit on a Python function: traced once per input signature by calling the function with
// traced Tensors (Python runs only then), compiled by the graph compiler at the configured jit
// level, cached; later calls with the same signature run the compiled graph without Python.
// Arguments that are not Tensors are constants of the trace: each distinct value has its cache.
#include <map>

#include "app/python/src/py_cell.h"
#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/nn/trace.h"

namespace ms::py {

namespace {

using nn::Var;
using nn::Vars;

class PyJit {
 public:
  PyJit(pyb::function fn, int level, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {
    config_.jit_level = static_cast<compiler::JitLevel>(level);
  }

  pyb::object call(pyb::args args, pyb::kwargs kwargs) {
    if (!kwargs.empty()) throw pyb::type_error("ms.jit function '" + name_ + "': pass arguments by position");
    if (eager_) return fn_(*args);
    try {
      return call_compiled(args);
    } catch (pyb::error_already_set& e) {
      if (!e.matches(eager_fallback_error())) throw;
      eager_ = true;
      caches_.clear();
      pyb::module_::import("sys").attr("stderr").attr("write")("note: ms.jit '" + name_ +
                                                               "': " + std::string(pyb::str(e.value())) + "\n");
      return fn_(*args);
    }
  }

  pyb::object call_compiled(pyb::args args) {
    Vars tensors;
    std::string constants;
    for (pyb::handle a : args) {
      if (is_tensor(a)) {
        tensors.push_back(a.cast<const Var&>());
        constants += "T,";
      } else {
        constants += std::string(pyb::repr(a)) + ",";
      }
    }
    // Inside another trace the function is simply traced through (one graph).
    if (nn::active_trace()) return fn_(*args);
    if (seen_version_ != weights_version()) {
      caches_.clear();
      seen_version_ = weights_version();
    }
    auto it = caches_.find(constants);
    if (it == caches_.end()) {
      // The call's shape: constants kept, Tensor positions marked (their values are not kept).
      pyb::tuple templ(args.size());
      std::vector<bool> is_input(args.size());
      for (size_t i = 0; i < args.size(); ++i) {
        is_input[i] = is_tensor(args[i]);
        templ[i] = is_input[i] ? pyb::none() : pyb::reinterpret_borrow<pyb::object>(args[i]);
      }
      auto fn = [this, templ, is_input](const Vars& xs) -> Vars { return run_python(templ, is_input, xs); };
      it = caches_.emplace(constants, std::make_unique<nn::GraphCache>(fn, config_, name_)).first;
    }
    nn::GraphCache& cache = *it->second;
    const int64_t before = cache.traces();
    Vars out;
    {
      pyb::gil_scoped_release nogil;
      out = cache.run(tensors);
    }
    const int64_t compiled = cache.traces() - before;
    compiles_ += compiled;
    add_compiles(compiled);
    checked(out);
    return vars_to_output(std::move(out), as_tuple_);
  }

  int64_t compiles() const { return compiles_; }
  bool eager() const { return eager_; }
  double last_compile_ms() const {
    double ms = 0;
    for (const auto& [k, c] : caches_) ms = std::max(ms, c->last_compile_ms());
    return ms;
  }
  size_t cached_signatures() const {
    size_t n = 0;
    for (const auto& [k, c] : caches_) n += c->size();
    return n;
  }
  const ir::Graph* last_graph() const {
    for (const auto& [k, c] : caches_)
      if (c->last_graph()) return c->last_graph();
    return nullptr;
  }

 private:
  // The traced call: Tensors of the template replaced by the trace's inputs, in order.
  Vars run_python(const pyb::tuple& templ, const std::vector<bool>& is_input, const Vars& xs) {
    pyb::gil_scoped_acquire gil;
    try {
      pyb::tuple args(templ.size());
      size_t k = 0;
      for (size_t i = 0; i < templ.size(); ++i)
        args[i] = is_input[i] ? pyb::cast(xs[k++]) : pyb::reinterpret_borrow<pyb::object>(templ[i]);
      pyb::object out = fn_(*args);
      return outputs_to_vars(out, "ms.jit function '" + name_ + "'", &as_tuple_);
    } catch (...) {
      return {Var::failed(current_exception_status("ms.jit function '" + name_ + "'"))};
    }
  }

  pyb::function fn_;
  std::string name_;
  nn::JitConfig config_;
  std::map<std::string, std::unique_ptr<nn::GraphCache>> caches_;
  bool as_tuple_ = false;
  bool eager_ = false;  // runs op by op (it takes gradients)
  int64_t compiles_ = 0;
  uint64_t seen_version_ = 0;
};

}  // namespace

void bind_jit(pyb::module_& m) {
  pyb::class_<PyJit>(m, "JitFunction")
      .def(pyb::init<pyb::function, int, std::string>(), "fn"_a, "jit_level"_a, "name"_a)
      .def("__call__", &PyJit::call)
      .def_property_readonly("compile_count", &PyJit::compiles,
                             "signatures traced and compiled so far (a cached call adds none)")
      .def_property_readonly("cached_signatures", &PyJit::cached_signatures)
      .def_property_readonly("runs_eagerly", [](const PyJit& j) { return j.eager(); })
      .def_property_readonly("last_compile_ms", &PyJit::last_compile_ms)
      .def_property_readonly("graph_nodes", [](const PyJit& j) -> int64_t {
        const ir::Graph* g = j.last_graph();
        return g ? static_cast<int64_t>(g->nodes().size()) : 0;
      });
}

}  // namespace ms::py
