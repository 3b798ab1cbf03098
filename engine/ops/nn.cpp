// Registration of the neural-network op schemas; each family lives in its own ops/nn_*.cpp file.
#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops {

namespace nn {

std::string dims_string(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + (d[i] < 0 ? std::string("?") : std::to_string(d[i]));
  return s + "]";
}

Status require_float(const InferContext& ctx, size_t i, const char* name) {
  const DType t = ctx.in(i).dtype;
  if (!is_float(t))
    return ctx.fail("input " + std::to_string(i) + " (" + name + ") must be a float tensor, got " +
                    std::string(dtype_name(t)));
  return Status::ok();
}

Status require_same_dtype(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.in(i).dtype != ctx.in(0).dtype)
    return ctx.fail("input " + std::to_string(i) + " (" + name + ") is " + std::string(dtype_name(ctx.in(i).dtype)) +
                    " but input 0 is " + std::string(dtype_name(ctx.in(0).dtype)));
  return Status::ok();
}

Expected<const std::vector<int64_t>*> require_rank(const InferContext& ctx, size_t i, const char* name, int64_t lo,
                                                   int64_t hi) {
  const std::vector<int64_t>* d = ctx.dims(i);
  if (!d) return static_cast<const std::vector<int64_t>*>(nullptr);
  const auto r = static_cast<int64_t>(d->size());
  if (r < lo || (hi >= 0 && r > hi)) {
    std::string want = hi < 0 ? ">= " + std::to_string(lo)
                              : (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi));
    return ctx.fail("input " + std::to_string(i) + " (" + name + ") must have rank " + want + ", got shape " +
                    dims_string(*d));
  }
  return d;
}

double type_bytes(const ir::ValueType& t) {
  const int64_t n = static_numel(t);
  return n > 0 ? static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype)) : 0.0;
}

Cost io_cost(const CostContext& c, double flops_per_output) {
  Cost cost;
  for (const auto& t : c.inputs) cost.bytes += type_bytes(t);
  for (const auto& t : c.outputs) cost.bytes += type_bytes(t);
  if (!c.outputs.empty()) {
    const int64_t n = static_numel(c.outputs[0]);
    if (n > 0) cost.flops = flops_per_output * static_cast<double>(n);
  }
  return cost;
}

}  // namespace nn

void register_nn_ops(Registry& r) {
  nn::register_conv_ops(r);
  nn::register_pool_ops(r);
  nn::register_norm_ops(r);
  nn::register_matmul_ops(r);
  nn::register_softmax_ops(r);
  nn::register_loss_ops(r);
}

}  // namespace ms::ops
