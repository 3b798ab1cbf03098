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

thread_local const std::map<std::string, DimRange>* t_ranges = nullptr;

Status plain_infer(ir::Graph& g, Backend* fold_backend) {
  std::unordered_map<std::string, Tensor> known;
  // Shape math runs where constants fold: the CPU backend itself, or a device backend's host CPU
  // backend (without it a device compile left Shape -> Gather -> Concat -> Expand dynamic, and a
  // ViT's class-token Expand kept its graph from whole-graph replay).
  Inferrer inf(fold_backend ? fold_backend->folding_backend() : nullptr);
  return inf.infer(g, known);
}

// One probe: each symbolic dim at a size; `varied` the dim this probe moved off its bound ("" for
// the base probe, every dim at its bound).
struct Probe {
  std::map<std::string, int64_t> at;
  std::string varied;
};

// The symbolic dims of g's inputs that have a range, and the probes: the base, then per dim its low
// end and its middle (where they differ from the bound).
std::vector<Probe> plan_probes(const ir::Graph& g, const std::map<std::string, DimRange>& ranges) {
  std::map<std::string, DimRange> used;
  for (const auto& name : g.inputs) {
    const ir::Value* v = g.value(name);
    if (!v || !v->type.dims) continue;
    for (size_t i = 0; i < v->type.dims->size() && i < v->type.dim_params.size(); ++i)
      if (auto it = ranges.find(v->type.dim_params[i]); (*v->type.dims)[i] < 0 && it != ranges.end()) used.insert(*it);
  }
  if (used.empty()) return {};
  std::vector<Probe> probes(1);
  for (const auto& [dim, r] : used) probes[0].at[dim] = r.hi;
  for (const auto& [dim, r] : used)
    for (int64_t size : {r.lo, (r.lo + r.hi) / 2})
      if (size < r.hi && (probes.back().varied != dim || probes.back().at[dim] != size)) {
        probes.push_back(probes[0]);
        probes.back().at[dim] = size;
        probes.back().varied = dim;
      }
  return probes;
}

// Every top-level value's type with the symbolic dims at the probe's sizes; empty when it fails.
std::unordered_map<std::string, ir::ValueType> probe_types(const ir::Graph& g, Backend* be, const Probe& p) {
  ir::Graph c = g.deep_copy();
  for (const auto& name : c.inputs) {
    ir::Value* v = c.value(name);
    if (!v || !v->type.dims) continue;
    for (size_t i = 0; i < v->type.dims->size() && i < v->type.dim_params.size(); ++i)
      if (auto it = p.at.find(v->type.dim_params[i]); (*v->type.dims)[i] < 0 && it != p.at.end())
        (*v->type.dims)[i] = it->second;
  }
  std::unordered_map<std::string, ir::ValueType> out;
  if (!plain_infer(c, be).is_ok()) return out;
  for (const auto& [name, v] : c.values()) out.emplace(name, v.type);
  return out;
}

// Dim `i` of a value across the probes: static, an affine function of one symbolic dim (named), or
// unknown.
void merge_dim(const std::vector<Probe>& probes, const std::vector<const ir::ValueType*>& at, size_t i, int64_t& dim,
               std::string& param) {
  const int64_t base = (*at[0]->dims)[i];
  std::string by;
  for (size_t k = 1; k < probes.size(); ++k) {
    const int64_t d = (*at[k]->dims)[i];
    if (d == base) continue;
    if (!by.empty() && by != probes[k].varied) by = "*";
    if (by.empty()) by = probes[k].varied;
  }
  dim = -1;
  param.clear();
  if (base < 0) return;
  if (by.empty()) {
    dim = base;
    return;
  }
  if (by == "*") return;
  // d = a * n + b through every probe that moved `by` (and the base, at its bound).
  const int64_t hi = probes[0].at.at(by);
  int64_t a = 0;
  bool have_a = false;
  for (size_t k = 1; k < probes.size(); ++k) {
    if (probes[k].varied != by) continue;
    const int64_t n = probes[k].at.at(by), d = (*at[k]->dims)[i];
    if (d < 0 || (base - d) % (hi - n) != 0) return;
    const int64_t slope = (base - d) / (hi - n);
    if (have_a && slope != a) return;
    a = slope;
    have_a = true;
  }
  const int64_t b = base - a * hi;
  if (a <= 0) return;
  param = by;
  if (a != 1) param += "*" + std::to_string(a);
  if (b != 0) param += (b > 0 ? "+" : "") + std::to_string(b);
}

// The probes' types merged into g's values (those every probe typed as a tensor of one rank).
void refine_with_probes(ir::Graph& g, Backend* be, const std::map<std::string, DimRange>& ranges) {
  const std::vector<Probe> probes = plan_probes(g, ranges);
  if (probes.empty()) return;
  std::vector<std::unordered_map<std::string, ir::ValueType>> typed;
  for (const auto& p : probes) {
    typed.push_back(probe_types(g, be, p));
    if (typed.back().empty()) return;
  }
  for (auto& [name, v] : g.values()) {
    if (v.constant || !v.type.is_tensor()) continue;
    auto first = typed[0].find(name);
    if (first == typed[0].end() || !first->second.dims) continue;
    std::vector<const ir::ValueType*> at;
    for (const auto& t : typed) {
      auto it = t.find(name);
      if (it == t.end() || !it->second.dims || it->second.dtype != first->second.dtype ||
          it->second.dims->size() != first->second.dims->size())
        break;
      at.push_back(&it->second);
    }
    if (at.size() != probes.size() || (v.type.dims && v.type.dims->size() != at[0]->dims->size())) continue;
    ir::ValueType t = *at[0];
    t.dim_params.assign(t.dims->size(), "");
    for (size_t i = 0; i < t.dims->size(); ++i) merge_dim(probes, at, i, (*t.dims)[i], t.dim_params[i]);
    v.type = std::move(t);
  }
}

}  // namespace

SymbolicRangesScope::SymbolicRangesScope(std::map<std::string, DimRange> ranges)
    : ranges_(std::move(ranges)), prev_(t_ranges) {
  t_ranges = &ranges_;
}
SymbolicRangesScope::~SymbolicRangesScope() { t_ranges = prev_; }

Status infer_graph_types(ir::Graph& g, Backend* fold_backend) {
  MS_RETURN_IF_ERROR(plain_infer(g, fold_backend));
  if (t_ranges && !t_ranges->empty()) refine_with_probes(g, fold_backend, *t_ranges);
  return Status::ok();
}

}  // namespace ms::compiler
