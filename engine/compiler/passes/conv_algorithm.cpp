// Conv algorithm (O2, CPU): 3x3 convs with stride 1 over at least 64 channels on planes of at least
// 7x7, on the blocked layout, may run as Winograd (F(2x2,3x3): 2.25x fewer multiplications than the direct conv;
// F(4x4,3x3): 4x), paid for with a transform scratch of up to tens of MiB per conv. The pass marks
// them (algorithm="winograd"); the FusedConv kernel takes Winograd only where that scratch fits the
// room the memory plan leaves beside the values live at the step (5% over the values' lower bound,
// or 8 MiB beyond it where that is more: CompileOptions), so Graph mode keeps a small arena. Eager
// mode has no plan to know that room: it always runs the direct conv. bf16 convs (a --precision bf16
// graph's) are marked too: the kernel runs them as bf16 F(2x2,3x3) on planes of 14x14 or more where
// the CPU has AVX-512-BF16 but no AMX (engine/backends/cpu/winograd.h).
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

// Below these the transforms may cost more than the products save. On 7x7 planes F(2x2,3x3) wins
// too: ResNet-50's 512-channel layer-4 convs, 2.5 -> 2.0-2.1 ms at one thread and 1.45 -> 1.0-1.2 ms
// at two (AVX-512 Zen 4; on 14x14, 256 channels: 0.55 against 0.91 ms).
constexpr int64_t kMinChannels = 64;
constexpr int64_t kMinPlane = 7;

bool all_ones(const ir::Node& n, const char* attr) {
  for (int64_t v : n.attr_ints(attr, {}))
    if (v != 1) return false;
  return true;
}

class ConvAlgorithm final : public Pass {
 public:
  std::string name() const override { return "ConvAlgorithm"; }
  std::string argument() const override { return "conv-algorithm"; }
  std::string description() const override {
    return "3x3 convs run as Winograd where the memory plan has room for its scratch (else direct)";
  }
  Status run(ir::Graph& g) override {
    work().nodes_visited += g.nodes().size();
    for (auto& n : g.nodes()) {
      if (n.domain != ops::kFusedDomain || n.op_type != "FusedConv" || n.inputs.size() < 2 || n.outputs.size() != 1 ||
          n.attr_string("activation_layout", "") != "blocked" || n.attr_int("layout_block", 16) == 0 ||
          n.attr_int("group", 1) != 1 || !all_ones(n, "strides") || !all_ones(n, "dilations") ||
          n.attrs.count("algorithm"))
        continue;
      const ir::Value* w = g.value(n.inputs[1]);
      if (!w || (w->type.dtype != DType::F32 && w->type.dtype != DType::BF16) || !w->type.is_static()) continue;
      const Shape& ws = *w->type.dims;
      if (ws.size() != 4 || ws[2] != 3 || ws[3] != 3 || ws[0] < kMinChannels || ws[1] < kMinChannels ||
          ws[0] % 16 != 0 || ws[1] % 16 != 0)
        continue;
      const ir::Value* y = g.value(n.outputs[0]);
      if (!y || !y->type.is_static() || y->type.dims->size() != 4 || (*y->type.dims)[2] < kMinPlane ||
          (*y->type.dims)[3] < kMinPlane)
        continue;
      if (!take_rewrite()) break;
      n.attrs["algorithm"] = ir::Attribute(std::string("winograd"));
    }
    return Status::ok();
  }
};

}  // namespace

PassPtr make_conv_algorithm_pass() { return std::make_unique<ConvAlgorithm>(); }

}  // namespace ms::compiler
