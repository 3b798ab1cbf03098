#include "engine/frontend/nn/autograd.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/grad.h"
#include "engine/frontend/nn/tape.h"
#include "engine/frontend/nn/trace.h"

namespace ms::nn {
namespace {

// Identity of a value on the tape: symbolic values by name; concrete op outputs by handle;
// other concrete tensors (parameters, constants) by their data, so a parameter handed out twice
// by Module::param is one value.
class Keys {
 public:
  void produced(const Var& v) { produced_.insert(v.impl()); }
  std::string operator()(const Var& v) const {
    const VarImpl* i = v.impl();
    if (i->trace) return "s:" + i->sym;
    if (produced_.count(i)) return "p:" + std::to_string(reinterpret_cast<uintptr_t>(i));
    return "t:" + std::to_string(reinterpret_cast<uintptr_t>(i->value.raw())) + ":" +
           std::string(dtype_name(i->value.dtype())) + shape_to_string(i->value.shape());
  }

 private:
  std::unordered_set<const VarImpl*> produced_;
};

// Backward nodes are named under "grad" + the forward op's module path, whatever scope the caller
// is in; the caller's scope comes back when this goes out of scope (after the inner guards).
struct ScopeRestore {
  std::vector<const std::string*> saved;
  ~ScopeRestore() { swap_scope(std::move(saved)); }
};

// Runs entry e's gradient rule on the output gradients found in `grads`, accumulating the input
// gradients there (only inputs in `req`, the values a gradient can reach wrt through).
Status apply_grad_rule(const autodiff::TapeEntry& e, const Keys& key, const std::unordered_set<std::string>& req,
                       std::unordered_map<std::string, Var>& grads) {
  Vars gouts;
  bool any = false;
  for (const Var& o : e.outputs) {
    auto it = grads.find(key(o));
    gouts.push_back(it == grads.end() ? Var() : it->second);
    any = any || it != grads.end();
  }
  if (!any) return Status::ok();
  const autodiff::GradFn* rule = autodiff::GradRegistry::instance().find(e.node.op_type, e.node.domain);
  const std::string where = e.node.name.empty() ? "" : " (in '" + e.node.name + "')";
  if (!rule)
    return unsupported("no gradient rule for op " + e.node.op_type + where +
                       "; it is on the path from the loss to a differentiated tensor");
  ScopeGuard op_scope(e.node.name);
  autodiff::GradContext ctx{e.node, e.inputs, e.outputs, gouts};
  auto gins = (*rule)(ctx);
  if (!gins) return gins.status();
  if (gins->size() > e.inputs.size())
    return internal_error("gradient of " + e.node.op_type + where + " returned too many gradients");
  for (size_t j = 0; j < gins->size(); ++j) {
    const Var& x = e.inputs[j];
    const Var& gx = (*gins)[j];
    if (!x.defined() || !gx.defined() || !req.count(key(x))) continue;
    if (!gx.ok()) return Status(gx.status()).prepend("gradient of " + e.node.op_type + where + ": ");
    if (gx.shape() != x.shape() || gx.dtype() != x.dtype())
      return internal_error("gradient of " + e.node.op_type + where + " for input " + std::to_string(j) + " is " +
                            std::string(dtype_name(gx.dtype())) + shape_to_string(gx.shape()) + ", the input is " +
                            std::string(dtype_name(x.dtype())) + shape_to_string(x.shape()));
    auto [it, fresh] = grads.try_emplace(key(x), gx);
    if (!fresh) it->second = F::add(it->second, gx);
  }
  return Status::ok();
}

// For each tape entry, the wrt indices whose gradient is final once the backward has processed it
// (the first entry reading them: entries are processed last to first).
std::vector<std::vector<size_t>> final_after(const std::vector<autodiff::TapeEntry>& entries,
                                             const std::vector<bool>& needed, const Keys& key, const Vars& wrt) {
  std::unordered_map<std::string, std::vector<size_t>> by_key;
  for (size_t w = 0; w < wrt.size(); ++w) by_key[key(wrt[w])].push_back(w);
  std::vector<std::vector<size_t>> out(entries.size());
  for (size_t i = 0; i < entries.size() && !by_key.empty(); ++i) {
    if (!needed[i]) continue;
    for (const Var& in : entries[i].inputs) {
      if (!in.defined() || !in.ok()) continue;
      auto it = by_key.find(key(in));
      if (it == by_key.end()) continue;
      out[i].insert(out[i].end(), it->second.begin(), it->second.end());
      by_key.erase(it);
    }
  }
  return out;
}

Expected<Vars> backward(const autodiff::Tape& tape, const Var& loss, const Vars& wrt, const GradReadyFn* on_ready) {
  const auto& entries = tape.entries();
  Keys key;
  for (const auto& e : entries)
    for (const Var& o : e.outputs) key.produced(o);

  // Forward sweep: which values depend on wrt (float values only: comparisons, shapes and indices
  // carry no gradient), so rules run only where a gradient can reach wrt.
  std::unordered_set<std::string> req;
  for (const Var& w : wrt) req.insert(key(w));
  std::vector<bool> needed(entries.size(), false);
  for (size_t i = 0; i < entries.size(); ++i) {
    for (const Var& in : entries[i].inputs)
      if (in.defined() && in.ok() && req.count(key(in))) needed[i] = true;
    if (!needed[i]) continue;
    for (const Var& o : entries[i].outputs)
      if (is_float(o.dtype())) req.insert(key(o));
  }
  const std::vector<std::vector<size_t>> ready =
      on_ready ? final_after(entries, needed, key, wrt) : std::vector<std::vector<size_t>>{};
  std::vector<bool> reported(wrt.size(), false);

  std::unordered_map<std::string, Var> grads;
  if (req.count(key(loss))) grads[key(loss)] = autodiff::full(1.0, loss.dtype(), loss.shape());

  {
    autodiff::TapeGuard pause(nullptr);
    ScopeRestore restore{swap_scope({})};
    const std::string grad_scope = kGradScope;
    ScopeGuard in_grad(grad_scope);
    for (size_t i = entries.size(); i-- > 0;) {
      if (!needed[i]) continue;
      MS_RETURN_IF_ERROR(apply_grad_rule(entries[i], key, req, grads));
      if (!on_ready) continue;
      for (size_t w : ready[i]) {
        auto it = grads.find(key(wrt[w]));
        if (it == grads.end() || !it->second.ok()) continue;
        (*on_ready)(w, it->second);
        reported[w] = true;
      }
    }
  }

  Vars out;
  for (size_t w = 0; w < wrt.size(); ++w) {
    auto it = grads.find(key(wrt[w]));
    out.push_back(it != grads.end() ? it->second : autodiff::zeros(wrt[w].dtype(), wrt[w].shape()));
    if (!out.back().ok()) return out.back().status();
    if (on_ready && !reported[w]) (*on_ready)(w, out.back());
  }
  return out;
}

}  // namespace

bool is_backward_node_name(const std::string& n) {
  const std::string p = std::string(kGradScope) + ".";
  return n == kGradScope || n.rfind(p, 0) == 0;
}

Expected<ValueAndGrad> value_and_grad(const std::function<Var()>& loss_fn, const Vars& wrt) {
  return value_and_grad(loss_fn, wrt, GradReadyFn{});
}

Expected<ValueAndGrad> value_and_grad(const std::function<Var()>& loss_fn, const Vars& wrt,
                                      const GradReadyFn& on_ready) {
  MS_RETURN_IF_ERROR(first_error(wrt));
  TraceState* trace = active_trace();
  for (const Var& w : wrt)
    if (w.is_symbolic() != (trace != nullptr))
      return invalid_argument(trace ? "value_and_grad inside a trace needs symbolic wrt tensors (graph inputs)"
                                    : "value_and_grad outside a trace needs concrete wrt tensors");
  autodiff::Tape tape;
  Var loss;
  {
    autodiff::TapeGuard guard(&tape);
    loss = loss_fn();
  }
  if (trace && !trace->error().is_ok()) return trace->error();
  if (!loss.ok()) return loss.status();
  if (!is_float(loss.dtype()) || numel(loss.shape()) != 1)
    return invalid_argument(std::string("value_and_grad: the loss must be a float scalar, got ") +
                            std::string(dtype_name(loss.dtype())) + shape_to_string(loss.shape()));
  MS_ASSIGN_OR_RETURN(Vars grads, backward(tape, loss, wrt, on_ready ? &on_ready : nullptr));
  if (trace && !trace->error().is_ok()) return trace->error();
  return ValueAndGrad{loss, std::move(grads)};
}

Expected<Vars> grad(const std::function<Var()>& loss_fn, const Vars& wrt) {
  MS_ASSIGN_OR_RETURN(ValueAndGrad vg, value_and_grad(loss_fn, wrt));
  return std::move(vg.grads);
}

Vars trainable_parameters(Module& m) {
  Vars out;
  for (const auto& s : m.parameter_slots())
    if (!s.buffer) out.emplace_back(*s.tensor);
  return out;
}

std::vector<std::string> trainable_parameter_names(Module& m) {
  std::vector<std::string> out;
  for (const auto& s : m.parameter_slots())
    if (!s.buffer) out.push_back(s.name);
  return out;
}

Status assign_parameters(Module& m, const std::vector<Tensor>& values) {
  std::vector<Module::Slot> slots;
  for (const auto& s : m.parameter_slots())
    if (!s.buffer) slots.push_back(s);
  if (slots.size() != values.size())
    return invalid_argument("assign_parameters: " + std::to_string(values.size()) + " values for " +
                            std::to_string(slots.size()) + " trainable parameters");
  for (size_t i = 0; i < slots.size(); ++i) {
    const Tensor& v = values[i];
    Tensor& t = *slots[i].tensor;
    if (!v.defined() || v.dtype() != t.dtype() || v.shape() != t.shape())
      return invalid_argument(
          "assign_parameters: '" + slots[i].name + "' is " + std::string(dtype_name(t.dtype())) +
          shape_to_string(t.shape()) + ", the new value " +
          (v.defined() ? std::string(dtype_name(v.dtype())) + shape_to_string(v.shape()) : "undefined"));
  }
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].tensor->raw() != values[i].raw() && values[i].nbytes())
      std::memmove(slots[i].tensor->raw(), values[i].raw(), values[i].nbytes());
  clear_graph_caches(m);
  return Status::ok();
}

void set_training(Module& m, bool training) { m.set_training(training); }

void clear_graph_caches(Module& m) {
  m.clear_graph_cache();
  for (const auto& [n, c] : m.children()) clear_graph_caches(*c);
}

}  // namespace ms::nn
