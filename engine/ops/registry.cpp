#include <algorithm>
#include <iterator>
#include <string_view>

#include "engine/ops/families.h"
#include "engine/ops/schema.h"

namespace ms::ops {

const char* category_name(OpCategory c) {
  static const char* names[] = {"elementwise", "activation", "conv", "matmul",  "pool", "norm",
                                "reduction",   "shape",      "data", "control", "other"};
  return names[static_cast<int>(c)];
}

Status InferContext::fail(const std::string& what) const {
  return invalid_model(node.label() + ": " + what).with_node(node.id.value);
}

Registry& Registry::instance() {
  static Registry* r = [] {
    auto* reg = new Registry();
    register_all_ops(*reg);
    return reg;
  }();
  return *r;
}

void Registry::add(OpSchema schema) {
  std::string key = schema.domain + ":" + schema.op_type;
  schemas_.push_back(std::move(schema));
  index_[std::move(key)] = &schemas_.back();
}

const OpSchema* Registry::find(std::string_view op_type, std::string_view domain) const {
  if (domain == "ai.onnx") domain = "";
  std::string key;
  key.reserve(domain.size() + op_type.size() + 1);
  key.append(domain).append(":").append(op_type);
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<const OpSchema*> Registry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& s : schemas_) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->op_type < b->op_type; });
  return out;
}

int64_t static_numel(const ir::ValueType& t) {
  if (!t.is_static()) return -1;
  int64_t n = 1;
  for (int64_t d : *t.dims) n *= d;
  return n;
}

namespace {
// The ops that take sequence or optional inputs; every other op takes tensors only.
bool takes_containers(const ir::Node& n) {
  static constexpr std::string_view kOps[] = {"Identity",
                                              "If",
                                              "Loop",
                                              "SequenceInsert",
                                              "SequenceErase",
                                              "SequenceAt",
                                              "SequenceLength",
                                              "ConcatFromSequence",
                                              "SequenceMap",
                                              "Optional",
                                              "OptionalHasElement",
                                              "OptionalGetElement"};
  return n.domain.empty() && std::find(std::begin(kOps), std::end(kOps), n.op_type) != std::end(kOps);
}
}  // namespace

Status infer_node(InferContext& ctx) {
  const ir::Node& n = ctx.node;
  const OpSchema* s = Registry::instance().find(n.op_type, n.domain);
  if (!s) return unsupported(n.label() + ": op '" + n.op_type + "' is not supported").with_node(n.id.value);
  const int nin = static_cast<int>(n.inputs.size());
  if (nin < s->min_inputs || (s->max_inputs >= 0 && nin > s->max_inputs))
    return ctx.fail("expects " + std::to_string(s->min_inputs) +
                    (s->max_inputs == s->min_inputs
                         ? ""
                         : ".." + (s->max_inputs < 0 ? std::string("n") : std::to_string(s->max_inputs))) +
                    " inputs, got " + std::to_string(nin));
  for (int i = 0; i < s->min_inputs; ++i)
    if (!ctx.has_input(static_cast<size_t>(i))) return ctx.fail("required input " + std::to_string(i) + " is missing");
  const int nout = static_cast<int>(n.outputs.size());
  if (nout < s->min_outputs || (s->max_outputs >= 0 && nout > s->max_outputs))
    return ctx.fail("has " + std::to_string(nout) + " outputs, the op allows " + std::to_string(s->min_outputs) + ".." +
                    (s->max_outputs < 0 ? std::string("n") : std::to_string(s->max_outputs)));
  for (size_t i = 0; i < ctx.types.size(); ++i)
    if (!ctx.types[i].is_tensor() && !takes_containers(n))
      return ctx.fail("input " + std::to_string(i) + " is a " + value_kind_name(ctx.types[i].kind) + " (" +
                      ctx.types[i].to_string() + "); " + n.op_type + " takes tensors only");
  ctx.outputs.assign(n.outputs.size(), ir::ValueType{});
  return s->infer(ctx);
}

Cost node_cost(const ir::Node& node, const std::vector<ir::ValueType>& in, const std::vector<ir::ValueType>& out) {
  const OpSchema* s = Registry::instance().find(node.op_type, node.domain);
  if (s && s->cost) return s->cost(CostContext{node, in, out});
  Cost c;
  for (const auto& t : in) {
    const int64_t n = static_numel(t);
    if (n > 0) c.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
  }
  for (const auto& t : out) {
    const int64_t n = static_numel(t);
    if (n > 0) {
      c.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
      c.flops += static_cast<double>(n);
    }
  }
  return c;
}

}  // namespace ms::ops
