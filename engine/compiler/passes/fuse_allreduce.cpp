// fuse-allreduce (data parallel only): the single AllReduce nodes insert-allreduce placed, taken in
// graph order (the parameter order), grouped (MindSpore's all_reduce_fusion_config); a
// SyncBatchNorm's statistics collectives (attribute batch_stats) stay as they are:
//   split indices [i1, i2, ...]: a new group starts at gradient i1, i2, ... ;
//   or a size in MiB: neighbours join a group until it would exceed the size;
//   neither: one group of every gradient.
// Each group becomes ONE collective over a packed buffer, split in two nodes so that it overlaps
// the rest of the backward: AllReduceStart where the last of its group stood (every input is
// ready there) queues it on the communication thread, AllReduceWait right before the first node
// that reads a result (the update rule) waits for it. Both have the group's origins.
#include <algorithm>
#include <map>
#include <set>

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

// Puts each Wait right before the first node that reads one of its outputs (the update rule).
void place_waits(ir::Graph& g, std::vector<ir::Node> waits, const std::map<std::string, ir::ValueType>& types) {
  std::vector<std::pair<size_t, ir::Node>> at;
  for (ir::Node& w : waits) {
    for (const std::string& o : w.outputs)
      if (!g.has_value(o)) {
        ir::Value v;
        v.name = o;
        v.type = types.at(o);
        g.add_value(std::move(v));
      }
    const std::set<std::string> outs(w.outputs.begin(), w.outputs.end());
    size_t pos = g.nodes().size();
    for (size_t i = 0; i < g.nodes().size() && pos == g.nodes().size(); ++i)
      for (const std::string& in : g.nodes()[i].inputs)
        if (outs.count(in)) pos = i;
    at.emplace_back(pos, std::move(w));
  }
  std::stable_sort(at.begin(), at.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (auto& [pos, w] : at) insert_node(g, pos, std::move(w));
}

class FuseAllReduce final : public Pass {
 public:
  explicit FuseAllReduce(AllReduceFusion f) : fusion_(std::move(f)) {}
  std::string name() const override { return "FuseAllReduce"; }
  std::string argument() const override { return "fuse-allreduce"; }
  std::string description() const override {
    return "data parallel: neighbouring AllReduce nodes grouped (split indices or MiB), each group one collective "
           "started after its last gradient and awaited before the update rule reads it";
  }
  Status run(ir::Graph& g) override {
    std::vector<const ir::Node*> singles;
    for (const ir::Node& n : g.nodes())
      if (n.op_type == "AllReduce" && n.domain == "ai.modescope" && n.inputs.size() == 1 &&
          !n.attr_int("batch_stats", 0))
        singles.push_back(&n);
    work().nodes_visited += g.nodes().size();
    std::vector<NodeGroup> starts;
    std::vector<ir::Node> waits;
    std::map<std::string, ir::ValueType> types;
    for (const auto& grp : allreduce_groups(g, singles, fusion_)) {
      if (!take_rewrite()) break;
      std::vector<const ir::Node*> members;
      std::vector<std::string> ins, outs;
      for (size_t i : grp) {
        members.push_back(singles[i]);
        ins.push_back(singles[i]->inputs[0]);
        outs.push_back(singles[i]->outputs[0]);
        if (const ir::Value* v = g.value(outs.back())) types[outs.back()] = v->type;
      }
      const std::string base = "grad.allreduce_" + std::to_string(waits.size());
      const int64_t mean = members.front()->attr_int("mean", 1);
      ir::Node start = new_node(g, "AllReduceStart", "ai.modescope", ins, {base + ".token"}, members);
      start.name = base + ".start";
      start.attrs["mean"] = mean;
      ir::Value token;
      token.name = base + ".token";
      token.type.dtype = DType::I64;
      token.type.dims = std::vector<int64_t>{};
      g.add_value(std::move(token));
      std::vector<std::string> wait_ins{base + ".token"};
      wait_ins.insert(wait_ins.end(), ins.begin(), ins.end());
      ir::Node wait = new_node(g, "AllReduceWait", "ai.modescope", wait_ins, outs, members);
      wait.name = base + ".wait";
      wait.attrs["mean"] = mean;
      waits.push_back(std::move(wait));
      starts.push_back(fused_group(members, std::move(start)));
    }
    replace_node_groups(g, std::move(starts));
    place_waits(g, std::move(waits), types);
    return Status::ok();
  }

 private:
  AllReduceFusion fusion_;
};

}  // namespace

PassPtr make_fuse_allreduce_pass(AllReduceFusion fusion) { return std::make_unique<FuseAllReduce>(std::move(fusion)); }

}  // namespace ms::compiler
