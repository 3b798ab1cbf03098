// Shape and dtype propagation: every value's static type from the graph inputs' types, folding small
// shape computations on the CPU backend so Shape->Gather->Concat->Reshape gives static shapes.
#include "engine/compiler/infer.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/work.h"
#include "engine/runtime/executor.h"

namespace ms::compiler {
namespace {

class InferTypes final : public Pass {
 public:
  explicit InferTypes(runtime::Backend* fold) : fold_(fold) {}
  std::string name() const override { return "InferTypes"; }
  std::string argument() const override { return "infer-types"; }
  std::string description() const override { return "static dtype and shape of every value (folds shape math)"; }
  Status run(ir::Graph& g) override {
    work().nodes_visited += g.nodes().size();
    return compiler::infer_graph_types(g, fold_);
  }

 private:
  runtime::Backend* fold_;
};

}  // namespace

PassPtr make_infer_types_pass(runtime::Backend* fold_backend) { return std::make_unique<InferTypes>(fold_backend); }

}  // namespace ms::compiler
