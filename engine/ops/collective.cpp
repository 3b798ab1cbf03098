// AllReduce (domain ai.modescope): the data-parallel step's gradient collective. N inputs, N
// outputs of the same types; output i is input i reduced over every rank (attribute `mean`: 1
// divides by the rank count), all inputs in ONE collective over a packed buffer. The graph passes
// insert-allreduce and fuse-allreduce place it; its kernel is the communicator's (engine/dist,
// registered at run time), so on one rank it is the identity.
#include "engine/ops/families.h"

namespace ms::ops {

void register_collective_ops(Registry& r) {
  r.add({"AllReduce", "ai.modescope", 1, 1, -1, 1, -1, OpCategory::Other,
         [](InferContext& ctx) {
           if (ctx.outputs.size() != ctx.num_inputs())
             return ctx.fail("AllReduce has " + std::to_string(ctx.num_inputs()) + " inputs and " +
                             std::to_string(ctx.outputs.size()) + " outputs (one output per input)");
           for (size_t i = 0; i < ctx.num_inputs(); ++i) {
             if (!ctx.in(i).is_tensor()) return ctx.fail("input " + std::to_string(i) + " is not a tensor");
             if (ctx.in(i).dtype != ctx.in(0).dtype) return ctx.fail("inputs of different dtypes");
             ctx.outputs[i] = ctx.in(i);
           }
           return Status::ok();
         },
         [](const CostContext& c) {
           double bytes = 0;
           for (const auto& t : c.inputs) {
             const int64_t n = static_numel(t);
             if (n > 0) bytes += 2.0 * static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
           }
           return Cost{0, bytes};
         }});
}

}  // namespace ms::ops
