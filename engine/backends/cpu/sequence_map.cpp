// CPU kernels: SequenceMap (the body once per element, through the calling executor) and the optional
// ops (Optional, OptionalHasElement, OptionalGetElement).
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/output_value.h"

namespace ms::cpu {
namespace {

Status sequence_map_kernel(runtime::KernelContext& ctx) {
  if (!ctx.subgraphs()) return ctx.unsupported_case("SequenceMap needs an executor that runs subgraphs");
  auto body = ctx.node().attr_graph("body");
  if (!body) return ctx.fail("missing body graph");
  ctx.set_impl("host:sequence-map");
  const Tensor& first = ctx.input(0);
  if (first.kind() != ValueKind::Sequence) return ctx.fail("input 0 must be a sequence");
  const size_t n = first.items().size();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    if (in.kind() == ValueKind::Sequence && in.items().size() != n)
      return ctx.fail("input " + std::to_string(i) + " has " + std::to_string(in.items().size()) +
                      " elements, input 0 has " + std::to_string(n));
    if (in.kind() == ValueKind::Optional) return ctx.fail("input " + std::to_string(i) + " must not be an optional");
  }
  std::vector<std::vector<Tensor>> results(ctx.num_outputs());
  for (size_t k = 0; k < n; ++k) {
    std::vector<Tensor> args;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& in = ctx.input(i);
      args.push_back(in.kind() == ValueKind::Sequence ? in.items()[k] : in);
    }
    auto outs = ctx.subgraphs()->run_subgraph(*body, args);
    if (!outs) return std::move(outs).take_status();
    if (outs->size() != results.size()) return ctx.fail("body returned a wrong number of outputs");
    // A body output may be an outer value (an arena view in Graph mode): the sequence keeps a copy.
    for (size_t o = 0; o < outs->size(); ++o) results[o].push_back((*outs)[o].clone());
  }
  for (size_t o = 0; o < results.size(); ++o) {
    const ir::Value* v = body->resolve(body->outputs[o]);
    DType dt = results[o].empty() ? (v ? v->type.dtype : DType::Undefined) : results[o][0].dtype();
    ctx.set_output(o, Tensor::sequence(std::move(results[o]), dt));
  }
  return Status::ok();
}

Status optional_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:optional");
  if (!ctx.has_input(0)) {
    auto t = ir::parse_value_type(ctx.node().attr_string("type", ""));
    if (!t) return ctx.fail("attribute 'type' must be a tensor or sequence type");
    ctx.set_output(0, Tensor::optional({}, t->kind, t->dtype));
    return Status::ok();
  }
  const Tensor& in = ctx.input(0);
  if (in.kind() == ValueKind::Optional) return ctx.fail("input must be a tensor or a sequence, not an optional");
  const DType dt = in.is_tensor() ? in.dtype() : in.list()->elem_dtype;
  ctx.set_output(0, Tensor::optional({in.is_tensor() ? in.clone() : in}, in.kind(), dt));
  return Status::ok();
}

Status optional_has_element_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:optional");
  bool has = false;
  if (ctx.has_input(0)) {
    const Tensor& in = ctx.input(0);
    has = in.kind() != ValueKind::Optional || !in.items().empty();
  }
  return put_output_value(ctx, 0, Tensor::scalar<bool>(has));
}

Status optional_get_element_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:optional");
  const Tensor& in = ctx.input(0);
  if (in.kind() != ValueKind::Optional) return put_output_value(ctx, 0, in);
  if (in.items().empty()) return ctx.fail("the optional input is empty");
  return put_output_value(ctx, 0, in.items().front());
}

}  // namespace

void register_sequence_map_kernels(runtime::KernelRegistry& r) {
  r.add("SequenceMap", sequence_map_kernel);
  r.add("Optional", optional_kernel);
  r.add("OptionalHasElement", optional_has_element_kernel);
  r.add("OptionalGetElement", optional_get_element_kernel);
}

}  // namespace ms::cpu
