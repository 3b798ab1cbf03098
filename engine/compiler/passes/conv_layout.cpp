// Conv layout (O2): 2-D f32 convolutions run with their activations in the layout the oneDNN
// primitive prefers (blocked nChw8c/16c for the jit direct convolutions instead of the gemm-based
// convolution over plain nchw), reordered at the op's boundary. Plain Convs become FusedConv (no
// post-ops) so one kernel carries the choice. Full propagation (keeping blocked layouts between
// convs, reorders only at region boundaries) is the next step; the arena keeps plain layouts.
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

class ConvLayout final : public Pass {
 public:
  std::string name() const override { return "ConvLayout"; }
  std::string argument() const override { return "conv-layout"; }
  std::string description() const override {
    return "2-D f32 convs run on oneDNN's preferred (blocked) activation layout, reordered at the op";
  }
  Status run(ir::Graph& g) override {
    bool any = false;
    for (auto& n : g.nodes()) {
      const bool plain_conv = n.domain.empty() && n.op_type == "Conv";
      const bool fused_conv = n.domain == ops::kFusedDomain && n.op_type == "FusedConv";
      if (!(plain_conv || fused_conv) || n.inputs.empty() || n.outputs.size() != 1) continue;
      const ir::Value* x = g.value(n.inputs[0]);
      const ir::Value* y = g.value(n.outputs[0]);
      if (!x || !y || x->type.dtype != DType::F32 || !x->type.is_static() || x->type.dims->size() != 4 ||
          !y->type.is_static())
        continue;
      if (plain_conv) {
        n.op_type = "FusedConv";
        n.domain = ops::kFusedDomain;
      }
      n.attrs["activation_layout"] = ir::Attribute(std::string("blocked"));
      any = true;
    }
    if (any && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

PassPtr make_conv_layout_pass() { return std::make_unique<ConvLayout>(); }

}  // namespace ms::compiler
