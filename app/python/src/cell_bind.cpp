// The Cell classes: _C.Module (every cell: call, parameters, training mode), _C.CellBase (the
// base of Python's nn.Cell: a PyCell), SequentialCell and CellList.
#include <unordered_map>

#include "app/python/src/py_cell.h"
#include "app/python/src/py_convert.h"
#include "engine/frontend/nn/autocast.h"
#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/trace.h"

namespace ms::py {

namespace {

using nn::Var;
using nn::Vars;

// Per module (the weak pointer tells a module from a later one at the same address): the weights
// version its compiled graphs were made at, and its compiles.
struct CellRecord {
  std::weak_ptr<nn::Module> module;
  uint64_t version = 0;
  int64_t compiles = 0;
};
std::unordered_map<const nn::Module*, CellRecord> g_cell_records;

CellRecord& record_of(const std::shared_ptr<nn::Module>& m) {
  CellRecord& r = g_cell_records[m.get()];
  if (r.module.lock() != m) r = CellRecord{m, weights_version(), 0};
  return r;
}

pyb::object make_parameter(const std::string& name, const Tensor& t, bool trainable) {
  Parameter p;
  static_cast<Var&>(p) = Var(t);
  p.name = name;
  p.requires_grad = trainable;
  return pyb::cast(std::move(p));
}

pyb::list parameters(nn::Module& m, int which) {  // which: 1 trainable, 0 buffers, 2 all
  pyb::list out;
  for (const auto& slot : m.parameter_slots())
    if (which == 2 || (which == 1) == !slot.buffer) out.append(make_parameter(slot.name, *slot.tensor, !slot.buffer));
  return out;
}

void cells_and_names(const std::shared_ptr<nn::Module>& m, const std::string& prefix, pyb::list& out) {
  out.append(pyb::make_tuple(prefix, pyb::cast(m)));
  for (const auto& [n, c] : m->children()) cells_and_names(c, prefix.empty() ? n : prefix + "." + n, out);
}

std::string describe_tree(const nn::Module& m, const std::string& indent) {
  std::string s = m.type_name() + "<";
  if (m.children().empty()) return s + ">";
  s += "\n";
  for (const auto& [n, c] : m.children()) s += indent + "  (" + n + "): " + describe_tree(*c, indent + "  ") + "\n";
  return s + indent + ">";
}

// Compiled graphs captured the parameters: after an in-place update they are dropped.
void sync_weights(nn::Module& m, CellRecord& r) {
  const uint64_t now = weights_version();
  if (r.version != now) {
    nn::clear_graph_caches(m);
    r.version = now;
  }
}

// Child i of a SequentialCell / CellList (negative: from the end).
std::shared_ptr<nn::Module> child_at(const nn::Module& m, int64_t i, const char* what) {
  const int64_t n = static_cast<int64_t>(m.children().size());
  if (i < -n || i >= n) throw pyb::index_error(std::string(what) + " index " + std::to_string(i) + " out of range");
  return m.children()[static_cast<size_t>(i < 0 ? i + n : i)].second;
}

// construct as Graph mode traces it: its head `if`s on tensors lowered to ms.cond
// (modescope/_graph_syntax.py; the rewrite is cached on the function).
pyb::object graph_syntax_construct(const pyb::object& fn) {
  return pyb::module_::import("modescope._graph_syntax").attr("graph_function")(fn);
}

pyb::object call_construct_directly(PyCell& cell, pyb::args args, pyb::kwargs kwargs) {
  pyb::handle self = cell.self_handle();
  nn::ScopeGuard scope(cell.name(), cell.children().empty());
  return cell.construct_fn()(self, *args, **kwargs);
}

// A compiled cell called with arguments that are not all Tensors: a jit function over construct
// whose other arguments are constants of the trace (one cache per distinct value), kept in the
// cell's __dict__ and holding the cell weakly.
pyb::object constant_args_jit(PyCell& cell) {
  pyb::handle self = cell.self_handle();
  pyb::dict attrs = self.attr("__dict__");
  if (attrs.contains("_ms_constant_args_jit")) return attrs["_ms_constant_args_jit"];
  pyb::object weak = pyb::module_::import("weakref").attr("ref")(self);
  pyb::object fn = pyb::module_::import("modescope.nn.cell")
                       .attr("_bound_construct")(weak, graph_syntax_construct(cell.construct_fn()));
  pyb::object jit = pyb::module_::import("modescope._C").attr("JitFunction")(fn, cell.jit_level, cell.type_name());
  attrs["_ms_constant_args_jit"] = jit;
  return jit;
}

}  // namespace

PyCell::~PyCell() {
  if (!construct_ || !python_alive()) {
    construct_.release();  // nothing to release into at exit
    return;
  }
  pyb::gil_scoped_acquire gil;
  construct_ = pyb::object();
}

pyb::handle PyCell::self_handle() const {
  static const pyb::detail::type_info* info = pyb::detail::get_type_info(typeid(PyCell));
  return pyb::detail::get_object_handle(this, info);
}

pyb::object PyCell::construct_fn() {
  if (construct_) return construct_;
  pyb::handle self = self_handle();
  if (!self) throw std::runtime_error("cell '" + type_ + "': its Python object is gone");
  pyb::object fn = pyb::getattr(self.get_type(), "construct", pyb::none());
  if (fn.is_none()) throw pyb::type_error("cell '" + type_ + "' defines no construct method");
  if (pyb::hasattr(fn, "_ms_jit_config")) fn = fn.attr("__wrapped__");
  construct_ = fn;
  return construct_;
}

Vars PyCell::forward_n(const Vars& xs) {
  pyb::gil_scoped_acquire gil;
  try {
    pyb::handle self = self_handle();
    if (!self) return {Var::failed(internal_error("cell '" + type_ + "': its Python object is gone"))};
    pyb::object fn = nn::active_trace() ? graph_syntax_construct(construct_fn()) : construct_fn();
    pyb::tuple args(xs.size() + 1);
    args[0] = pyb::reinterpret_borrow<pyb::object>(self);
    for (size_t i = 0; i < xs.size(); ++i) args[i + 1] = pyb::cast(xs[i]);
    pyb::object out = fn(*args);
    return outputs_to_vars(out, type_ + ".construct", &returns_tuple);
  } catch (...) {
    return {Var::failed(current_exception_status(type_ + ".construct"))};
  }
}

int64_t module_compiles(const std::shared_ptr<nn::Module>& m) {
  auto it = g_cell_records.find(m.get());
  return it == g_cell_records.end() || it->second.module.lock() != m ? 0 : it->second.compiles;
}

pyb::object call_module(const std::shared_ptr<nn::Module>& self, pyb::args args, pyb::kwargs kwargs) {
  nn::Module& m = *self;
  auto* cell = dynamic_cast<PyCell*>(&m);
  bool tensors_only = kwargs.empty();
  for (pyb::handle a : args) tensors_only = tensors_only && is_tensor(a);
  if (!tensors_only) {
    if (!cell) throw pyb::type_error(m.type_name() + " takes Tensor arguments only");
    if (kwargs.empty() && !nn::active_trace() && (m.jitted() || nn::get_mode() == nn::Mode::Graph))
      return constant_args_jit(*cell)(*args);
    return call_construct_directly(*cell, args, kwargs);
  }
  Vars xs;
  xs.reserve(args.size());
  for (pyb::handle a : args) xs.push_back(a.cast<const Var&>());
  CellRecord& record = record_of(self);
  if (!nn::active_trace()) sync_weights(m, record);
  const nn::GraphCache* before = m.graph_cache();
  const int64_t traces_before = before ? before->traces() : 0;
  Vars out;
  {
    pyb::gil_scoped_release nogil;
    out = m(xs);
  }
  if (const nn::GraphCache* after = m.graph_cache()) {
    const int64_t n = after->traces() - (after == before ? traces_before : 0);
    if (n > 0) {
      record_of(self).compiles += n;
      add_compiles(n);
    }
  }
  checked(out);
  return vars_to_output(std::move(out), cell ? cell->returns_tuple : out.size() > 1);
}

void bind_cells(pyb::module_& m) {
  pyb::class_<nn::Module, std::shared_ptr<nn::Module>> mod(m, "Module");
  mod.def("__call__", &call_module);
  mod.def(
      "trainable_params", [](nn::Module& self, bool) { return parameters(self, 1); }, "recurse"_a = true);
  mod.def(
      "untrainable_params", [](nn::Module& self, bool) { return parameters(self, 0); }, "recurse"_a = true);
  mod.def("get_parameters", [](nn::Module& self) { return parameters(self, 2); });
  mod.def("parameters_and_names", [](nn::Module& self) {
    pyb::list out;
    for (pyb::handle p : parameters(self, 2)) out.append(pyb::make_tuple(p.attr("name"), p));
    return out;
  });
  mod.def("parameters_dict", [](nn::Module& self) {
    pyb::dict out;
    for (pyb::handle p : parameters(self, 2)) out[p.attr("name")] = p;
    return out;
  });
  mod.def("cells_and_names", [](std::shared_ptr<nn::Module> self) {
    pyb::list out;
    cells_and_names(self, "", out);
    return out;
  });
  mod.def("cells", [](nn::Module& self) {
    pyb::list out;
    for (const auto& [n, c] : self.children()) out.append(pyb::cast(c));
    return out;
  });
  mod.def("name_cells", [](nn::Module& self) {
    pyb::dict out;
    for (const auto& [n, c] : self.children()) out[pyb::str(n)] = pyb::cast(c);
    return out;
  });
  mod.def(
      "set_train",
      [](std::shared_ptr<nn::Module> self, bool mode) {
        nn::set_training(*self, mode);
        return self;
      },
      "mode"_a = true);
  mod.def(
      "set_grad", [](std::shared_ptr<nn::Module> self, bool) { return self; }, "requires_grad"_a = true);
  mod.def_property_readonly("training", &nn::Module::training);
  mod.def_property_readonly("num_parameters", &nn::Module::num_parameters);
  mod.def_property_readonly(
      "compile_count",
      [](const std::shared_ptr<nn::Module>& self) {
        int64_t n = module_compiles(self);
        if (auto* cell = dynamic_cast<PyCell*>(self.get())) {
          pyb::dict attrs = cell->self_handle().attr("__dict__");
          if (attrs.contains("_ms_constant_args_jit"))
            n += attrs["_ms_constant_args_jit"].attr("compile_count").cast<int64_t>();
        }
        return n;
      },
      "graphs traced and compiled for this cell's calls (Graph mode, @ms.jit construct)");
  mod.def_property_readonly("_type_name", &nn::Module::type_name);
  mod.def("__repr__", [](const nn::Module& self) { return describe_tree(self, ""); });

  pyb::class_<PyCell, nn::Module, std::shared_ptr<PyCell>> cell(m, "CellBase", pyb::dynamic_attr());
  cell.def(pyb::init<std::string>(), "type_name"_a);
  cell.def("_register_cell", [](PyCell& self, const std::string& name, std::shared_ptr<nn::Module> child) {
    self.set_child(name, std::move(child));
  });
  cell.def("_register_parameter", [](PyCell& self, const std::string& name, Parameter& p) {
    if (p.name.empty()) p.name = name;
    self.set_param(name, *checked(p).tensor(), !p.requires_grad);
  });
  cell.def("_parameter_value", [](PyCell& self, const std::string& name, pyb::object stored) -> pyb::object {
    Var v = self.param_var(name);
    if (v.is_symbolic()) return pyb::cast(std::move(v));
    return stored;
  });
  cell.def("_set_jit", [](PyCell& self, int level) {
    self.jit_level = level;
    nn::JitConfig cfg;
    cfg.jit_level = static_cast<compiler::JitLevel>(level);
    self.set_jit(cfg);
  });

  pyb::class_<nn::Sequential, nn::Module, std::shared_ptr<nn::Sequential>> seq(m, "SequentialCell");
  seq.def(pyb::init([](pyb::args args) {
            auto s = std::make_shared<nn::Sequential>();
            pyb::object items = args;
            if (args.size() == 1 && (pyb::isinstance<pyb::list>(args[0]) || pyb::isinstance<pyb::tuple>(args[0])))
              items = args[0];
            for (pyb::handle c : items) s->add(c.cast<std::shared_ptr<nn::Module>>());
            return s;
          }),
          pyb::keep_alive<1, 2>());
  seq.def(
      "append", [](nn::Sequential& self, std::shared_ptr<nn::Module> c) { self.add(std::move(c)); },
      pyb::keep_alive<1, 2>());
  seq.def("__len__", &nn::Sequential::size);
  seq.def("__getitem__", [](nn::Sequential& self, int64_t i) { return child_at(self, i, "SequentialCell"); });

  pyb::class_<nn::ModuleList, nn::Module, std::shared_ptr<nn::ModuleList>> list(m, "CellList");
  list.def(pyb::init([](pyb::object cells) {
             auto l = std::make_shared<nn::ModuleList>();
             if (!cells.is_none())
               for (pyb::handle c : cells) l->push_back(c.cast<std::shared_ptr<nn::Module>>());
             return l;
           }),
           "args"_a = pyb::none(), pyb::keep_alive<1, 2>());
  list.def(
      "append", [](nn::ModuleList& self, std::shared_ptr<nn::Module> c) { self.push_back(std::move(c)); },
      pyb::keep_alive<1, 2>());
  list.def("__len__", &nn::ModuleList::size);
  list.def("__getitem__", [](nn::ModuleList& self, int64_t i) { return child_at(self, i, "CellList"); });
  list.def("__iter__", [](nn::ModuleList& self) {
    pyb::list out;
    for (const auto& [n, c] : self.children()) out.append(pyb::cast(c));
    return pyb::iter(out);
  });
}

}  // namespace ms::py
