#include "engine/frontend/nn/eager_observe.h"

#include <string>

namespace ms::nn {
namespace {
thread_local EagerObserveScope* current = nullptr;
}  // namespace

EagerObserveScope::EagerObserveScope(runtime::RunObserver& observer, ir::Graph& record)
    : observer_(observer), graph_(record), previous_(current) {
  current = this;
}

EagerObserveScope::~EagerObserveScope() { current = previous_; }

EagerObserveScope* eager_observer() { return current; }

void EagerObserveScope::record(ir::Node& node, const std::vector<ir::ValueType>& inputs,
                               const std::vector<ir::ValueType>& outputs) {
  ir::Node copy = node;
  copy.id = ir::NodeId{};
  const std::string prefix = "%" + std::to_string(graph_.nodes().size()) + ".";
  for (size_t i = 0; i < copy.inputs.size(); ++i) {
    if (copy.inputs[i].empty()) continue;
    copy.inputs[i] = prefix + "in" + std::to_string(i);
    graph_.add_value(ir::Value{copy.inputs[i], i < inputs.size() ? inputs[i] : ir::ValueType{}, {}, std::nullopt});
  }
  for (size_t i = 0; i < copy.outputs.size(); ++i) {
    if (copy.outputs[i].empty()) continue;
    copy.outputs[i] = prefix + "out" + std::to_string(i);
    graph_.add_value(ir::Value{copy.outputs[i], i < outputs.size() ? outputs[i] : ir::ValueType{}, {}, std::nullopt});
  }
  if (copy.name.empty()) copy.name = copy.op_type;
  const ir::Node& added = graph_.add_node(std::move(copy));
  node.id = added.id;
  if (node.name.empty()) node.name = added.name;
}

}  // namespace ms::nn
