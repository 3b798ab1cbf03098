// A plugin op's schema and kernels: inference and kernel calls through the C ABI, with the
// attributes it declares checked on every node and each kernel output checked against inference.
#include <span>

#include "engine/plugin/plugin_op.h"

namespace ms::plugin {
namespace {

const char* attr_kind_name(int32_t kind) {
  return kind == MS_ATTR_INT ? "an int" : kind == MS_ATTR_FLOAT ? "a float" : "a string";
}

Status check_attrs(const PluginOp& op, const ops::InferContext& ctx) {
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    auto it = ctx.node.attrs.find(op.attr_names[i]);
    if (it == ctx.node.attrs.end()) {
      if (op.attrs[i].required) return ctx.fail("required attribute '" + op.attr_names[i] + "' is missing");
      continue;
    }
    const auto k = it->second.kind();
    const int32_t want = op.attrs[i].kind;
    const bool ok = (want == MS_ATTR_INT && k == ir::Attribute::Kind::Int) ||
                    (want == MS_ATTR_FLOAT && k == ir::Attribute::Kind::Float) ||
                    (want == MS_ATTR_STRING && k == ir::Attribute::Kind::String);
    if (!ok) return ctx.fail("attribute '" + op.attr_names[i] + "' must be " + attr_kind_name(want));
  }
  return Status::ok();
}

Expected<MsTensorType> to_c_type(const ir::ValueType& t, size_t i, const ops::InferContext& ctx) {
  MsTensorType c{};
  c.rank = -1;
  if (t.dtype == DType::Undefined) return c;  // optional input left out
  c.dtype = dtype_to_onnx(t.dtype);
  if (!t.dims) return c;
  if (t.dims->size() > MODESCOPE_PLUGIN_MAX_RANK)
    return ctx.fail("input " + std::to_string(i) + " has rank " + std::to_string(t.dims->size()) +
                    ", plugin ops take at most " + std::to_string(MODESCOPE_PLUGIN_MAX_RANK));
  c.rank = static_cast<int32_t>(t.dims->size());
  for (size_t d = 0; d < t.dims->size(); ++d) c.dims[d] = (*t.dims)[d];
  return c;
}

Status from_c_types(const std::vector<MsTensorType>& outs, ops::InferContext& ctx) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const MsTensorType& c = outs[i];
    const auto dt = dtype_from_onnx(c.dtype);
    if (!dt || *dt == DType::Undefined)
      return ctx.fail("plugin inference gave output " + std::to_string(i) + " no valid element type (" +
                      std::to_string(c.dtype) + ")");
    if (c.rank < 0) {
      ctx.set_output_rank_unknown(i, *dt);
      continue;
    }
    if (c.rank > MODESCOPE_PLUGIN_MAX_RANK)
      return ctx.fail("plugin inference gave output " + std::to_string(i) + " rank " + std::to_string(c.rank));
    ctx.set_output(i, *dt, std::vector<int64_t>(c.dims, c.dims + c.rank));
  }
  return Status::ok();
}

// The plugin's inference on these input types; fills ctx.outputs.
Status infer_plugin(const PluginOp& op, ops::InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_attrs(op, ctx));
  std::vector<MsTensorType> ins;
  for (size_t i = 0; i < ctx.types.size(); ++i) {
    MS_ASSIGN_OR_RETURN(MsTensorType c, to_c_type(ctx.types[i], i, ctx));
    ins.push_back(c);
  }
  std::vector<MsTensorType> outs(ctx.outputs.size());
  for (auto& o : outs) o.rank = -1;
  MsCall call;
  call.op = &op;
  call.node = &ctx.node;
  const int rc =
      op.def.infer(&call, ins.data(), static_cast<int>(ins.size()), outs.data(), static_cast<int>(outs.size()));
  if (rc != 0)
    return ctx.fail(op.full_name() + " inference failed: " + (call.error.empty() ? "(no message)" : call.error));
  return from_c_types(outs, ctx);
}

// Runs `fn` (the CPU or CUDA kernel) on the node: inference on the actual inputs first, so each
// output the kernel asks for is checked against it.
Status run_plugin_kernel(const PluginOp& op, MsKernelFn fn, runtime::KernelContext& k) {
  const ir::Node& node = k.node();
  ops::InferContext ictx{node, k.opset(), {}, {}, {}};
  std::vector<MsTensor> ins(k.num_inputs(), MsTensor{});
  for (size_t i = 0; i < k.num_inputs(); ++i) {
    if (!k.has_input(i)) {
      ictx.types.emplace_back();
      ictx.values.push_back(nullptr);
      continue;
    }
    const Tensor& t = k.input(i);
    ir::ValueType type;
    type.dtype = t.dtype();
    type.dims = t.shape();
    type.dim_params.assign(t.shape().size(), "");
    ictx.types.push_back(std::move(type));
    ictx.values.push_back(&t);
    ins[i] = MsTensor{dtype_to_onnx(t.dtype()), static_cast<int32_t>(t.shape().size()), t.shape().data(), t.raw()};
  }
  MS_RETURN_IF_ERROR(ops::infer_node(ictx));
  MsCall call;
  call.op = &op;
  call.node = &node;
  call.kernel = &k;
  call.expected = ictx.outputs;
  const int rc = fn(&call, ins.data(), static_cast<int>(ins.size()), static_cast<int>(k.num_outputs()));
  if (call.refused) return k.fail(op.full_name() + ": " + call.error);
  if (rc != 0) return k.fail(op.full_name() + " kernel failed: " + (call.error.empty() ? "(no message)" : call.error));
  for (size_t i = 0; i < k.num_outputs(); ++i)
    if (!k.output(i).defined())
      return k.fail(op.full_name() + " kernel returned without allocating output " + std::to_string(i));
  k.set_impl("plugin:" + op.library.substr(op.library.find_last_of('/') + 1));
  return Status::ok();
}

}  // namespace

ops::OpSchema make_schema(const PluginOp& op) {
  ops::OpSchema s;
  s.op_type = op.name;
  s.domain = op.domain;
  s.since_version = 1;
  s.min_inputs = op.def.min_inputs;
  s.max_inputs = op.def.max_inputs;
  s.min_outputs = op.def.min_outputs;
  s.max_outputs = op.def.max_outputs;
  s.category = ops::OpCategory::Other;
  s.infer = [&op](ops::InferContext& ctx) { return infer_plugin(op, ctx); };
  return s;
}

runtime::CustomKernels make_kernels(const PluginOp& op) {
  runtime::CustomKernels k;
  k.cpu = [&op](runtime::KernelContext& ctx) { return run_plugin_kernel(op, op.def.cpu_kernel, ctx); };
  if (op.def.cuda_kernel)
    k.cuda = [&op](runtime::KernelContext& ctx) { return run_plugin_kernel(op, op.def.cuda_kernel, ctx); };
  return k;
}

}  // namespace ms::plugin
