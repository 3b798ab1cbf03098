// One schema per op: arity, type/shape inference and a cost model. The registry is the single list
// of supported ops; importers, executors and the CLI ask it.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops {

// What the GUI colours by.
enum class OpCategory : uint8_t {
  Elementwise,
  Activation,
  Conv,
  MatMul,
  Pool,
  Norm,
  Reduction,
  Shape,
  Data,
  ControlFlow,
  Other
};
const char* category_name(OpCategory c);

// Inputs to inference. `types[i]` is the static type of input i (a tensor of dtype Undefined when the
// optional input is left out; sequences and optionals have their kind); `values[i]` is its value when known
// (initializer, Constant, folded shape computation, or every input in eager mode), else nullptr.
struct InferContext {
  const ir::Node& node;
  int64_t opset;
  std::vector<ir::ValueType> types;
  std::vector<const Tensor*> values;
  std::vector<ir::ValueType> outputs;  // filled by infer (sized to node.outputs)

  size_t num_inputs() const { return types.size(); }
  bool has_input(size_t i) const {
    return i < types.size() && (types[i].dtype != DType::Undefined || !types[i].is_tensor());
  }
  const ir::ValueType& in(size_t i) const { return types[i]; }
  const Tensor* value(size_t i) const { return i < values.size() ? values[i] : nullptr; }
  // Static dims of input i or nullptr when the rank is unknown.
  const std::vector<int64_t>* dims(size_t i) const { return types[i].dims ? &*types[i].dims : nullptr; }
  void set_output(size_t i, DType dtype, std::vector<int64_t> dims) {
    outputs[i].dtype = dtype;
    outputs[i].dim_params.assign(dims.size(), "");
    outputs[i].dims = std::move(dims);
  }
  void set_output_rank_unknown(size_t i, DType dtype) {
    outputs[i].dtype = dtype;
    outputs[i].dims.reset();
    outputs[i].dim_params.clear();
  }
  // Error naming the node, e.g. fail("input 1 must be i64, got f32").
  Status fail(const std::string& what) const;
};

struct Cost {
  double flops = 0;  // floating-point (or integer) operations
  double bytes = 0;  // bytes read + written
};

// Cost from static (or concrete) shapes.
struct CostContext {
  const ir::Node& node;
  const std::vector<ir::ValueType>& inputs;
  const std::vector<ir::ValueType>& outputs;
};

struct OpSchema {
  std::string op_type;
  std::string domain;                  // "" = ai.onnx
  int since_version = 1;               // oldest opset supported
  int min_inputs = 0, max_inputs = 0;  // max -1 = variadic
  int min_outputs = 1, max_outputs = 1;
  OpCategory category = OpCategory::Other;
  std::function<Status(InferContext&)> infer;
  std::function<Cost(const CostContext&)> cost;  // null: bytes of inputs + outputs, flops = output numel
};

class Registry {
 public:
  static Registry& instance();
  void add(OpSchema schema);
  const OpSchema* find(std::string_view op_type, std::string_view domain = "") const;
  std::vector<const OpSchema*> all() const;  // sorted by op type

 private:
  std::deque<OpSchema> schemas_;  // stable addresses
  std::unordered_map<std::string, const OpSchema*> index_;
};

// Runs arity checks and the schema's inference. Errors name the node.
Status infer_node(InferContext& ctx);
Cost node_cost(const ir::Node& node, const std::vector<ir::ValueType>& in, const std::vector<ir::ValueType>& out);

// Helper for registration files: each ops/*.cpp defines `void register_<family>_ops(Registry&)`.
void register_all_ops(Registry& r);

// Numel of a static type, or -1.
int64_t static_numel(const ir::ValueType& t);

}  // namespace ms::ops
