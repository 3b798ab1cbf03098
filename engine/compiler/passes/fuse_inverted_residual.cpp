// Inverted-residual fusion (O2, CPU, after conv-layout): the block of MobileNetV2/V3 and
// EfficientNet as conv-layout leaves it, blocked FusedConvs
//   e = FusedConv_1x1(x) [act]  ->  d = FusedConv_depthwise(e) [act]  ->  y = FusedConv_1x1(d) [+ r, act]
// becomes one FusedInvertedResidual(x, W1, B1, Wd, Bd, W3, B3, r): its kernel computes the block a
// band of rows at a time with the expanded rows and the depthwise rows in L2, so the two wide
// tensors (6x the block's channels) never reach the arena. Either 1x1 conv may be missing (the
// first MobileNetV2 block has no expansion; an EfficientNet block's squeeze-excite sits between
// its depthwise conv and its projection), not both. Every intermediate is read by the block alone;
// the depthwise conv has no dilation, explicit pads within its kernel and activation post-ops; the
// 1x1 convs have stride 1 and no padding; x, the intermediates and y are all blocked (nChw8c/16c)
// in f32, the depthwise channels a multiple of the block.
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

bool blocked_fused_conv(const ir::Node& n) {
  return n.domain == ops::kFusedDomain && n.op_type == "FusedConv" &&
         n.attr_string("activation_layout", "") == "blocked" && n.attr_int("layout_block", 16) != 0 &&
         n.attr_int("src_blocked", 0) == 1 && n.attr_int("dst_blocked", 0) == 1 && n.inputs.size() >= 2 &&
         n.outputs.size() == 1 && n.attr_string("auto_pad", "NOTSET") == "NOTSET";
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

bool activations_only(const ir::Node& n) {
  auto post = ops::parse_post_ops(n);
  if (!post) return false;
  for (const auto& p : *post)
    if (p.kind == ops::PostOp::Kind::Add) return false;
  return true;
}

bool has_residual(const ir::Node& n) { return n.inputs.size() > 3 && !n.inputs[3].empty(); }

const std::vector<int64_t>* f32_dims(const PatternView& v, const std::string& name) {
  const ir::Value* val = v.graph().value(name);
  return val && val->type.dtype == DType::F32 ? v.static_dims(name) : nullptr;
}

// A blocked 1x1 conv (group 1, stride 1, no padding or dilation) from `ins` channels: its outputs,
// or 0.
int64_t pointwise_outputs(const PatternView& v, const ir::Node& n, int64_t ins) {
  if (!blocked_fused_conv(n) || n.attr_int("group", 1) != 1 || !all_equal(n.attr_ints("strides"), 1) ||
      !all_equal(n.attr_ints("pads"), 0) || !all_equal(n.attr_ints("dilations"), 1))
    return 0;
  const auto* w = f32_dims(v, n.inputs[1]);
  const auto* x = f32_dims(v, n.inputs[0]);
  if (!w || !x || w->size() != 4 || (*w)[1] != ins || (*w)[2] != 1 || (*w)[3] != 1 || x->size() != 4) return 0;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !f32_dims(v, n.inputs[2])) return 0;
  return (*w)[0];
}

struct Block {
  const ir::Node *expand = nullptr, *dw = nullptr, *project = nullptr;
};

std::optional<Block> match_block(const PatternView& v, const std::unordered_map<std::string, size_t>& producer,
                                 const ir::Node& d) {
  if (!blocked_fused_conv(d) || has_residual(d) || !activations_only(d)) return std::nullopt;
  const auto* w = f32_dims(v, d.inputs[1]);
  const auto* x = f32_dims(v, d.inputs[0]);
  const auto* y = f32_dims(v, d.outputs[0]);
  if (!w || !x || !y || w->size() != 4 || x->size() != 4 || y->size() != 4) return std::nullopt;
  const int64_t c = (*w)[0], block = d.attr_int("layout_block", 0);
  if (d.attr_int("group", 1) != c || (*w)[1] != 1 || (*x)[1] != c || (*y)[1] != c || (block != 8 && block != 16) ||
      c % block != 0 || (*w)[2] > 16)  // the kernel's kMaxDepthwiseKernel
    return std::nullopt;
  if (d.inputs.size() > 2 && !d.inputs[2].empty() && !f32_dims(v, d.inputs[2])) return std::nullopt;
  const auto strides = d.attr_ints("strides"), pads = d.attr_ints("pads"), dil = d.attr_ints("dilations");
  if ((!strides.empty() && strides.size() != 2) || (!pads.empty() && pads.size() != 4) || !all_equal(dil, 1))
    return std::nullopt;
  for (size_t i = 0; i < pads.size(); ++i)
    if (pads[i] < 0 || pads[i] >= (*w)[2 + i % 2]) return std::nullopt;
  for (int64_t s : strides)
    if (s < 1) return std::nullopt;
  Block b;
  b.dw = &d;
  auto p = producer.find(d.inputs[0]);
  if (p != producer.end() && v.read_only_by(d.inputs[0], 1)) {
    const ir::Node& e = v.graph().nodes()[p->second];
    const auto* ex = f32_dims(v, e.inputs.empty() ? std::string() : e.inputs[0]);
    if (ex && ex->size() == 4 && !has_residual(e) && activations_only(e) && pointwise_outputs(v, e, (*ex)[1]) == c &&
        e.attr_int("layout_block", 0) == block)
      b.expand = &e;
  }
  if (const ir::Node* pr = v.sole_reader(d.outputs[0])) {
    const bool residual_ok = !has_residual(*pr) || pr->attr_int("residual_blocked", 0) == 1;
    if (pr->inputs[0] == d.outputs[0] && residual_ok && pointwise_outputs(v, *pr, c) > 0 &&
        pr->attr_int("layout_block", 0) == block && ops::parse_post_ops(*pr))
      b.project = pr;
  }
  if (!b.expand && !b.project) return std::nullopt;
  return b;
}

void copy_post_ops(const ir::Node* from, const std::string& prefix, ir::Node& to) {
  if (!from) return;
  for (const char* a : {"post_ops", "post_alphas", "post_betas"}) {
    auto it = from->attrs.find(a);
    if (it != from->attrs.end()) to.attrs[prefix + a] = it->second;
  }
}

std::string input_or_empty(const ir::Node* n, size_t i) {
  return n && n->inputs.size() > i ? n->inputs[i] : std::string();
}

class FuseInvertedResidual final : public Pass {
 public:
  std::string name() const override { return "FuseInvertedResidual"; }
  std::string argument() const override { return "fuse-inverted-residual"; }
  std::string description() const override {
    return "blocked 1x1 conv -> depthwise conv -> 1x1 conv (MobileNet/EfficientNet inverted residual) into one "
           "kernel that keeps the expanded rows in cache";
  }
  bool runs_on_subgraphs() const override { return true; }

  Status run(ir::Graph& g) override {
    std::vector<Block> found;
    {
      const PatternView view(g);
      const auto producer = producer_index(g);
      work().nodes_visited += g.nodes().size();
      for (const ir::Node& n : g.nodes()) {
        if (n.domain != ops::kFusedDomain || n.op_type != "FusedConv" || n.attr_int("group", 1) == 1) continue;
        ++work().patterns_tried;
        auto m = match_block(view, producer, n);
        if (!m) continue;
        if (!take_rewrite()) break;
        found.push_back(*m);
      }
    }
    std::vector<NodeGroup> groups;
    for (const Block& b : found) {
      std::vector<const ir::Node*> nodes;
      for (const ir::Node* n : {b.expand, b.dw, b.project})
        if (n) nodes.push_back(n);
      const std::string x = b.expand ? b.expand->inputs[0] : b.dw->inputs[0];
      const std::string y = b.project ? b.project->outputs[0] : b.dw->outputs[0];
      std::vector<std::string> inputs{x,
                                      input_or_empty(b.expand, 1),
                                      input_or_empty(b.expand, 2),
                                      b.dw->inputs[1],
                                      input_or_empty(b.dw, 2),
                                      input_or_empty(b.project, 1),
                                      input_or_empty(b.project, 2)};
      if (b.project && has_residual(*b.project)) inputs.push_back(b.project->inputs[3]);
      ir::Node f = new_node(g, "FusedInvertedResidual", ops::kFusedDomain, inputs, {y}, nodes);
      std::vector<int64_t> strides = b.dw->attr_ints("strides"), pads = b.dw->attr_ints("pads");
      if (strides.empty()) strides = {1, 1};
      if (pads.empty()) pads = {0, 0, 0, 0};
      f.attrs["strides"] = ir::Attribute(strides);
      f.attrs["pads"] = ir::Attribute(pads);
      f.attrs["layout_block"] = ir::Attribute(b.dw->attr_int("layout_block", 0));
      f.attrs["src_blocked"] = ir::Attribute(int64_t{1});
      f.attrs["dst_blocked"] = ir::Attribute(int64_t{1});
      if (inputs.size() > 7) f.attrs["residual_blocked"] = ir::Attribute(int64_t{1});
      // A bf16 graph whose blocks amp-cast kept f32 (kAmpBlockProducts): the 1x1 convs' products in
      // bf16 inside the kernel where the CPU has the bf16 dot product.
      if (auto it = g.metadata.find(kAmpBlockProducts); it != g.metadata.end() && it->second == "bf16")
        f.attrs["products"] = ir::Attribute(std::string("bf16"));
      copy_post_ops(b.expand, "expand_", f);
      copy_post_ops(b.dw, "dw_", f);
      copy_post_ops(b.project, "project_", f);
      groups.push_back(fused_group(nodes, std::move(f)));
    }
    replace_node_groups(g, std::move(groups));
    return Status::ok();
  }
};

}  // namespace

PassPtr make_fuse_inverted_residual_pass() { return std::make_unique<FuseInvertedResidual>(); }

}  // namespace ms::compiler
