// Dense layout (O2, CPU): a Gemm or MatMul (fused or not) with a few rows of f32 A (batch-1 Dense
// layers) and constant f32 weights becomes a PackedGemv whose weights are packed once, here, as
// [ceil(N / 16), K, 16]: each block of 16 output columns is one sequential stream of K vectors,
// which the matrix-vector kernel reads faster than either stored layout (one stream per thread, no
// horizontal sums). Eager execution cannot do this: its weights are the caller's tensors, which may
// change between calls, in the layout the caller gave them. A constant Gemm C becomes a bias of N
// values (times beta); a C of another shape, a non-constant C, a weight that is a graph input
// (an overridable default) or fewer than 16 output columns keep the node as it is.
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/ops/fused.h"

#include <map>

namespace ms::compiler {
namespace {

const ir::ValueType* static_2d_f32(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.value(name);
  if (!v || v->type.dtype != DType::F32 || !v->type.is_static() || v->type.dims->size() != 2) return nullptr;
  return &v->type;
}

class DenseLayout final : public Pass {
 public:
  std::string name() const override { return "DenseLayout"; }
  std::string argument() const override { return "dense-layout"; }
  std::string description() const override {
    return "constant weights of few-row f32 Gemm/MatMul packed for the matrix-vector kernel (PackedGemv)";
  }

  Status run(ir::Graph& g) override {
    std::map<std::pair<std::string, bool>, std::string> packed;  // (weights, stored [N, K]) -> packed
    bool any = false;
    for (auto& n : g.nodes()) {
      const bool fused = n.domain == ops::kFusedDomain;
      if (!(n.domain.empty() || fused)) continue;
      const std::string base = fused && n.op_type.rfind("Fused", 0) == 0 ? n.op_type.substr(5) : n.op_type;
      if ((fused && base == n.op_type) || (base != "Gemm" && base != "MatMul")) continue;
      if (n.outputs.size() != 1 || n.inputs.size() < 2) continue;
      const bool gemm = base == "Gemm";
      const ir::ValueType* a = static_2d_f32(g, n.inputs[0]);
      const ir::ValueType* y = static_2d_f32(g, n.outputs[0]);
      const Tensor* w = constant_of(g, n.inputs[1]);
      if (!a || !y || !w || w->dtype() != DType::F32 || w->rank() != 2) continue;
      const int64_t m = (*y->dims)[0], cols = (*y->dims)[1];
      if (m < 1 || m > ops::kPackedGemvMaxRows || cols < ops::kPackedGemvWidth) continue;
      const bool w_nk = gemm && n.attr_int("transB", 0) != 0;
      if ((w_nk ? w->dim(0) : w->dim(1)) != cols) continue;
      const bool ta = gemm && n.attr_int("transA", 0) != 0;
      if ((*a->dims)[ta ? 0 : 1] != (w_nk ? w->dim(1) : w->dim(0))) continue;

      std::string bias;  // f32 [N] or none
      if (gemm && n.has_input(2)) {
        const Tensor* c = constant_of(g, n.inputs[2]);
        if (!c || c->dtype() != DType::F32 || !(c->numel() == 1 || (c->numel() == cols && c->dim(-1) == cols)))
          continue;
        const float beta = n.attr_float("beta", 1.f);
        if (c->rank() == 1 && c->numel() == cols && beta == 1.f) {
          bias = n.inputs[2];
        } else {
          Tensor b = Tensor::empty(DType::F32, {cols});
          for (int64_t j = 0; j < cols; ++j) b.data<float>()[j] = beta * c->data<float>()[c->numel() == 1 ? 0 : j];
          bias = fresh_name(g, n.inputs[2] + "_bias");
          g.add_initializer(bias, std::move(b));
        }
      } else if (!gemm && n.has_input(2)) {
        bias = n.inputs[2];  // FusedMatMul's bias over N
      }

      auto [it, fresh] = packed.try_emplace({n.inputs[1], w_nk});
      if (fresh) {
        it->second = fresh_name(g, n.inputs[1] + "_packed");
        g.add_initializer(it->second, ops::pack_gemv_weights(*w, w_nk));
      }
      std::vector<std::string> inputs{n.inputs[0], it->second, bias};
      if (fused && n.has_input(3)) inputs.push_back(n.inputs[3]);
      while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
      std::map<std::string, ir::Attribute> attrs;
      for (const char* key : {"post_ops", "post_alphas", "post_betas"})
        if (n.attrs.count(key)) attrs[key] = n.attrs.at(key);
      attrs["n"] = ir::Attribute(cols);
      if (ta) attrs["transA"] = ir::Attribute(int64_t{1});
      const float alpha = gemm ? n.attr_float("alpha", 1.f) : 1.f;
      if (alpha != 1.f) attrs["alpha"] = ir::Attribute(alpha);
      n.op_type = "PackedGemv";
      n.domain = ops::kFusedDomain;
      n.inputs = std::move(inputs);
      n.attrs = std::move(attrs);
      any = true;
    }
    if (any && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    return Status::ok();
  }
};

}  // namespace

PassPtr make_dense_layout_pass() { return std::make_unique<DenseLayout>(); }

}  // namespace ms::compiler
