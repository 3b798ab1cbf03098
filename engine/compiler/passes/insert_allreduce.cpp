// insert-allreduce (data parallel only): each gradient of a traced training step is reduced over
// the ranks before the update rule reads it.
//
//   grad.fc1.gemm ──g──▶ optimizer.*        becomes        grad.fc1.gemm ──g──▶ AllReduce ──g'──▶ optimizer.*
//
// A gradient is a value made by a backward node (name under "grad.") and read by the update rule
// (nodes under "optimizer."); they are taken in the order the update rule first reads them, which
// is the parameter order. Each AllReduce sits right after its gradient's producer (so
// fuse-allreduce can group neighbours) and has that producer as origin; only the update rule's
// reads move to its output. Attribute `mean`: 1 averages (gradients_mean).
#include <algorithm>
#include <set>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"

namespace ms::compiler {
namespace {

bool under_scope(const std::string& name, const char* scope) {
  const std::string p = std::string(scope) + ".";
  return name.rfind(p, 0) == 0;
}

// The gradients the update rule reads, in the order it first reads them.
std::vector<std::string> step_gradients(const ir::Graph& g, const std::unordered_map<std::string, size_t>& prod) {
  std::vector<std::string> grads;
  std::set<std::string> seen;
  for (const ir::Node& n : g.nodes()) {
    if (!under_scope(n.name, "optimizer")) continue;
    for (const std::string& in : n.inputs) {
      auto it = prod.find(in);
      if (in.empty() || it == prod.end() || seen.count(in)) continue;
      const ir::Node& p = g.nodes()[it->second];
      if (!under_scope(p.name, "grad") || (p.op_type == "AllReduce" && p.domain == "ai.modescope")) continue;
      seen.insert(in);
      grads.push_back(in);
    }
  }
  return grads;
}

class InsertAllReduce final : public Pass {
 public:
  explicit InsertAllReduce(bool mean) : mean_(mean) {}
  std::string name() const override { return "InsertAllReduce"; }
  std::string argument() const override { return "insert-allreduce"; }
  std::string description() const override {
    return "data parallel: an AllReduce after each gradient the update rule reads (gradients_mean averages)";
  }
  Status run(ir::Graph& g) override {
    const auto prod = producer_index(g);
    work().nodes_visited += g.nodes().size();
    std::vector<std::pair<size_t, ir::Node>> inserts;
    std::unordered_map<std::string, std::string> renamed;
    for (const std::string& grad : step_gradients(g, prod)) {
      if (!take_rewrite()) break;
      const ir::Node& producer = g.nodes()[prod.at(grad)];
      const std::string out = grad + ".allreduce";
      ir::Node n = new_node(g, "AllReduce", "ai.modescope", {grad}, {out}, {&producer});
      n.name = producer.name + ".allreduce";
      n.attrs["mean"] = int64_t{mean_ ? 1 : 0};
      const ir::Value* v = g.value(grad);
      ir::Value made;
      made.name = out;
      made.type = v ? v->type : ir::ValueType{};
      made.producer = n.id;
      g.add_value(std::move(made));
      inserts.emplace_back(prod.at(grad) + 1, std::move(n));
      renamed[grad] = out;
    }
    for (ir::Node& n : g.nodes())
      if (under_scope(n.name, "optimizer"))
        for (std::string& in : n.inputs)
          if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
    // From the back, so earlier positions stay valid.
    std::stable_sort(inserts.begin(), inserts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [pos, n] : inserts) insert_node(g, pos, std::move(n));
    return Status::ok();
  }

 private:
  bool mean_;
};

}  // namespace

PassPtr make_insert_allreduce_pass(bool mean) { return std::make_unique<InsertAllReduce>(mean); }

}  // namespace ms::compiler
