// BatchNorm folding: BatchNormalization(Conv(x, W, B)) in inference is a Conv with rewritten weights:
// s = scale / sqrt(var + eps), W' = W * s (per output channel), B' = (B - mean) * s + bias. Same for
// Gemm (per output column). New initializers are made; the originals are never written (snapshots
// and the caller's graph share their bytes). The new node stands for both.
#include <cmath>
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"

namespace ms::compiler {
namespace {

bool f32_vector(const Tensor* t, int64_t n) { return t && t->dtype() == DType::F32 && t->numel() == n; }

class FoldBatchnorm final : public Pass {
 public:
  std::string name() const override { return "FoldBatchnorm"; }
  std::string argument() const override { return "fold-batchnorm"; }
  std::string description() const override {
    return "fold inference BatchNormalization into the preceding Conv/Gemm weights";
  }

  Status run(ir::Graph& g) override {
    rewrite_to_fixpoint([&] { return step(g); });
    return Status::ok();
  }

 private:
  // One scan folds every BatchNorm whose producer is an original Conv/Gemm (each pair is disjoint:
  // the producer's result is read by the BatchNorm alone), in node order, then all are swapped in. A
  // BatchNorm reading another BatchNorm's result folds in the next scan, into the Conv made here.
  bool step(ir::Graph& g) {
    const Uses uses = compute_uses(g);
    const auto prod = producer_index(g);
    std::vector<NodeGroup> groups;
    bool refused = false;
    work().nodes_visited += g.nodes().size();
    for (size_t i = 0; i < g.nodes().size() && !refused; ++i) {
      const ir::Node& bn = g.nodes()[i];
      if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5) continue;
      if (bn.attr_int("training_mode", 0) != 0) continue;
      bool extra = false;
      for (size_t o = 1; o < bn.outputs.size(); ++o)
        if (!bn.outputs[o].empty() && uses.of(bn.outputs[o]) > 0) extra = true;
      if (extra || bn.outputs.empty() || bn.outputs[0].empty()) continue;
      auto p = prod.find(bn.inputs[0]);
      if (p == prod.end() || uses.of(bn.inputs[0]) != 1 || !uses.only_plain(bn.inputs[0])) continue;
      const ir::Node& src = g.nodes()[p->second];
      if (!src.domain.empty() || (src.op_type != "Conv" && src.op_type != "Gemm")) continue;
      ++work().patterns_tried;
      if (auto grp = fold(g, src, bn, refused)) groups.push_back(std::move(*grp));
    }
    const bool any = !groups.empty();
    replace_node_groups(g, std::move(groups));
    return any && !refused;
  }

  // The folded node, or nothing; `refused` when take_rewrite() said no.
  std::optional<NodeGroup> fold(ir::Graph& g, const ir::Node& src, const ir::Node& bn, bool& refused) {
    const bool conv = src.op_type == "Conv";
    if (!src.has_input(1)) return std::nullopt;
    const Tensor* w = constant_of(g, src.inputs[1]);
    if (!w || w->dtype() != DType::F32 || w->rank() < 2) return std::nullopt;
    const Tensor* b = src.has_input(2) ? constant_of(g, src.inputs[2]) : nullptr;
    if (src.has_input(2) && !b) return std::nullopt;
    int64_t m = 0;
    bool per_row = true;  // output channel is W's first axis
    float alpha = 1.f, beta = 1.f;
    if (conv) {
      m = w->dim(0);
    } else {
      if (w->rank() != 2) return std::nullopt;
      per_row = src.attr_int("transB", 0) != 0;
      m = per_row ? w->dim(0) : w->dim(1);
      alpha = src.attr_float("alpha", 1.f);
      beta = src.attr_float("beta", 1.f);
      const ir::Value* a = g.value(src.inputs[0]);
      if (!a || !a->type.dims || a->type.dims->size() != 2) return std::nullopt;
    }
    if (b && !(b->dtype() == DType::F32 && (b->numel() == m || (!conv && b->numel() == 1)))) return std::nullopt;
    const Tensor* scale = constant_of(g, bn.inputs[1]);
    const Tensor* bias = constant_of(g, bn.inputs[2]);
    const Tensor* mean = constant_of(g, bn.inputs[3]);
    const Tensor* var = constant_of(g, bn.inputs[4]);
    if (!f32_vector(scale, m) || !f32_vector(bias, m) || !f32_vector(mean, m) || !f32_vector(var, m))
      return std::nullopt;
    if (!take_rewrite()) {
      refused = true;
      return std::nullopt;
    }
    const float eps = bn.attr_float("epsilon", 1e-5f);
    std::vector<float> s(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c) s[c] = scale->data<float>()[c] / std::sqrt(var->data<float>()[c] + eps);

    Tensor w2 = Tensor::empty(DType::F32, w->shape());
    const float* wi = w->data<float>();
    float* wo = w2.data<float>();
    const int64_t total = w->numel();
    if (per_row) {
      const int64_t inner = total / m;
      for (int64_t c = 0; c < m; ++c)
        for (int64_t k = 0; k < inner; ++k) wo[c * inner + k] = wi[c * inner + k] * s[c] * alpha;
    } else {
      const int64_t rows = w->dim(0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < m; ++c) wo[r * m + c] = wi[r * m + c] * s[c] * alpha;
    }
    Tensor b2 = Tensor::empty(DType::F32, {m});
    for (int64_t c = 0; c < m; ++c) {
      const float b0 = b ? b->data<float>()[b->numel() == 1 ? 0 : c] * (conv ? 1.f : beta) : 0.f;
      b2.data<float>()[c] = (b0 - mean->data<float>()[c]) * s[c] + bias->data<float>()[c];
    }
    const std::string wname = fresh_name(g, src.inputs[1] + "_bnfold");
    g.add_initializer(wname, std::move(w2));
    const std::string bname = fresh_name(g, bn.outputs[0] + "_bias");
    g.add_initializer(bname, std::move(b2));

    ir::Node fused = new_node(g, src.op_type, "", {src.inputs[0], wname, bname}, {bn.outputs[0]}, {&src, &bn});
    fused.attrs = src.attrs;
    if (!conv) {
      fused.attrs["alpha"] = ir::Attribute(1.0f);
      fused.attrs["beta"] = ir::Attribute(1.0f);
    }
    NodeGroup grp;
    grp.ids = {src.id.value, bn.id.value};
    grp.node = std::move(fused);
    grp.place = Place::First;
    return grp;
  }
};

}  // namespace

PassPtr make_fold_batchnorm_pass() { return std::make_unique<FoldBatchnorm>(); }

}  // namespace ms::compiler
