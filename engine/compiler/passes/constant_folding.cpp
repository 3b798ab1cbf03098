// Constant folding: a node whose inputs are all constants runs once on the CPU backend at compile
// time and its outputs become initializers. Shape/Size of a statically shaped value fold from the
// type alone, so whole Shape subgraphs collapse on static shapes.
#include <algorithm>

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

std::optional<Tensor> shape_of(const ir::Node& n, const ir::ValueType& in, int64_t opset) {
  if (!in.is_static()) return std::nullopt;
  const auto& dims = *in.dims;
  if (n.op_type == "Size") {
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    return Tensor::scalar<int64_t>(total);
  }
  const auto rank = static_cast<int64_t>(dims.size());
  auto clamp_axis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  const int64_t start = opset >= 15 ? clamp_axis(n.attr_int("start", 0)) : 0;
  const int64_t end = opset >= 15 ? clamp_axis(n.attr_int("end", rank)) : rank;
  std::vector<int64_t> v;
  for (int64_t i = start; i < end; ++i) v.push_back(dims[static_cast<size_t>(i)]);
  const auto len = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>(v, {len});
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
    work().nodes_visited += g.nodes().size();
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& n = g.nodes()[i];
      if (!foldable(n)) continue;
      bool protected_output = false;
      for (const auto& o : n.outputs)
        if (!o.empty() && uses.graph_outputs.count(o)) protected_output = true;
      if (protected_output) continue;
      std::vector<Tensor> outs;
      if ((n.op_type == "Shape" || n.op_type == "Size") && n.has_input(0)) {
        const ir::Value* in = g.resolve(n.inputs[0]);
        if (!in) continue;
        auto t = shape_of(n, in->type, g.opset());
        if (!t) {
          if (!fold(g, n, outs)) continue;
        } else {
          outs.push_back(std::move(*t));
        }
      } else if (!fold(g, n, outs)) {
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
    if (!backend_ || !backend_->device().is_cpu()) return false;
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
    runtime::KernelFn kernel = backend_->find_kernel(n);
    if (!kernel) return false;
    outs.assign(n.outputs.size(), Tensor());
    for (size_t i = 0; i < outs.size(); ++i)
      if (!n.outputs[i].empty() && ctx.outputs[i].dtype != DType::Undefined)
        outs[i] = Tensor::empty(ctx.outputs[i].dtype, *ctx.outputs[i].dims);
    struct HostAlloc final : runtime::OutputAllocator {
      Expected<Tensor> allocate(size_t, DType dt, const Shape& s) override { return Tensor::empty(dt, s); }
      Expected<Tensor> scratch(DType dt, const Shape& s) override { return Tensor::empty(dt, s); }
    } alloc;
    runtime::KernelContext kctx(n, g.opset(n.domain), *backend_, ctx.values, outs, alloc, nullptr);
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
