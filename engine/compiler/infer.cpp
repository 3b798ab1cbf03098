// Static type inference over a whole graph, with small constant computations folded on the CPU so
// that shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) give static shapes.
#include <algorithm>
#include <unordered_map>

#include "engine/compiler/infer.h"
#include "engine/ops/recurrent_internal.h"  // seed_scan_body
#include "engine/ops/schema.h"
#include "engine/runtime/kernel.h"

namespace ms::compiler {

using runtime::Backend;
using runtime::KernelContext;
using runtime::KernelFn;
using runtime::OutputAllocator;
namespace {

constexpr int64_t kFoldMaxElements = 4096;

bool foldable(const ir::Node& n) {
  if (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan") return false;
  if (n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" || n.op_type == "Multinomial" ||
      n.op_type == "Dropout")
    return false;
  return n.domain.empty();
}

class Inferrer {
 public:
  explicit Inferrer(Backend* be) : backend_(be) {}

  Status infer(ir::Graph& g, std::unordered_map<std::string, Tensor>& known) {
    for (const auto& [name, v] : g.values())
      if (v.constant) known[name] = *v.constant;
    for (auto& n : g.nodes()) {
      // Subgraphs first: their outputs' types define If/Loop outputs.
      for (auto& [key, a] : n.attrs) {
        if (auto* sub = a.get_if<ir::Attribute::GraphPtr>()) {
          if (!*sub) continue;
          (*sub)->set_parent(&g);
          if (n.op_type == "Loop") seed_loop_body(n, g, **sub);
          if (n.op_type == "Scan") ops::seed_scan_body(n, g.opset(n.domain), g, **sub);
          if (n.op_type == "SequenceMap") seed_sequence_map_body(n, g, **sub);
          auto inner = known;  // outer constants stay visible to the subgraph
          Status st = infer(**sub, inner);
          if (!st.is_ok()) return st;
        }
      }
      ops::InferContext ctx{n, g.opset(n.domain), {}, {}, {}};
      ctx.types.resize(n.inputs.size());
      ctx.values.resize(n.inputs.size(), nullptr);
      bool all_known = true;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i].empty()) continue;
        const ir::Value* v = g.resolve(n.inputs[i]);
        if (!v) return invalid_model(n.label() + ": input '" + n.inputs[i] + "' is not defined").with_node(n.id.value);
        ctx.types[i] = v->type;
        auto it = known.find(n.inputs[i]);
        if (it != known.end()) {
          ctx.values[i] = &it->second;
          ctx.types[i].dtype = it->second.dtype();
          ctx.types[i].dims = it->second.shape();
          ctx.types[i].dim_params.assign(it->second.shape().size(), "");
        } else {
          all_known = false;
        }
      }
      MS_RETURN_IF_ERROR(ops::infer_node(ctx));
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (n.outputs[i].empty()) continue;
        ir::Value* v = g.value(n.outputs[i]);
        if (!v) v = &g.add_value(ir::Value{n.outputs[i], {}, n.id, std::nullopt});
        v->type = ctx.outputs[i];
      }
      if (all_known && backend_ && foldable(n))
        fold(g, n, ctx, known);
      else if (!all_known)
        fold_shape_of(n, ctx, known);
    }
    return Status::ok();
  }

 private:
  // Loop body inputs: iteration (i64 scalar), condition (bool scalar), carried values (types of the
  // node's inputs, shapes relaxed when unknown).
  void seed_loop_body(const ir::Node& n, const ir::Graph& g, ir::Graph& body) {
    for (size_t i = 0; i < body.inputs.size(); ++i) {
      ir::Value* v = body.value(body.inputs[i]);
      if (!v) v = &body.add_value(ir::Value{body.inputs[i], {}, {}, std::nullopt});
      if (i == 0)
        v->type = ir::ValueType{DType::I64, std::vector<int64_t>{}, {}};
      else if (i == 1)
        v->type = ir::ValueType{DType::Bool, std::vector<int64_t>{}, {}};
      else if (v->type.dtype == DType::Undefined && i < n.inputs.size() && !n.inputs[i].empty()) {
        if (const ir::Value* outer = g.resolve(n.inputs[i])) {
          v->type.dtype = outer->type.dtype;  // shapes of carried values may change per iteration
          v->type.kind = outer->type.kind;
          v->type.elem_kind = outer->type.elem_kind;
        }
      }
    }
  }

  // SequenceMap body inputs left untyped: a sequence input's element type, else the input's type.
  static void seed_sequence_map_body(const ir::Node& n, const ir::Graph& g, ir::Graph& body) {
    for (size_t i = 0; i < body.inputs.size() && i < n.inputs.size(); ++i) {
      ir::Value* v = body.value(body.inputs[i]);
      if (!v) v = &body.add_value(ir::Value{body.inputs[i], {}, {}, std::nullopt});
      const ir::Value* outer = n.inputs[i].empty() ? nullptr : g.resolve(n.inputs[i]);
      if (v->type.dtype != DType::Undefined || !outer) continue;
      v->type = outer->type.kind == ValueKind::Sequence ? outer->type.element() : outer->type;
    }
  }

  void fold(const ir::Graph& g, const ir::Node& n, const ops::InferContext& ctx,
            std::unordered_map<std::string, Tensor>& known) {
    int64_t total = 0;
    for (const auto& t : ctx.outputs) {
      if (!t.is_static()) return;
      total += ops::static_numel(t);
    }
    if (total > kFoldMaxElements) return;
    KernelFn kernel = backend_->find_kernel(n);
    if (!kernel) return;
    std::vector<const Tensor*> ins(ctx.values.begin(), ctx.values.end());
    std::vector<Tensor> outs(n.outputs.size());
    for (size_t i = 0; i < outs.size(); ++i)
      if (!n.outputs[i].empty()) outs[i] = Tensor::empty(ctx.outputs[i].dtype, *ctx.outputs[i].dims);
    struct HostAlloc final : OutputAllocator {
      Expected<Tensor> allocate(size_t, DType dt, const Shape& s) override { return Tensor::empty(dt, s); }
      Expected<Tensor> scratch(DType dt, const Shape& s) override { return Tensor::empty(dt, s); }
    } alloc;
    KernelContext kctx(n, g.opset(n.domain), *backend_, ins, outs, alloc, nullptr);
    if (!kernel(kctx).is_ok()) return;  // folding is an optimization; the run reports real errors
    for (size_t i = 0; i < outs.size(); ++i)
      if (!n.outputs[i].empty() && outs[i].defined()) known[n.outputs[i]] = outs[i];
  }

  // Shape and Size need only the input's static type, not its value.
  static void fold_shape_of(const ir::Node& n, const ops::InferContext& ctx,
                            std::unordered_map<std::string, Tensor>& known) {
    if (!n.domain.empty() || n.inputs.empty() || n.outputs.empty() || n.outputs[0].empty()) return;
    if (n.op_type != "Shape" && n.op_type != "Size") return;
    const ir::ValueType& in = ctx.types[0];
    if (!in.is_static()) return;
    const auto& dims = *in.dims;
    if (n.op_type == "Size") {
      int64_t total = 1;
      for (int64_t d : dims) total *= d;
      known[n.outputs[0]] = Tensor::scalar<int64_t>(total);
      return;
    }
    const auto rank = static_cast<int64_t>(dims.size());
    auto clamp_axis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
    const int64_t start = ctx.opset >= 15 ? clamp_axis(n.attr_int("start", 0)) : 0;
    const int64_t end = ctx.opset >= 15 ? clamp_axis(n.attr_int("end", rank)) : rank;
    std::vector<int64_t> v;
    for (int64_t i = start; i < end; ++i) v.push_back(dims[static_cast<size_t>(i)]);
    const auto len = static_cast<int64_t>(v.size());
    known[n.outputs[0]] = Tensor::from_vector<int64_t>(v, {len});
  }

  Backend* backend_;
};

}  // namespace

Status infer_graph_types(ir::Graph& g, Backend* fold_backend) {
  std::unordered_map<std::string, Tensor> known;
  Inferrer inf(fold_backend && fold_backend->device().is_cpu() ? fold_backend : nullptr);
  return inf.infer(g, known);
}

}  // namespace ms::compiler
