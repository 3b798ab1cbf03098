// Squeeze-excite fusion (CPU): the block of EfficientNet and MobileNetV3,
//   s = act2(Conv_1x1(act1(Conv_1x1(GlobalAveragePool(x), W1, B1)), W2, B2));  y = Mul(x, s)
// (the Mul's operands in either order; Conv biases optional), becomes one FusedSqueezeExcite(x, W1,
// B1, W2, B2) with the two activations as post_ops: one pass pools x, two matrix-vector products
// make the per-channel scale, one pass writes the scaled x. Five kernel calls and their values go
// (EfficientNet-B0's 16 blocks: 96 nodes -> 16), and at O2 conv-layout keeps x and y in the blocked
// layout, so the depthwise conv before and the 1x1 conv after run without reorders. Runs before
// fuse-ops (which would take the activations into the 1x1 convs) and after fuse-activations (SiLU
// becomes one Swish). Every intermediate must be read by the pattern alone; x is 4-D with static
// shape, f32 or (a bf16 graph's) bf16, and the weights are of x's type.
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"
#include "engine/compiler/passes/post_op_match.h"

namespace ms::compiler {
namespace {

struct SqueezeExcite {
  std::vector<const ir::Node*> nodes;  // pool, conv1, act1, conv2, act2, mul
  std::string x, w1, b1, w2, b2, out;
  int64_t reduced = 0, channels = 0;
  ops::PostOp act1, act2;
};

// A 1x1 Conv (not grouped) from `in` whose output is [N, outs, 1, 1]: its weights and bias names.
bool se_pointwise_conv(const PatternView& v, const ir::Node* conv, const std::string& in, int64_t batch, int64_t ins,
                       int64_t& outs, DType t) {
  if (!conv || conv->inputs.size() < 2 || conv->inputs[0] != in || conv->outputs.size() != 1 ||
      conv->attr_int("group", 1) != 1)
    return false;
  const auto* w = v.static_dims(conv->inputs[1]);
  const auto* y = v.static_dims(conv->outputs[0]);
  if (!w || !y || w->size() != 4 || (*w)[1] != ins || (*w)[2] != 1 || (*w)[3] != 1) return false;
  outs = (*w)[0];
  if (*y != std::vector<int64_t>{batch, outs, 1, 1}) return false;
  if (conv->inputs.size() > 2 && !conv->inputs[2].empty()) {
    const auto* b = v.static_dims(conv->inputs[2]);
    if (!b || b->size() != 1 || (*b)[0] != outs) return false;
  }
  const ir::Value* wv = v.graph().value(conv->inputs[1]);
  return wv && wv->type.dtype == t;
}

// The activation node that alone reads `val`, as a post-op; nullptr when there is none.
const ir::Node* se_activation(const PatternView& v, const std::string& val, ops::PostOp& p) {
  const ir::Node* n = v.sole_reader(val);
  return n && n->inputs[0] == val && activation_post_op(v.graph(), *n, p) && p.kind != ops::PostOp::Kind::Add ? n
                                                                                                              : nullptr;
}

std::optional<SqueezeExcite> match_squeeze_excite(const PatternView& v, const ir::Node& pool) {
  SqueezeExcite m;
  m.x = pool.inputs[0];
  const ir::Value* xv = v.graph().value(m.x);
  const auto* xd = v.static_dims(m.x);
  if (!xv || (xv->type.dtype != DType::F32 && xv->type.dtype != DType::BF16) || !xd || xd->size() != 4)
    return std::nullopt;
  const DType t = xv->type.dtype;
  const int64_t batch = (*xd)[0];
  m.channels = (*xd)[1];
  const ir::Node* c1 = v.sole_reader(pool.outputs[0], "Conv");
  if (!se_pointwise_conv(v, c1, pool.outputs[0], batch, m.channels, m.reduced, t)) return std::nullopt;
  const ir::Node* a1 = se_activation(v, c1->outputs[0], m.act1);
  const ir::Node* c2 = a1 ? v.sole_reader(a1->outputs[0], "Conv") : nullptr;
  int64_t back = 0;
  if (!c2 || !se_pointwise_conv(v, c2, a1->outputs[0], batch, m.reduced, back, t) || back != m.channels)
    return std::nullopt;
  const ir::Node* a2 = se_activation(v, c2->outputs[0], m.act2);
  const ir::Node* mul = a2 ? v.sole_reader(a2->outputs[0], "Mul") : nullptr;
  const std::string* other = mul ? PatternView::other_input(*mul, a2->outputs[0]) : nullptr;
  if (!other || *other != m.x || mul->outputs.size() != 1) return std::nullopt;
  const auto* yd = v.static_dims(mul->outputs[0]);
  if (!yd || *yd != *xd) return std::nullopt;
  m.nodes = {&pool, c1, a1, c2, a2, mul};
  m.w1 = c1->inputs[1];
  m.b1 = c1->inputs.size() > 2 ? c1->inputs[2] : "";
  m.w2 = c2->inputs[1];
  m.b2 = c2->inputs.size() > 2 ? c2->inputs[2] : "";
  m.out = mul->outputs[0];
  return m;
}

// The bias, or a zero initializer of `n` elements in its place.
std::string se_bias_or_zero(ir::Graph& g, const std::string& bias, int64_t n, const std::string& base, DType t) {
  if (!bias.empty()) return bias;
  const std::string name = fresh_name(g, base + "_zero_bias");
  g.add_initializer(name, Tensor::zeros(t, {n}));
  return name;
}

class FuseSqueezeExcite final : public Pass {
 public:
  std::string name() const override { return "FuseSqueezeExcite"; }
  std::string argument() const override { return "fuse-squeeze-excite"; }
  std::string description() const override {
    return "GlobalAveragePool -> 1x1 Conv -> act -> 1x1 Conv -> act -> Mul (squeeze-excite) into one pass kernel";
  }
  bool runs_on_subgraphs() const override { return true; }

  // One scan from each GlobalAveragePool; matches are disjoint (their intermediates have one reader).
  Status run(ir::Graph& g) override {
    const size_t fused_count = fuse_matches(
        g,
        [](const ir::Node& n) {
          return n.op_type == "GlobalAveragePool" && n.inputs.size() == 1 && n.outputs.size() == 1;
        },
        match_squeeze_excite,
        [](ir::Graph& g2, const SqueezeExcite& m) {
          const DType t = g2.value(m.x)->type.dtype;
          const std::string b1 = se_bias_or_zero(g2, m.b1, m.reduced, m.w1, t);
          const std::string b2 = se_bias_or_zero(g2, m.b2, m.channels, m.w2, t);
          ir::Node f =
              new_node(g2, "FusedSqueezeExcite", ops::kFusedDomain, {m.x, m.w1, b1, m.w2, b2}, {m.out}, m.nodes);
          set_post_op_attrs({m.act1, m.act2}, f);
          return fused_group(m.nodes, std::move(f));
        });
    if (fused_count && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

PassPtr make_fuse_squeeze_excite_pass() { return std::make_unique<FuseSqueezeExcite>(); }

}  // namespace ms::compiler
