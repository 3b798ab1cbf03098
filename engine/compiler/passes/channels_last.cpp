// Channels-last (O2, device backends): bf16 and f16 2-D convolutions run on cuDNN's NHWC
// tensor-core kernels. Over NCHW activations cuDNN picks its generic implicit-GEMM kernel for the
// low types or transposes the activations to NHWC and back around every conv; a whole ResNet in
// NHWC transposes only at the region's edges. The conv-layout pass's attributes mark the region
// (src_blocked / dst_blocked / residual_blocked), with layout_block 0: the block is all the channels,
// nChw<C>c, which is NHWC (ops/blocked_layout.h), never padded. Plain Convs become FusedConv (no
// post-ops) so one kernel carries the choice; pools inside the region (a MaxPool between convs,
// the GlobalAveragePool after the last) become FusedPool. A value stays channels-last when its
// producer is such a conv or pool and every reader takes it as its activation or residual; graph
// outputs and values read by subgraphs never do. A conv or pool left with no channels-last operand
// goes back to the plain op.
//
// Only convs the device kernel takes channels-last qualify: static 4-D activations, explicit
// symmetric pads, input, weight, bias and residual of one low type, and a constant weight (the
// kernel keeps a KRSC copy of it; a training step's weights change every step).
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

#include <cstdlib>
#include <set>
#include <string>
#include <unordered_map>

namespace ms::compiler {
namespace {

// bf16 and f16 (the tensor cores' types); f32 too with MODESCOPE_CHANNELS_LAST=all (cuDNN's NHWC
// f32 kernels, measured against its NCHW ones).
bool layout_dtype(DType t) {
  static const bool f32_too = [] {
    const char* v = std::getenv("MODESCOPE_CHANNELS_LAST");
    return v && std::string(v) == "all";
  }();
  return t == DType::BF16 || t == DType::F16 || (f32_too && t == DType::F32);
}

bool static_4d(const ir::Value* v) { return v && v->type.is_static() && v->type.dims->size() == 4; }

// Explicit pads, equal at both ends of each axis (what the device conv and pool take).
bool symmetric_pads(const ir::Node& n) {
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  return pads.size() == 4 && pads[0] == pads[2] && pads[1] == pads[3];
}

class ChannelsLast final : public Pass {
 public:
  std::string name() const override { return "ChannelsLast"; }
  std::string argument() const override { return "channels-last"; }
  std::string description() const override {
    return "bf16/f16 convs and the pools between them keep their activations channels-last (NHWC) on a device "
           "(cuDNN's tensor-core layout), transposed only at the region's edges";
  }
  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    work().nodes_visited += 2 * g.nodes().size();
    bool spent = false;  // take_rewrite() said no: no more choices in this pass
    std::set<uint64_t> from_plain;
    bool any = false;
    for (auto& n : g.nodes()) {
      const bool plain_conv = n.domain.empty() && n.op_type == "Conv";
      const bool pool = n.domain.empty() && is_pool(n.op_type);
      if (!(plain_conv || is_fused_conv(n) || pool) || !(pool ? pool_qualifies(g, n) : conv_qualifies(g, n))) continue;
      if (!take(spent)) break;
      if (plain_conv) {
        n.op_type = "FusedConv";
        n.domain = ops::kFusedDomain;
        from_plain.insert(n.id.value);
      } else if (pool) {
        n.attrs["pool"] = ir::Attribute(n.op_type);
        n.op_type = "FusedPool";
        n.domain = ops::kFusedDomain;
        from_plain.insert(n.id.value);
      }
      n.attrs["activation_layout"] = ir::Attribute(std::string("nhwc"));
      any = true;
    }
    if (!any) return Status::ok();
    if (!g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    mark(g, channels_last_values(g), from_plain);
    return Status::ok();
  }

 private:
  static bool take(bool& spent) {
    if (!spent && !take_rewrite()) spent = true;
    return !spent;
  }

  static bool is_pool(const std::string& op) {
    return op == "MaxPool" || op == "GlobalAveragePool" || op == "GlobalMaxPool";  // FusedPool's pools
  }
  static bool is_fused_conv(const ir::Node& n) { return n.domain == ops::kFusedDomain && n.op_type == "FusedConv"; }
  static bool is_nhwc(const ir::Node& n) { return n.attr_string("activation_layout", "") == "nhwc"; }

  static bool conv_qualifies(const ir::Graph& g, const ir::Node& n) {
    if (n.inputs.size() < 2 || n.inputs.size() > 4 || n.outputs.size() != 1 || n.attrs.count("activation_layout") ||
        !symmetric_pads(n))
      return false;
    const ir::Value* x = g.value(n.inputs[0]);
    const ir::Value* w = g.value(n.inputs[1]);
    const ir::Value* y = g.value(n.outputs[0]);
    if (!static_4d(x) || !static_4d(w) || !static_4d(y) || !layout_dtype(x->type.dtype) || !w->is_initializer() ||
        w->type.dtype != x->type.dtype || y->type.dtype != x->type.dtype)
      return false;
    for (size_t i = 2; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      const ir::Value* v = g.value(n.inputs[i]);
      if (!v || v->type.dtype != x->type.dtype) return false;
    }
    return true;
  }

  static bool pool_qualifies(const ir::Graph& g, const ir::Node& n) {
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    const ir::Value* x = g.value(n.inputs[0]);
    const ir::Value* y = g.value(n.outputs[0]);
    if (!static_4d(x) || !static_4d(y) || !layout_dtype(x->type.dtype) || y->type.dtype != x->type.dtype) return false;
    if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") return true;
    return symmetric_pads(n) && n.attr_int("ceil_mode", 0) == 0 && n.attr_int("storage_order", 0) == 0 &&
           n.attr_ints("dilations", {1, 1}) == std::vector<int64_t>{1, 1} && n.attr_ints("kernel_shape").size() == 2;
  }

  // May read input i channels-last: a marked conv's activation or residual, a marked pool's input.
  static bool takes_nhwc(const ir::Node& n, size_t i) {
    if (!is_nhwc(n)) return false;
    return is_fused_conv(n) ? (i == 0 || i == 3) : i == 0;
  }

  // Values made by a marked node and read only channels-last (never graph outputs or subgraph reads).
  static std::set<std::string> channels_last_values(const ir::Graph& g) {
    const Uses uses = compute_uses(g);
    std::unordered_map<std::string, bool> readers_ok;
    for (const auto& n : g.nodes())
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i].empty()) continue;
        auto [it, fresh] = readers_ok.emplace(n.inputs[i], takes_nhwc(n, i));
        if (!fresh) it->second = it->second && takes_nhwc(n, i);
      }
    std::set<std::string> out;
    for (const auto& n : g.nodes()) {
      if (!is_nhwc(n) || n.outputs.size() != 1) continue;
      const std::string& v = n.outputs[0];
      auto it = readers_ok.find(v);
      if (it != readers_ok.end() && it->second && uses.only_plain(v) && static_4d(g.value(v))) out.insert(v);
    }
    return out;
  }

  static void mark(ir::Graph& g, const std::set<std::string>& nhwc, const std::set<uint64_t>& from_plain) {
    for (auto& n : g.nodes()) {
      if (!is_nhwc(n)) continue;
      auto mark_attr = [&](const char* attr, bool on) {
        if (on) n.attrs[attr] = ir::Attribute(int64_t{1});
      };
      const bool conv = is_fused_conv(n);
      mark_attr("src_blocked", nhwc.count(n.inputs[0]) > 0);
      mark_attr("residual_blocked", conv && n.inputs.size() > 3 && nhwc.count(n.inputs[3]) > 0);
      mark_attr("dst_blocked", nhwc.count(n.outputs[0]) > 0);
      if (n.attrs.count("src_blocked") || n.attrs.count("dst_blocked") || n.attrs.count("residual_blocked")) {
        n.attrs["layout_block"] = ir::Attribute(int64_t{0});
        continue;
      }
      // Nothing channels-last around it: the op as it was (same id, so the pass did not change it).
      n.attrs.erase("activation_layout");
      if (!from_plain.count(n.id.value)) continue;
      if (conv) {
        n.op_type = "Conv";
      } else {
        n.op_type = n.attr_string("pool", "");
        n.attrs.erase("pool");
      }
      n.domain.clear();
    }
  }
};

}  // namespace

PassPtr make_channels_last_pass() { return std::make_unique<ChannelsLast>(); }

}  // namespace ms::compiler
