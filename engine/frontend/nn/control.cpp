#include "engine/frontend/nn/control.h"

#include <algorithm>
#include <cstdio>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/nn/trace.h"

namespace ms::nn {
namespace {

Vars failed_n(Status st, size_t n) { return Vars(n ? n : 1, Var::failed(std::move(st))); }

std::string where() {
  const std::string p = current_path();
  return p.empty() ? std::string() : " in module '" + p + "'";
}

// Traces `fn` into a child of `parent`; every result becomes a value of the child graph.
Expected<std::shared_ptr<ir::Graph>> trace_branch(TraceState& parent, const std::string& name,
                                                  const std::function<Vars(TraceState&)>& fn) {
  auto child = std::make_unique<TraceState>(&parent);
  child->graph.name = name;
  Vars outs;
  {
    TraceGuard guard(child.get());
    outs = fn(*child);
    MS_RETURN_IF_ERROR(first_error(outs));
    if (!parent.error().is_ok()) return parent.error();
    for (Var& o : outs) {
      // Subgraph outputs are produced inside the subgraph (outer values and constants pass
      // through an Identity), each once.
      const bool own =
          o.is_symbolic() && o.impl()->trace == child.get() &&
          std::find(child->graph.outputs.begin(), child->graph.outputs.end(), o.name()) == child->graph.outputs.end() &&
          std::find(child->graph.inputs.begin(), child->graph.inputs.end(), o.name()) == child->graph.inputs.end();
      if (!own) o = F::identity(o);
      if (!o.ok()) return o.status();
      child->graph.outputs.push_back(o.name());
    }
  }
  auto g = std::make_shared<ir::Graph>(std::move(child->graph));
  g->set_parent(&parent.graph);
  return g;
}

const ir::Value* out_value(const ir::Graph& g, size_t i) { return g.value(g.outputs[i]); }

}  // namespace

Vars cond(const Var& pred, const BranchFn& then_fn, const BranchFn& else_fn) {
  if (!pred.ok()) return failed_n(pred.status(), 1);
  TraceState* t = active_trace();
  if (!pred.is_symbolic()) {
    // Concrete predicate (PyNative, or a constant while tracing): run the chosen branch only.
    auto v = pred.item();
    if (!v) return failed_n(std::move(v).take_status(), 1);
    return *v != 0.0 ? then_fn() : else_fn();
  }
  if (!t) return failed_n(invalid_argument("cond: symbolic predicate '" + pred.name() + "' outside its trace"), 1);
  if (numel(pred.shape()) != 1)
    return failed_n(
        invalid_argument("cond" + where() + ": predicate must hold one value, got " + pred.impl()->type.to_string()),
        1);
  Var p = pred.dtype() == DType::Bool ? pred : F::cast(pred, DType::Bool);
  auto then_g = trace_branch(*t, t->unique_name("then_branch"), [&](TraceState&) { return then_fn(); });
  if (!then_g) return failed_n(std::move(then_g).take_status(), 1);
  auto else_g = trace_branch(*t, t->unique_name("else_branch"), [&](TraceState&) { return else_fn(); });
  if (!else_g) return failed_n(std::move(else_g).take_status(), 1);
  const ir::Graph& a = **then_g;
  const ir::Graph& b = **else_g;
  if (a.outputs.size() != b.outputs.size()) {
    Status st = invalid_argument("cond" + where() + ": then_fn returns " + std::to_string(a.outputs.size()) +
                                 " values and else_fn " + std::to_string(b.outputs.size()));
    t->fail(st);
    return failed_n(st, a.outputs.size());
  }
  std::vector<ir::ValueType> types;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const ir::Value* va = out_value(a, i);
    const ir::Value* vb = out_value(b, i);
    if (!va || !vb || va->type.dtype != vb->type.dtype) {
      Status st = invalid_argument("cond" + where() + ": branch output " + std::to_string(i) +
                                   " has different dtypes in the two branches");
      t->fail(st);
      return failed_n(st, a.outputs.size());
    }
    ir::ValueType ty = va->type;
    if (!(va->type == vb->type)) {
      Status st = invalid_argument("cond" + where() + ": branch output " + std::to_string(i) + " is " +
                                   va->type.to_string() + " in then_fn but " + vb->type.to_string() +
                                   " in else_fn; traced graphs need one static shape");
      t->fail(st);
      return failed_n(st, a.outputs.size());
    }
    types.push_back(ty);
  }
  auto name = t->input_name(p);
  if (!name) return failed_n(std::move(name).take_status(), a.outputs.size());
  ir::Node node;
  node.op_type = "If";
  const std::string path = current_path();
  node.name = t->unique_name(path.empty() ? "if" : path + ".if");
  node.inputs = {*name};
  for (size_t i = 0; i < a.outputs.size(); ++i)
    node.outputs.push_back(t->unique_name(node.name + ":" + std::to_string(i)));
  node.attrs["then_branch"] = ir::Attribute::GraphPtr(*then_g);
  node.attrs["else_branch"] = ir::Attribute::GraphPtr(*else_g);
  return t->add_node_typed(std::move(node), types);
}

Var cond(const Var& pred, const std::function<Var()>& then_fn, const std::function<Var()>& else_fn) {
  Vars r = cond(pred, BranchFn([&] { return Vars{then_fn()}; }), BranchFn([&] { return Vars{else_fn()}; }));
  return r.empty() ? Var::failed(invalid_argument("cond returned nothing")) : r[0];
}

Vars fori_loop(int64_t lower, int64_t upper, const LoopBody& body, const Vars& init) {
  Status st = first_error(init);
  if (!st.is_ok()) return failed_n(st, init.size());
  TraceState* t = active_trace();
  if (!t) {
    Vars carried = init;
    for (int64_t i = lower; i < upper; ++i) {
      carried = body(F::scalar(static_cast<double>(i), DType::I64), carried);
      st = first_error(carried);
      if (!st.is_ok()) return failed_n(st, init.size());
      if (carried.size() != init.size())
        return failed_n(invalid_argument("fori_loop" + where() + ": body returns " + std::to_string(carried.size()) +
                                         " values for " + std::to_string(init.size()) + " carried"),
                        init.size());
    }
    return carried;
  }
  std::vector<ir::ValueType> types;
  for (const Var& v : init) types.push_back(static_type(v.dtype(), v.shape()));
  const std::string path = current_path();
  const std::string base = path.empty() ? "loop" : path + ".loop";
  auto body_g = trace_branch(*t, t->unique_name(base + ".body"), [&](TraceState& c) {
    Var iter = c.add_input(base + ".iter", static_type(DType::I64, {}));
    Var cond_in = c.add_input(base + ".cond_in", static_type(DType::Bool, {}));
    Vars carried;
    for (size_t i = 0; i < types.size(); ++i) carried.push_back(c.add_input(base + ".carried", types[i]));
    Var i_var = lower == 0 ? iter : F::add(iter, F::scalar(static_cast<double>(lower), DType::I64));
    Vars next = body(i_var, carried);
    Vars outs{F::identity(cond_in)};
    if (next.size() != types.size()) {
      Status bad = invalid_argument("fori_loop" + where() + ": body returns " + std::to_string(next.size()) +
                                    " values for " + std::to_string(types.size()) + " carried");
      c.fail(bad);
      return Vars{Var::failed(bad)};
    }
    for (size_t i = 0; i < next.size(); ++i) {
      if (next[i].ok() && (next[i].dtype() != types[i].dtype || next[i].shape() != *types[i].dims)) {
        Status bad =
            invalid_argument("fori_loop" + where() + ": carried value " + std::to_string(i) + " changes type from " +
                             types[i].to_string() + " to " + static_type(next[i].dtype(), next[i].shape()).to_string());
        c.fail(bad);
        return Vars{Var::failed(bad)};
      }
      outs.push_back(next[i]);
    }
    return outs;
  });
  if (!body_g) return failed_n(std::move(body_g).take_status(), init.size());
  const int64_t trips = upper > lower ? upper - lower : 0;
  Vars in{F::constant(Tensor::scalar<int64_t>(trips)), F::constant(Tensor::scalar<bool>(true))};
  in.insert(in.end(), init.begin(), init.end());
  ir::Node node;
  node.op_type = "Loop";
  node.name = t->unique_name(base);
  for (const Var& v : in) {
    auto n = t->input_name(v);
    if (!n) return failed_n(std::move(n).take_status(), init.size());
    node.inputs.push_back(*n);
  }
  for (size_t i = 0; i < init.size(); ++i) node.outputs.push_back(t->unique_name(node.name + ":" + std::to_string(i)));
  node.attrs["body"] = ir::Attribute::GraphPtr(*body_g);
  return t->add_node_typed(std::move(node), types);
}

}  // namespace ms::nn

namespace ms::nn::ops {

Var print(const std::string& label, Var x) {
  if (!x.ok()) return x;
  const std::string path = current_path();
  std::string tag = label.empty() ? (path.empty() ? std::string("print") : path) : label;
  TraceState* t = active_trace();
  if (!t) {
    if (x.is_symbolic())
      return Var::failed(invalid_argument("ops::print: symbolic tensor '" + x.name() + "' outside its trace"));
    std::printf("%s: %s\n", tag.c_str(), x.impl()->value.to_string().c_str());
    std::fflush(stdout);
    return x;
  }
  for (TraceState* s = t; s; s = s->parent()) s->graph.opsets[kModescopeDomain] = 1;
  Vars out = t->add_op("Print", kModescopeDomain, {x}, {{"label", tag}}, 1);
  if (!out[0].ok()) return out[0];
  // Later uses of x (any copy of the handle) now read the Print output: the node stays on the path.
  if (x.is_symbolic()) {
    VarImpl* a = x.impl();
    VarImpl* b = out[0].impl();
    a->sym = b->sym;
    a->type = b->type;
    a->trace = b->trace;
  }
  return out[0];
}

}  // namespace ms::nn::ops
