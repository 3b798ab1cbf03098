// fold-weight-transpose: MatMul(A, Transpose(W)) with W a 2-D f32 constant becomes
// FusedMatMul(A, W, transB=1), whose kernel reads W's rows as the product's columns (the prepacked
// path packs straight from W). Without it, constant folding made a transposed copy of every such
// weight (a PyTorch `x @ w.T` export, a tied LM head): 340 MB of a 437 MB transformer encoder, held
// beside the original the source graph keeps and the packed copy the kernel makes. In a bf16 graph
// amp-cast has made that Transpose(Cast(W)): the product takes Cast(W), which folding turns into
// bf16 weights as W is stored, without the transposed f32 copy on the way. Runs before constant
// folding; CPU only (the device kernels take no transB on FusedMatMul). A Transpose that other
// nodes read stays for them; one that only absorbed products read goes.
#include <optional>
#include <unordered_map>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/core/dtype.h"
#include "engine/ops/fused.h"

namespace ms::compiler {
namespace {

// A non-empty 2-D f32 constant.
bool f32_matrix(const ir::Graph& g, const std::string& name) {
  const Tensor* w = constant_of(g, name);
  return w && w->rank() == 2 && w->dtype() == DType::F32 && w->numel() > 0 && w->device().is_cpu();
}

// Whether Transpose `t` swaps the axes of weights a product of type `type` can read in place: a
// 2-D f32 constant (f32), or amp-cast's Cast to bf16 of one (bf16).
bool transposed_weights(const ir::Graph& g, const std::unordered_map<std::string, size_t>& producers, const ir::Node& t,
                        DType type) {
  if (t.op_type != "Transpose" || !t.domain.empty() || t.inputs.size() != 1 || t.outputs.size() != 1) return false;
  const auto perm = t.attr_ints("perm");
  if (!perm.empty() && !(perm.size() == 2 && perm[0] == 1 && perm[1] == 0)) return false;
  if (type == DType::F32) return f32_matrix(g, t.inputs[0]);
  auto p = producers.find(t.inputs[0]);
  if (p == producers.end()) return false;
  const ir::Node& c = g.nodes()[p->second];
  return c.op_type == "Cast" && c.domain.empty() && c.inputs.size() == 1 &&
         c.attr_int("to", 0) == dtype_to_onnx(DType::BF16) && f32_matrix(g, c.inputs[0]);
}

// A product the prepacked kernel takes: A and the result of one type, f32 or bf16 (a bf16 graph's),
// A of known rank 2 or more.
std::optional<DType> product_type(const ir::Graph& g, const ir::Node& m) {
  if (m.op_type != "MatMul" || !m.domain.empty() || m.inputs.size() != 2 || m.outputs.size() != 1) return std::nullopt;
  const ir::Value* a = g.value(m.inputs[0]);
  const ir::Value* y = g.value(m.outputs[0]);
  if (!a || !y || a->type.dtype != y->type.dtype || !a->type.has_rank() || a->type.dims->size() < 2)
    return std::nullopt;
  if (a->type.dtype != DType::F32 && a->type.dtype != DType::BF16) return std::nullopt;
  return a->type.dtype;
}

class FoldWeightTranspose final : public Pass {
 public:
  std::string name() const override { return "FoldWeightTranspose"; }
  std::string argument() const override { return "fold-weight-transpose"; }
  std::string description() const override {
    return "MatMul(A, Transpose(constant W)) into FusedMatMul(A, W, transB): the weights are read transposed "
           "in place, with no transposed copy";
  }
  Status run(ir::Graph& g) override {
    const Uses uses = compute_uses(g);
    const auto producers = producer_index(g);
    std::vector<std::pair<const ir::Node*, const ir::Node*>> found;  // (MatMul, its weights' Transpose)
    std::unordered_map<std::string, int> absorbed;                   // Transpose output -> products that took it
    work().nodes_visited += g.nodes().size();
    for (const ir::Node& m : g.nodes()) {
      const std::optional<DType> type = product_type(g, m);
      if (!type) continue;
      auto p = producers.find(m.inputs[1]);
      if (p == producers.end()) continue;
      const ir::Node& t = g.nodes()[p->second];
      ++work().patterns_tried;
      if (!transposed_weights(g, producers, t, *type)) continue;
      if (!take_rewrite()) break;
      found.emplace_back(&m, &t);
      ++absorbed[m.inputs[1]];
    }
    if (found.empty()) return Status::ok();
    // A Transpose whose every reader took its weights is read by nothing now: dropped here, before
    // constant folding would transpose the weights for nobody. The products then stand for it too
    // (the origins spine maps PyNative's Transpose to them).
    std::set<uint64_t> unread;
    for (const auto& [out, n] : absorbed)
      if (uses.only_plain(out) && uses.of(out) == n) unread.insert(g.nodes()[producers.at(out)].id.value);
    std::vector<NodeGroup> groups;
    for (const auto& [m, t] : found) {
      const bool gone = unread.count(t->id.value) > 0;
      ir::Node f = new_node(g, "FusedMatMul", ops::kFusedDomain, {m->inputs[0], t->inputs[0]}, m->outputs,
                            gone ? std::vector<const ir::Node*>{t, m} : std::vector<const ir::Node*>{m});
      f.name = m->name;
      f.attrs["transB"] = ir::Attribute(int64_t{1});
      NodeGroup grp;
      grp.ids.insert(m->id.value);
      grp.node = std::move(f);
      grp.place = Place::First;
      groups.push_back(std::move(grp));
    }
    replace_node_groups(g, std::move(groups));
    erase_nodes(g, unread);
    if (!g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

PassPtr make_fold_weight_transpose_pass() { return std::make_unique<FoldWeightTranspose>(); }

}  // namespace ms::compiler
