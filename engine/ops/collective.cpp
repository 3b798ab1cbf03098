// The data-parallel step's gradient collectives (domain ai.modescope), placed by the graph passes
// insert-allreduce and fuse-allreduce; their kernels are the communicator's (engine/dist,
// registered at run time), so on one rank they are the identity.
//   AllReduce(x_1..x_N) -> (y_1..y_N): y_i is x_i reduced over every rank (attribute `mean`: 1
//     divides by the rank count), all inputs in ONE collective over a packed buffer; blocking.
//   AllReduceStart(x_1..x_N) -> token (i64 scalar): the same collective started on the
//     communication thread; the step goes on computing while it runs.
//   AllReduceWait(token, x_1..x_N) -> (y_1..y_N): waits for the started collective and hands out
//     its results (the x_i give the outputs their types).
#include "engine/ops/families.h"

namespace ms::ops {
namespace {

// Output i of the N inputs from `first` on: input first+i's type; every input one dtype.
Status collective_outputs(InferContext& ctx, size_t first) {
  if (ctx.outputs.size() + first != ctx.num_inputs())
    return ctx.fail(std::to_string(ctx.num_inputs() - first) + " tensors to reduce and " +
                    std::to_string(ctx.outputs.size()) + " outputs (one output per tensor)");
  for (size_t i = first; i < ctx.num_inputs(); ++i) {
    if (!ctx.in(i).is_tensor()) return ctx.fail("input " + std::to_string(i) + " is not a tensor");
    if (ctx.in(i).dtype != ctx.in(first).dtype) return ctx.fail("tensors of different dtypes");
    ctx.outputs[i - first] = ctx.in(i);
  }
  return Status::ok();
}

Cost collective_cost(const CostContext& c) {
  double bytes = 0;
  for (const auto& t : c.inputs) {
    const int64_t n = static_numel(t);
    if (n > 0) bytes += 2.0 * static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
  }
  return Cost{0, bytes};
}

}  // namespace

void register_collective_ops(Registry& r) {
  r.add({"AllReduce", "ai.modescope", 1, 1, -1, 1, -1, OpCategory::Other,
         [](InferContext& ctx) { return collective_outputs(ctx, 0); }, collective_cost});
  r.add({"AllReduceStart", "ai.modescope", 1, 1, -1, 1, 1, OpCategory::Other,
         [](InferContext& ctx) {
           for (size_t i = 0; i < ctx.num_inputs(); ++i)
             if (!ctx.in(i).is_tensor() || ctx.in(i).dtype != ctx.in(0).dtype)
               return ctx.fail("input " + std::to_string(i) + " is not a tensor of the first input's dtype");
           ctx.set_output(0, DType::I64, {});
           return Status::ok();
         },
         collective_cost});
  r.add({"AllReduceWait", "ai.modescope", 1, 2, -1, 1, -1, OpCategory::Other,
         [](InferContext& ctx) {
           if (ctx.in(0).dtype != DType::I64) return ctx.fail("input 0 must be the i64 token of an AllReduceStart");
           return collective_outputs(ctx, 1);
         },
         collective_cost});
}

}  // namespace ms::ops
