// Dead-code elimination: nodes none of whose outputs reach a graph output (or a subgraph read), and
// initializers nothing reads.
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/runtime/program.h"

namespace ms::compiler {
namespace {

class DCE final : public Pass {
 public:
  std::string name() const override { return "DCE"; }
  std::string argument() const override { return "dce"; }
  std::string description() const override { return "remove nodes and initializers whose results are never read"; }
  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    std::set<std::string> live(g.outputs.begin(), g.outputs.end());
    std::set<uint64_t> dead;
    bool spent = false;  // a removal was refused: the nodes before it stay, and what they read
    const auto& nodes = g.nodes();
    work().nodes_visited += nodes.size();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      bool used = false;
      for (const auto& o : it->outputs)
        if (!o.empty() && live.count(o)) used = true;
      if (!used && !spent) {
        if (take_rewrite()) {
          dead.insert(it->id.value);
          continue;
        }
        spent = true;
      }
      for (const auto& in : it->inputs)
        if (!in.empty()) live.insert(in);
      for (const auto& name : runtime::implicit_inputs(*it)) live.insert(name);
    }
    erase_nodes(g, dead);
    if (spent) return Status::ok();
    std::set<std::string> inputs(g.inputs.begin(), g.inputs.end());
    for (const auto& name : g.initializer_names())
      if (!live.count(name) && !inputs.count(name)) {
        if (!take_rewrite()) break;
        g.erase_value(name);
      }
    return Status::ok();
  }
};

}  // namespace

PassPtr make_dce_pass() { return std::make_unique<DCE>(); }

}  // namespace ms::compiler
