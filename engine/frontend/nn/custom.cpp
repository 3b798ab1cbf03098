// F::custom: a process-wide table of custom ops by name; each gets one schema (inference through the
// op's function, or eager-only without one) and one CPU kernel (runtime/custom_kernels.h) that calls
// the plain function.
#include "engine/frontend/nn/custom.h"

#include <cstring>
#include <map>
#include <mutex>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"
#include "engine/frontend/nn/trace.h"
#include "engine/ops/schema.h"
#include "engine/runtime/custom_kernels.h"

namespace ms::nn::F {

struct CustomOp::State {
  std::string name;
  CustomFn fn;
  CustomInferFn infer;
  int num_outputs = 1;
};

namespace {

struct CustomOps {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<CustomOp::State>> by_name;
};

CustomOps& custom_ops() {
  static auto* ops = new CustomOps();  // never destroyed: kernels may run during static destruction
  return *ops;
}

std::shared_ptr<const CustomOp::State> custom_state(const std::string& name) {
  CustomOps& c = custom_ops();
  std::lock_guard lock(c.mutex);
  auto it = c.by_name.find(name);
  return it == c.by_name.end() ? nullptr : it->second;
}

std::string missing_infer(const std::string& name) {
  const std::string path = current_path();
  return (path.empty() ? "" : "in module '" + path + "': ") + "custom op '" + name +
         "' has no shape inference function: Graph mode plans every value before it runs, so give it one "
         "with .infer(...), or run it in PyNative";
}

std::string tensor_type(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype())) + "[";
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? "," : "") + std::to_string(t.shape()[i]);
  return s + "]";
}

Status infer_custom(const std::string& name, ::ms::ops::InferContext& ctx) {
  auto st = custom_state(name);
  if (!st) return ctx.fail("custom op '" + name + "' is not defined in this process");
  if (!st->infer) {
    // Eager dispatch knows every input's value; anything else (a graph) needs the inference.
    for (size_t i = 0; i < ctx.types.size(); ++i)
      if (ctx.has_input(i) && !ctx.value(i)) return ctx.fail(missing_infer(name));
    for (size_t i = 0; i < ctx.outputs.size(); ++i) ctx.set_output_rank_unknown(i, DType::Undefined);
    return Status::ok();
  }
  auto outs = st->infer(ctx.types);
  if (!outs) return ctx.fail("custom op '" + name + "' inference failed: " + outs.status().message());
  if (outs->size() != ctx.outputs.size())
    return ctx.fail("custom op '" + name + "' inference gave " + std::to_string(outs->size()) + " types for " +
                    std::to_string(ctx.outputs.size()) + " outputs");
  for (size_t i = 0; i < outs->size(); ++i) {
    ctx.outputs[i] = (*outs)[i];
    if (ctx.outputs[i].dims) ctx.outputs[i].dim_params.resize(ctx.outputs[i].dims->size());
  }
  return Status::ok();
}

bool fits(const ir::ValueType& want, const Tensor& r) {
  if (want.dtype != DType::Undefined && want.dtype != r.dtype()) return false;
  if (!want.dims) return true;
  if (want.dims->size() != r.shape().size()) return false;
  for (size_t d = 0; d < r.shape().size(); ++d)
    if ((*want.dims)[d] >= 0 && (*want.dims)[d] != r.shape()[d]) return false;
  return true;
}

// Puts result i where the executor wants it (into the planned output in Graph mode), after checking
// it against the op's inference for these inputs.
Status place_output(const std::string& name, runtime::KernelContext& k, size_t i, Tensor r, const ir::ValueType* want) {
  if (!r.defined()) return k.fail("custom op '" + name + "' returned no tensor for output " + std::to_string(i));
  if (want && !fits(*want, r))
    return k.fail("custom op '" + name + "' returned " + tensor_type(r) + " for output " + std::to_string(i) +
                  ", its inference said " + want->to_string());
  Tensor& slot = k.output(i);
  if (!slot.defined()) {
    k.set_output(i, std::move(r));
    return Status::ok();
  }
  if (slot.dtype() != r.dtype() || slot.shape() != r.shape())
    return k.fail("custom op '" + name + "' returned " + tensor_type(r) + " for output " + std::to_string(i) +
                  ", its planned output is " + tensor_type(slot));
  if (r.nbytes()) std::memcpy(slot.raw(), r.raw(), r.nbytes());
  return Status::ok();
}

Status run_custom_fn(const std::string& name, runtime::KernelContext& k) {
  auto st = custom_state(name);
  if (!st) return k.fail("custom op '" + name + "' is not defined in this process");
  std::vector<Tensor> ins;
  std::vector<ir::ValueType> types;
  for (size_t i = 0; i < k.num_inputs(); ++i) {
    ins.push_back(k.has_input(i) ? k.input(i) : Tensor());
    types.emplace_back();
    if (!k.has_input(i)) continue;
    types.back().dtype = ins.back().dtype();
    types.back().dims = ins.back().shape();
    types.back().dim_params.assign(ins.back().shape().size(), "");
  }
  Expected<std::vector<ir::ValueType>> want = std::vector<ir::ValueType>{};
  if (st->infer) want = st->infer(types);
  if (!want) return k.fail("custom op '" + name + "' inference failed: " + want.status().message());
  auto outs = st->fn(ins);
  if (!outs) return k.fail("custom op '" + name + "': " + outs.status().message());
  if (outs->size() != k.num_outputs())
    return k.fail("custom op '" + name + "' returned " + std::to_string(outs->size()) + " tensors for " +
                  std::to_string(k.num_outputs()) + " outputs");
  for (size_t i = 0; i < outs->size(); ++i)
    MS_RETURN_IF_ERROR(place_output(name, k, i, std::move((*outs)[i]), i < want->size() ? &(*want)[i] : nullptr));
  k.set_impl("custom:" + name);
  return Status::ok();
}

// Adds or replaces the op; its schema and kernel are registered the first time the name is seen.
std::shared_ptr<CustomOp::State> define(std::shared_ptr<CustomOp::State> state) {
  CustomOps& c = custom_ops();
  std::lock_guard lock(c.mutex);
  const std::string name = state->name;
  const bool is_new = !c.by_name.count(name);
  c.by_name[name] = state;
  if (is_new && !::ms::ops::Registry::instance().find(name, kCustomDomain)) {
    ::ms::ops::OpSchema s;
    s.op_type = name;
    s.domain = kCustomDomain;
    s.min_inputs = 0;
    s.max_inputs = -1;
    s.min_outputs = s.max_outputs = state->num_outputs;
    s.infer = [name](::ms::ops::InferContext& ctx) { return infer_custom(name, ctx); };
    ::ms::ops::Registry::instance().add(std::move(s));
    runtime::set_custom_kernels(kCustomDomain, name,
                                {[name](runtime::KernelContext& k) { return run_custom_fn(name, k); }, nullptr});
  }
  return state;
}

}  // namespace

CustomOp custom(const std::string& name, CustomFn fn, int num_outputs) {
  auto s = std::make_shared<CustomOp::State>();
  s->name = name;
  s->fn = std::move(fn);
  s->num_outputs = num_outputs < 1 ? 1 : num_outputs;
  return CustomOp(define(std::move(s)));
}

CustomOp custom(const std::string& name, CustomUnaryFn fn) {
  return custom(
      name,
      [fn = std::move(fn)](const std::vector<Tensor>& in) -> Expected<std::vector<Tensor>> {
        if (in.empty() || !in[0].defined()) return invalid_argument("takes one input");
        auto r = fn(in[0]);
        if (!r) return std::move(r).take_status();
        return std::vector<Tensor>{std::move(*r)};
      },
      1);
}

CustomOp& CustomOp::infer(CustomInferFn fn) {
  auto s = std::make_shared<State>(*state_);
  s->infer = std::move(fn);
  state_ = define(std::move(s));
  return *this;
}

CustomOp& CustomOp::infer_same_as_input() {
  return infer([](const std::vector<ir::ValueType>& in) -> Expected<std::vector<ir::ValueType>> {
    if (in.empty()) return invalid_argument("has no input to take the type of");
    return std::vector<ir::ValueType>{in[0]};
  });
}

const std::string& CustomOp::name() const { return state_->name; }

Vars CustomOp::operator()(const Vars& inputs) const {
  if (TraceState* t = active_trace(); t && !state_->infer) {
    const Status st = unsupported(missing_infer(state_->name));
    t->fail(st);
    return Vars(static_cast<size_t>(state_->num_outputs), Var::failed(st));
  }
  return op_n(state_->name, inputs, {}, state_->num_outputs, kCustomDomain);
}

}  // namespace ms::nn::F
