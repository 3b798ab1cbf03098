#include "tests/engine/kernel_harness.h"

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/schema.h"

namespace ms::test {
namespace {

// Outputs come from plain host memory, as Tensor::empty gives.
class SimpleAllocator final : public runtime::OutputAllocator {
 public:
  Expected<Tensor> allocate(size_t, DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override { return Tensor::empty(dtype, shape); }
};

cpu::CpuBackend& backend() {
  static cpu::CpuBackend* b = new cpu::CpuBackend(0);
  return *b;
}

}  // namespace

ir::Node make_node(const std::string& op_type, size_t num_inputs, size_t num_outputs,
                   std::map<std::string, ir::Attribute> attrs, const std::vector<size_t>& omitted) {
  ir::Node n;
  n.id = ir::NodeId{1};
  n.op_type = op_type;
  n.name = op_type + "_test";
  for (size_t i = 0; i < num_inputs; ++i) {
    bool skip = false;
    for (size_t o : omitted) skip |= (o == i);
    n.inputs.push_back(skip ? std::string() : "x" + std::to_string(i));
  }
  for (size_t i = 0; i < num_outputs; ++i) n.outputs.push_back("y" + std::to_string(i));
  n.attrs = std::move(attrs);
  n.origins = {n.id};
  return n;
}

ir::ValueType type_of(const Tensor& t) {
  ir::ValueType vt;
  if (!t.defined()) return vt;
  vt.dtype = t.dtype();
  vt.dims = t.shape();
  vt.dim_params.assign(t.shape().size(), "");
  return vt;
}

Expected<std::vector<ir::ValueType>> infer_types(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset,
                                                 bool with_values) {
  ops::InferContext ctx{node, opset, {}, {}, {}};
  for (const Tensor& t : inputs) {
    ctx.types.push_back(type_of(t));
    ctx.values.push_back(with_values && t.defined() ? &t : nullptr);
  }
  MS_RETURN_IF_ERROR(ops::infer_node(ctx));
  return std::move(ctx.outputs);
}

Expected<std::vector<ir::ValueType>> infer_types(const ir::Node& node, const std::vector<ir::ValueType>& inputs,
                                                 int64_t opset) {
  ops::InferContext ctx{node, opset, inputs, std::vector<const Tensor*>(inputs.size(), nullptr), {}};
  MS_RETURN_IF_ERROR(ops::infer_node(ctx));
  return std::move(ctx.outputs);
}

Expected<KernelResult> run_kernel_full(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  MS_ASSIGN_OR_RETURN(std::vector<ir::ValueType> types, infer_types(node, inputs, opset, true));
  std::vector<Tensor> outputs(types.size());
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i].is_static() && types[i].dtype != DType::Undefined && types[i].dtype != DType::String)
      outputs[i] = Tensor::empty(types[i].dtype, *types[i].dims);
  runtime::KernelFn fn = cpu::CpuBackend::kernels().find(node.op_type, node.domain);
  if (!fn) return unsupported(node.label() + ": no CPU kernel for '" + node.op_type + "'");
  std::vector<const Tensor*> in_ptrs;
  for (const Tensor& t : inputs) in_ptrs.push_back(t.defined() ? &t : nullptr);
  SimpleAllocator alloc;
  runtime::KernelContext ctx(node, opset, backend(), in_ptrs, outputs, alloc, nullptr);
  MS_RETURN_IF_ERROR(fn(ctx));
  return KernelResult{std::move(outputs), ctx.impl()};
}

Expected<std::string> run_in_kernel_context(const ir::Node& node, std::vector<const Tensor*> inputs,
                                            std::vector<Tensor> outputs,
                                            const std::function<Status(runtime::KernelContext&)>& fn) {
  SimpleAllocator alloc;
  runtime::KernelContext ctx(node, 17, backend(), inputs, outputs, alloc, nullptr);
  MS_RETURN_IF_ERROR(fn(ctx));
  return ctx.impl();
}

Expected<std::vector<Tensor>> run_kernel(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  MS_ASSIGN_OR_RETURN(KernelResult r, run_kernel_full(node, inputs, opset));
  return std::move(r.outputs);
}

double value_at(const Tensor& t, int64_t i) { return t.at_double(i); }

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.at_double(i);
  return out;
}

}  // namespace ms::test
