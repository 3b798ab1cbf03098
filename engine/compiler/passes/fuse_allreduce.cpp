// fuse-allreduce (data parallel only): the single AllReduce nodes insert-allreduce placed, taken in
// graph order (the parameter order), grouped into fused AllReduce nodes that reduce all their
// inputs in ONE collective over a packed buffer (MindSpore's all_reduce_fusion_config):
//   split indices [i1, i2, ...]: a new group starts at gradient i1, i2, ... ;
//   or a size in MiB: neighbours join a group until it would exceed the size;
//   neither: one group of every gradient.
// A fused node stands where the last of its group stood (every input is ready there), its origins
// are the group's.
#include <algorithm>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"

namespace ms::compiler {
namespace {

int64_t allreduce_value_bytes(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.value(name);
  if (!v || !v->type.is_static()) return 0;
  int64_t n = 1;
  for (int64_t d : *v->type.dims) n *= d;
  return n * static_cast<int64_t>(dtype_size(v->type.dtype));
}

// Groups of indices into `singles` (consecutive runs).
std::vector<std::vector<size_t>> allreduce_groups(const ir::Graph& g, const std::vector<const ir::Node*>& singles,
                                                  const AllReduceFusion& f) {
  std::vector<std::vector<size_t>> groups;
  int64_t bytes = 0;
  for (size_t i = 0; i < singles.size(); ++i) {
    const int64_t b = allreduce_value_bytes(g, singles[i]->inputs[0]);
    bool start = groups.empty();
    if (!f.split.empty())
      start = start || std::find(f.split.begin(), f.split.end(), int64_t(i)) != f.split.end();
    else if (f.size_mb > 0)
      start = start || bytes + b > static_cast<int64_t>(f.size_mb * 1024 * 1024);
    if (start) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(i);
    bytes += b;
  }
  return groups;
}

class FuseAllReduce final : public Pass {
 public:
  explicit FuseAllReduce(AllReduceFusion f) : fusion_(std::move(f)) {}
  std::string name() const override { return "FuseAllReduce"; }
  std::string argument() const override { return "fuse-allreduce"; }
  std::string description() const override {
    return "data parallel: neighbouring AllReduce nodes grouped (split indices or MiB) into one collective each";
  }
  Status run(ir::Graph& g) override {
    std::vector<const ir::Node*> singles;
    for (const ir::Node& n : g.nodes())
      if (n.op_type == "AllReduce" && n.domain == "ai.modescope" && n.inputs.size() == 1) singles.push_back(&n);
    work().nodes_visited += g.nodes().size();
    std::vector<NodeGroup> fused;
    int k = 0;
    for (const auto& grp : allreduce_groups(g, singles, fusion_)) {
      if (grp.size() < 2) continue;
      if (!take_rewrite()) break;
      std::vector<const ir::Node*> members;
      std::vector<std::string> ins, outs;
      for (size_t i : grp) {
        members.push_back(singles[i]);
        ins.push_back(singles[i]->inputs[0]);
        outs.push_back(singles[i]->outputs[0]);
      }
      ir::Node n = new_node(g, "AllReduce", "ai.modescope", ins, outs, members);
      n.name = "grad.allreduce_fused_" + std::to_string(k++);
      n.attrs["mean"] = int64_t{members.front()->attr_int("mean", 1)};
      fused.push_back(fused_group(members, std::move(n)));
    }
    replace_node_groups(g, std::move(fused));
    return Status::ok();
  }

 private:
  AllReduceFusion fusion_;
};

}  // namespace

PassPtr make_fuse_allreduce_pass(AllReduceFusion fusion) { return std::make_unique<FuseAllReduce>(std::move(fusion)); }

}  // namespace ms::compiler
