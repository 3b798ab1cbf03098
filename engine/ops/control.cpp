// Constant, Identity and the control-flow ops If and Loop. Subgraph output types come from the
// subgraphs themselves: infer_graph_types (compiler/infer.cpp) infers branches and bodies first.
#include "engine/ops/families.h"

namespace ms::ops {
namespace {

Status infer_constant(InferContext& ctx) {
  const ir::Node& n = ctx.node;
  if (const Tensor* t = n.attr_tensor("value")) {
    ctx.set_output(0, t->dtype(), t->shape());
    return Status::ok();
  }
  if (n.has_attr("value_float")) return ctx.set_output(0, DType::F32, {}), Status::ok();
  if (n.has_attr("value_int")) return ctx.set_output(0, DType::I64, {}), Status::ok();
  if (n.has_attr("value_floats")) {
    ctx.set_output(0, DType::F32, {static_cast<int64_t>(n.attr_floats("value_floats").size())});
    return Status::ok();
  }
  if (n.has_attr("value_ints")) {
    ctx.set_output(0, DType::I64, {static_cast<int64_t>(n.attr_ints("value_ints").size())});
    return Status::ok();
  }
  if (n.has_attr("value_string")) return ctx.set_output(0, DType::String, {}), Status::ok();
  if (const auto* a =
          n.attrs.count("value_strings") ? n.attrs.at("value_strings").get_if<std::vector<std::string>>() : nullptr) {
    ctx.set_output(0, DType::String, {static_cast<int64_t>(a->size())});
    return Status::ok();
  }
  if (n.has_attr("sparse_value"))
    return unsupported(n.label() + ": sparse constants are not supported").with_node(n.id.value);
  return ctx.fail("has no value attribute (value, value_float, value_int, value_floats or value_ints)");
}

Status infer_identity(InferContext& ctx) {
  ctx.outputs[0] = ctx.in(0);
  return Status::ok();
}

// Merges the types two branches give one output: same dtype required, dims kept where equal.
Status merge_branch_types(InferContext& ctx, const ir::Graph& a, const ir::Graph& b) {
  if (a.outputs.size() != ctx.node.outputs.size() || b.outputs.size() != ctx.node.outputs.size())
    return ctx.fail("then_branch has " + std::to_string(a.outputs.size()) + " outputs and else_branch " +
                    std::to_string(b.outputs.size()) + ", the node " + std::to_string(ctx.node.outputs.size()));
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const ir::Value* va = a.resolve(a.outputs[i]);
    const ir::Value* vb = b.resolve(b.outputs[i]);
    if (!va || !vb) return ctx.fail("branch output " + std::to_string(i) + " is not defined");
    auto untyped = [](const ir::ValueType& v) { return v.is_tensor() && v.dtype == DType::Undefined; };
    if (untyped(va->type) != untyped(vb->type)) {  // one branch's type is unknown: take the other's
      ctx.outputs[i] = untyped(va->type) ? vb->type : va->type;
      ctx.outputs[i].dims.reset();  // the unknown branch may give any shape
      ctx.outputs[i].dim_params.clear();
      continue;
    }
    ir::ValueType t = va->type;
    if (va->type.kind != vb->type.kind || va->type.elem_kind != vb->type.elem_kind)
      return ctx.fail("branches give output " + std::to_string(i) + " different kinds: " + va->type.to_string() +
                      " and " + vb->type.to_string());
    if (vb->type.dtype != DType::Undefined && t.dtype != DType::Undefined && vb->type.dtype != t.dtype)
      return ctx.fail("branches give output " + std::to_string(i) + " different dtypes: " +
                      std::string(dtype_name(t.dtype)) + " and " + std::string(dtype_name(vb->type.dtype)));
    if (t.dtype == DType::Undefined) t.dtype = vb->type.dtype;
    if (!t.dims || !vb->type.dims || t.dims->size() != vb->type.dims->size()) {
      t.dims.reset();
      t.dim_params.clear();
    } else {
      for (size_t d = 0; d < t.dims->size(); ++d)
        if ((*t.dims)[d] != (*vb->type.dims)[d]) (*t.dims)[d] = -1;
    }
    ctx.outputs[i] = t;
  }
  return Status::ok();
}

Status infer_if(InferContext& ctx) {
  auto then_g = ctx.node.attr_graph("then_branch");
  auto else_g = ctx.node.attr_graph("else_branch");
  if (!then_g || !else_g) return ctx.fail("needs graph attributes then_branch and else_branch");
  if (ctx.in(0).dtype != DType::Bool && ctx.in(0).dtype != DType::Undefined)
    return ctx.fail("condition must be bool, got " + std::string(dtype_name(ctx.in(0).dtype)));
  return merge_branch_types(ctx, *then_g, *else_g);
}

// Loop(M?, cond?, v_initial...) -> (v_final..., scan_outputs...). Body: (iter, cond, v...) -> (cond, v..., scans...)
Status infer_loop(InferContext& ctx) {
  auto body = ctx.node.attr_graph("body");
  if (!body) return ctx.fail("needs graph attribute body");
  const size_t carried = ctx.num_inputs() - 2;
  if (body->inputs.size() != carried + 2)
    return ctx.fail("body takes " + std::to_string(body->inputs.size()) + " inputs, expected " +
                    std::to_string(carried + 2) + " (iteration, condition, " + std::to_string(carried) + " carried)");
  if (body->outputs.size() < carried + 1)
    return ctx.fail("body returns " + std::to_string(body->outputs.size()) + " outputs, expected at least " +
                    std::to_string(carried + 1));
  const size_t scans = body->outputs.size() - 1 - carried;
  if (ctx.node.outputs.size() != carried + scans)
    return ctx.fail("has " + std::to_string(ctx.node.outputs.size()) + " outputs, the body gives " +
                    std::to_string(carried) + " carried + " + std::to_string(scans) + " scan outputs");
  for (size_t i = 0; i < carried; ++i) {
    const ir::Value* v = body->resolve(body->outputs[1 + i]);
    ir::ValueType t = ctx.in(2 + i);
    if (v && v->type.dtype != DType::Undefined) {
      // Carried values may change shape across iterations: keep only what both agree on.
      if (t.dtype == DType::Undefined) t = v->type;
      if (!v->type.dims || !t.dims || v->type.dims->size() != t.dims->size()) {
        t.dims.reset();
        t.dim_params.clear();
      } else {
        for (size_t d = 0; d < t.dims->size(); ++d)
          if ((*t.dims)[d] != (*v->type.dims)[d]) (*t.dims)[d] = -1;
      }
    }
    ctx.outputs[i] = t;
  }
  for (size_t s = 0; s < scans; ++s) {
    const ir::Value* v = body->resolve(body->outputs[1 + carried + s]);
    ir::ValueType t;
    t.dtype = v ? v->type.dtype : DType::Undefined;
    if (v && v->type.dims) {
      std::vector<int64_t> dims{-1};
      dims.insert(dims.end(), v->type.dims->begin(), v->type.dims->end());
      t.dims = dims;
      t.dim_params.assign(dims.size(), "");
    }
    ctx.outputs[carried + s] = t;
  }
  return Status::ok();
}

}  // namespace

void register_control_ops(Registry& r) {
  r.add({"Constant", "", 1, 0, 0, 1, 1, OpCategory::Data, infer_constant, nullptr});
  r.add({"Identity", "", 1, 1, 1, 1, 1, OpCategory::Shape, infer_identity, [](const CostContext&) {
           return Cost{0, 0};
         }});
  r.add({"If", "", 1, 1, 1, 1, -1, OpCategory::ControlFlow, infer_if, nullptr});
  r.add({"Loop", "", 1, 2, -1, 0, -1, OpCategory::ControlFlow, infer_loop, nullptr});
}

}  // namespace ms::ops
