// Pieces shared by the ONNX importer and exporter files (not part of the public API).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"

namespace ms::onnx_io::detail {

// Metadata key under which save_model stores node ids and origins (JSON).
inline constexpr const char* kNodeIdsKey = "modescope.node_ids";
// A tensor bigger than this many elements is refused: no real model needs it and the number
// would overflow byte counts further down.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

struct ImportContext {
  std::string origin;                     // names the source in every error ("path/model.onnx")
  std::string base_dir;                   // folder for external data; "" = external data refused
  std::map<std::string, int64_t> opsets;  // model-level opset_import ("" = ai.onnx)
  // External data files mapped so far, by canonical path: tensors are views into them.
  mutable std::map<std::string, std::shared_ptr<MappedFile>> mapped;

  // "<origin>: <what>"
  Status error(ErrorCode code, const std::string& what) const;
  Status invalid(const std::string& what) const { return error(ErrorCode::InvalidModel, what); }
};

// --- tensors (import_tensor.cpp) ---
// ONNX element type -> DType; errors for undefined/unknown (InvalidModel) and known-but-unsupported
// types such as strings or complex numbers (Unsupported). `what` names the field.
Expected<DType> dtype_from_proto(int elem_type, const ImportContext& ctx, const std::string& what);
// Element count of a concrete shape; refuses negative dims, overflow and > kMaxElements.
Expected<int64_t> checked_numel(const std::vector<int64_t>& dims, const ImportContext& ctx, const std::string& what);
// TensorProto -> Tensor (raw_data, typed fields, external data). `what` = "initializer 'w'".
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& t, const ImportContext& ctx, const std::string& what);

// --- external data (import_external.cpp) ---
// Where an EXTERNAL tensor's bytes are, after the path and range checks.
struct ExternalRange {
  std::string path;      // canonical
  std::string location;  // as the model names it
  uint64_t offset = 0, length = 0;
};
Expected<ExternalRange> resolve_external_data(const onnx::TensorProto& t, size_t expected_bytes,
                                              const ImportContext& ctx, const std::string& what);
// Reads those bytes.
Expected<std::string> read_external_data(const ExternalRange& r, const ImportContext& ctx, const std::string& what);
// A host buffer over those bytes in the mapped file (read from disk only when touched); null when
// the range is not 64-byte aligned in the file (then the bytes are read).
Expected<std::shared_ptr<Buffer>> map_external_data(const ExternalRange& r, const ImportContext& ctx,
                                                    const std::string& what);

// --- graphs (import_graph.cpp) ---
// GraphProto -> Graph. Subgraphs share `ids`. `is_main` makes graph-input types mandatory.
// `release`, where given, is `gp` itself: each initializer's raw bytes are freed once its tensor
// is made (the proto is not read again).
Expected<ir::Graph> graph_from_proto(const onnx::GraphProto& gp, const std::shared_ptr<ir::IdSource>& ids,
                                     const ImportContext& ctx, bool is_main, onnx::GraphProto* release = nullptr);

// --- model-local functions (import_functions.cpp) ---
// Replaces every call of a function of m.functions() by the function's body, in the main graph and
// all subgraphs (nested calls too), and adds the domains only functions import to ctx.opsets.
Status inline_functions(onnx::ModelProto& m, ImportContext& ctx);

// --- ONNX Runtime's quantized contrib ops (import_contrib.cpp) ---
// Expands com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
// QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearWhere, QGemm,
// DynamicQuantizeMatMul, MatMulIntegerToFloat, QAttention and QEmbedLayerNormalization into the ops
// that define them.
Status expand_contrib_ops(onnx::ModelProto& m, const ImportContext& ctx);

// --- checks (import_check.cpp) ---
// Attribute kinds that matter for an op (If branches, Conv kernel_shape, Cast 'to', ...).
Status check_node_attributes(const ir::Node& n, const ImportContext& ctx);
// Reorders `nodes` topologically (stable: file order when already sorted); names produced by no
// node here (inputs, initializers, enclosing scopes, dangling) are left for ir::verify.
Status topo_sort(std::vector<ir::Node>& nodes, const ImportContext& ctx, const std::string& graph_name);
// Names a graph reads from enclosing scopes (recursively through its own subgraphs).
void free_names(const ir::Graph& g, std::vector<std::string>& out);
// One error listing every op type the registry lacks, with its first node and opset.
Status check_supported_ops(const ir::Graph& g, const ImportContext& ctx);

// --- node ids metadata (node_ids_meta.cpp) ---
// Visits nodes in pre-order: each node, then its subgraphs (attributes in key order).
void for_each_node_preorder(ir::Graph& g, const std::function<void(ir::Graph&, ir::Node&)>& f);
void for_each_node_preorder(const ir::Graph& g, const std::function<void(const ir::Graph&, const ir::Node&)>& f);
std::string encode_node_ids(const ir::Graph& g);
// Restores ids/origins when the JSON matches the graph (same node count and op types in pre-order);
// returns false (graph untouched) otherwise.
bool restore_node_ids(ir::Graph& g, const std::string& json);

// --- export (export_model.cpp) ---
Status tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& out);

}  // namespace ms::onnx_io::detail
