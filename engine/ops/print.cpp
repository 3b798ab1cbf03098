// Print (domain ai.modescope): passes its input through and prints it when it runs, so a value
// can be watched in Graph mode too (the builder API's ops::print). Attribute `label` (string).
// Being on the data path (output = input) keeps it alive through dead-code elimination.
#include "engine/ops/families.h"

namespace ms::ops {

void register_modescope_ops(Registry& r) {
  r.add(
      {"Print", "ai.modescope", 1, 1, 1, 1, 1, OpCategory::Other,
       [](InferContext& ctx) {
         if (ctx.node.has_attr("label") && !ctx.node.attrs.at("label").get_if<std::string>())
           return ctx.fail("attribute 'label' must be a string");
         ctx.outputs[0] = ctx.in(0);
         return Status::ok();
       },
       [](const CostContext& c) {
         const int64_t n = c.inputs.empty() ? -1 : static_numel(c.inputs[0]);
         return Cost{0, n > 0 ? 2.0 * static_cast<double>(n) * static_cast<double>(dtype_size(c.inputs[0].dtype)) : 0};
       }});
}

}  // namespace ms::ops
