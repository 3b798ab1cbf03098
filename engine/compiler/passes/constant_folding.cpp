// Constant folding: a node whose inputs are all constants runs once on the CPU backend at compile
// time and its outputs become initializers. Shape/Size of a statically shaped value fold from the
// type alone, so whole Shape subgraphs collapse on static shapes; of a value with symbolic dims, the
// entries that are known fold where a Gather or Slice picks them.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/schema.h"
#include "engine/runtime/backend.h"

namespace ms::compiler {
namespace {

// Folding trades compile time and initializer memory for run time; huge results are left to run.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

bool foldable(const ir::Node& n) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan") return false;
  if (n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" || n.op_type == "Multinomial") return false;
  if (n.op_type == "Dropout" && n.outputs.size() > 1) return false;
  return true;
}

// The axes [start, end) a Shape node reports of a rank-`rank` input (opset 15's start/end, clamped).
std::pair<int64_t, int64_t> shape_range(const ir::Node& n, int64_t rank, int64_t opset) {
  auto clamp_axis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  if (opset < 15) return {0, rank};
  return {clamp_axis(n.attr_int("start", 0)), clamp_axis(n.attr_int("end", rank))};
}

std::optional<Tensor> shape_of(const ir::Node& n, const ir::ValueType& in, int64_t opset) {
  if (!in.is_static()) return std::nullopt;
  const auto& dims = *in.dims;
  if (n.op_type == "Size") {
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    return Tensor::scalar<int64_t>(total);
  }
  const auto [start, end] = shape_range(n, static_cast<int64_t>(dims.size()), opset);
  std::vector<int64_t> v;
  for (int64_t i = start; i < end; ++i) v.push_back(dims[static_cast<size_t>(i)]);
  const auto len = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>(v, {len});
}

// A partly known shape: the entries of a Shape output (-1 where the dim is symbolic). A Gather or a
// Slice that picks only known entries folds, so a shape bucket's graph keeps only the computations
// that really depend on its symbolic dims (GPT's `b, s, d = x.shape`: b and d fold, s stays).
struct PartialShape {
  std::vector<int64_t> dims;        // -1 where symbolic
  std::vector<std::string> params;  // the symbolic dims' names ("" unnamed)
};
using PartialShapes = std::unordered_map<std::string, PartialShape>;

void note_partial_shape(const ir::Node& n, const ir::ValueType& in, int64_t opset, PartialShapes& partial) {
  if (n.op_type != "Shape" || !in.has_rank() || n.outputs.empty() || n.outputs[0].empty()) return;
  const auto& dims = *in.dims;
  const auto [start, end] = shape_range(n, static_cast<int64_t>(dims.size()), opset);
  PartialShape p;
  for (int64_t i = start; i < end; ++i) {
    const auto k = static_cast<size_t>(i);
    p.dims.push_back(dims[k] >= 0 ? dims[k] : -1);
    p.params.push_back(dims[k] < 0 && k < in.dim_params.size() ? in.dim_params[k] : "");
  }
  partial[n.outputs[0]] = std::move(p);
}

// A Gather that picks one named symbolic dim from a partial shape: the first such value of each name
// (and rank) stands for all later ones, which are rewired to it. Every layer of a GPT export takes
// the sequence length from its own input's Shape; after this, one value holds it and CSE merges
// what each layer computed from it (the causal mask's slices). True when node i was rewired.
bool share_symbolic_pick(ir::Graph& g, const ir::Node& n, const PartialShapes& partial, const Uses& uses,
                         std::unordered_map<std::string, std::string>& first_pick) {
  if (n.op_type != "Gather" || n.inputs.size() != 2 || n.outputs.size() != 1 || n.attr_int("axis", 0) != 0)
    return false;
  auto it = partial.find(n.inputs[0]);
  const Tensor* idx = constant_of(g, n.inputs[1]);
  if (it == partial.end() || !idx || idx->numel() != 1 || idx->rank() > 1 || idx->dtype() != DType::I64) return false;
  const auto len = static_cast<int64_t>(it->second.dims.size());
  int64_t i = idx->data<int64_t>()[0];
  if (i < 0) i += len;
  if (i < 0 || i >= len || it->second.params[static_cast<size_t>(i)].empty()) return false;
  const std::string key = it->second.params[static_cast<size_t>(i)] + (idx->rank() == 0 ? "" : "[1]");
  auto [at, fresh] = first_pick.emplace(key, n.outputs[0]);
  if (fresh || uses.graph_outputs.count(n.outputs[0]) || !take_rewrite()) return false;
  replace_uses(g, n.outputs[0], at->second);
  return true;
}

// The known entries `n` picks from a partial shape (Gather on axis 0 with constant indices, Slice
// with constant starts/ends/axes/steps on axis 0), or nothing when one of them is unknown.
std::optional<Tensor> fold_partial_pick(const ir::Graph& g, const ir::Node& n, const PartialShapes& partial) {
  if (n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  auto it = partial.find(n.inputs[0]);
  if (it == partial.end()) return std::nullopt;
  const std::vector<int64_t>& v = it->second.dims;
  const auto len = static_cast<int64_t>(v.size());
  std::vector<int64_t> picked;
  Shape out_shape;
  if (n.op_type == "Gather" && n.inputs.size() == 2 && n.attr_int("axis", 0) == 0) {
    const Tensor* idx = constant_of(g, n.inputs[1]);
    if (!idx || idx->rank() > 1 || (idx->dtype() != DType::I64 && idx->dtype() != DType::I32)) return std::nullopt;
    for (int64_t k = 0; k < idx->numel(); ++k) {
      int64_t i = idx->dtype() == DType::I64 ? idx->data<int64_t>()[k] : idx->data<int32_t>()[k];
      if (i < 0) i += len;
      if (i < 0 || i >= len || v[static_cast<size_t>(i)] < 0) return std::nullopt;
      picked.push_back(v[static_cast<size_t>(i)]);
    }
    out_shape = idx->shape();
  } else if (n.op_type == "Slice" && n.inputs.size() >= 3) {
    auto one = [&](size_t k, int64_t dflt) -> std::optional<int64_t> {
      if (k >= n.inputs.size() || n.inputs[k].empty()) return dflt;
      const Tensor* t = constant_of(g, n.inputs[k]);
      if (!t || t->numel() != 1 || (t->dtype() != DType::I64 && t->dtype() != DType::I32)) return std::nullopt;
      return t->dtype() == DType::I64 ? t->data<int64_t>()[0] : t->data<int32_t>()[0];
    };
    const auto start = one(1, 0), end = one(2, len), axis = one(3, 0), step = one(4, 1);
    if (!start || !end || !axis || !step || (*axis != 0 && *axis != -1) || *step != 1) return std::nullopt;
    const int64_t b = std::clamp<int64_t>(*start < 0 ? *start + len : *start, 0, len);
    const int64_t e = std::clamp<int64_t>(*end < 0 ? *end + len : *end, 0, len);
    for (int64_t i = b; i < e; ++i) {
      if (v[static_cast<size_t>(i)] < 0) return std::nullopt;
      picked.push_back(v[static_cast<size_t>(i)]);
    }
    out_shape = {static_cast<int64_t>(picked.size())};
  } else {
    return std::nullopt;
  }
  return Tensor::from_vector<int64_t>(picked, out_shape);
}

// A Reshape whose target is computed at run time (from a Shape of a value with a symbolic dim) but
// whose result type is known but for one dim: the target becomes a constant with -1 there, and the
// shape computation is left to dead-code elimination. True when node i was rewired.
bool constant_reshape_target(ir::Graph& g, size_t i) {
  ir::Node& n = g.nodes()[i];
  if (n.op_type != "Reshape" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  if (constant_of(g, n.inputs[1]) || n.attr_int("allowzero", 0) != 0) return false;
  const ir::Value* out = g.value(n.outputs[0]);
  if (!out || !out->type.is_tensor() || !out->type.dims || out->type.dims->empty()) return false;
  std::vector<int64_t> target = *out->type.dims;
  int unknown = 0;
  for (int64_t d : target) {
    if (d == 0) return false;
    unknown += d < 0 ? 1 : 0;
  }
  if (unknown != 1 || !take_rewrite()) return false;
  const std::string name = fresh_name(g, n.outputs[0] + "_target");
  const auto len = static_cast<int64_t>(target.size());
  g.add_initializer(name, Tensor::from_vector<int64_t>(target, {len}));
  g.nodes()[i].inputs[1] = name;
  return true;
}

class ConstantFolding final : public Pass {
 public:
  explicit ConstantFolding(runtime::Backend* backend) : backend_(backend) {}
  std::string name() const override { return "ConstantFolding"; }
  std::string argument() const override { return "constant-folding"; }
  std::string description() const override {
    return "evaluate nodes with constant inputs (and Shape/Size of static types) at compile time";
  }

  Status run(ir::Graph& g) override {
    const Uses uses = compute_uses(g);
    std::set<uint64_t> folded;
    PartialShapes partial;
    std::unordered_map<std::string, std::string> first_pick;
    work().nodes_visited += g.nodes().size();
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& n = g.nodes()[i];
      if (!foldable(n)) continue;
      bool protected_output = false;
      for (const auto& o : n.outputs)
        if (!o.empty() && uses.graph_outputs.count(o)) protected_output = true;
      if (protected_output) continue;
      // A node nothing reads (the weights' DequantizeLinear once fold-qdq took its matmul) is left
      // to dead-code elimination: folding it computed every weight in float for nothing (a QDQ
      // transformer encoder's compile spent 0.4 s there).
      bool read = false;
      for (const auto& o : n.outputs) read = read || (!o.empty() && (uses.of(o) > 0 || uses.implicit.count(o)));
      if (!read) continue;
      std::vector<Tensor> outs;
      if ((n.op_type == "Shape" || n.op_type == "Size") && n.has_input(0)) {
        const ir::Value* in = g.resolve(n.inputs[0]);
        if (!in) continue;
        auto t = shape_of(n, in->type, g.opset());
        if (!t) {
          note_partial_shape(n, in->type, g.opset(), partial);
          if (!fold(g, n, outs)) continue;
        } else {
          outs.push_back(std::move(*t));
        }
      } else if (auto picked = fold_partial_pick(g, n, partial)) {
        outs.push_back(std::move(*picked));
      } else if (share_symbolic_pick(g, n, partial, uses, first_pick)) {
        folded.insert(n.id.value);
        continue;
      } else if (!fold(g, n, outs)) {
        constant_reshape_target(g, i);
        continue;
      }
      if (!take_rewrite()) break;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (!n.outputs[o].empty() && o < outs.size() && outs[o].defined()) g.add_initializer(n.outputs[o], outs[o]);
      folded.insert(n.id.value);
    }
    erase_nodes(g, folded);
    return Status::ok();
  }

 private:
  bool fold(const ir::Graph& g, const ir::Node& n, std::vector<Tensor>& outs) {
    runtime::Backend* host = backend_ ? backend_->folding_backend() : nullptr;
    if (!host) return false;
    ops::InferContext ctx{n, g.opset(n.domain), {}, {}, {}};
    for (const auto& in : n.inputs) {
      if (in.empty()) {
        ctx.types.emplace_back();
        ctx.values.push_back(nullptr);
        continue;
      }
      const Tensor* t = constant_of(g, in);
      if (!t) return false;
      ctx.types.push_back(ir::ValueType{t->dtype(), t->shape(), std::vector<std::string>(t->shape().size())});
      ctx.values.push_back(t);
    }
    if (!ops::infer_node(ctx).is_ok()) return false;
    int64_t total = 0;
    for (const auto& t : ctx.outputs) {
      if (t.dtype != DType::Undefined && !t.is_static()) return false;
      total += std::max<int64_t>(0, ops::static_numel(t));
    }
    if (total > kMaxFoldedElements) return false;
    runtime::KernelFn kernel = host->find_kernel(n);
    if (!kernel) return false;
    outs.assign(n.outputs.size(), Tensor());
    for (size_t i = 0; i < outs.size(); ++i)
      if (!n.outputs[i].empty() && ctx.outputs[i].dtype != DType::Undefined)
        outs[i] = Tensor::empty(ctx.outputs[i].dtype, *ctx.outputs[i].dims);
    struct HostAlloc final : runtime::OutputAllocator {
      Expected<Tensor> allocate(size_t, DType dt, const Shape& s) override { return Tensor::empty(dt, s); }
      Expected<Tensor> scratch(DType dt, const Shape& s) override { return Tensor::empty(dt, s); }
    } alloc;
    runtime::KernelContext kctx(n, g.opset(n.domain), *host, ctx.values, outs, alloc, nullptr);
    if (!kernel(kctx).is_ok()) return false;  // the run reports real errors
    for (size_t i = 0; i < outs.size(); ++i)
      if (!n.outputs[i].empty() && !outs[i].defined()) return false;
    // Values that alias an input (Identity, Reshape views) get their own copy: initializers never
    // share bytes another value may hand out.
    for (auto& t : outs)
      for (const Tensor* in : ctx.values)
        if (in && t.defined() && in->defined() && t.buffer() == in->buffer()) t = t.clone();
    return true;
  }

  runtime::Backend* backend_;
};

}  // namespace

PassPtr make_constant_folding_pass(runtime::Backend* backend) { return std::make_unique<ConstantFolding>(backend); }

}  // namespace ms::compiler
