// ONNX import/export through Debian's libonnx/protobuf. Every imported node gets a fresh NodeId
// (origins = itself); node names, opsets, dynamic dims and initializers are kept.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace ms::onnx_io {

struct LoadOptions {
  // Refuse a model that uses ops the registry lacks (one error listing every such op). Off for
  // tools that only look at a graph (dump, round trip) and never run it.
  bool require_supported_ops = true;
};

// Loads a model file. External data is read relative to the model's folder; absolute paths, '..'
// and symlinks leaving that folder are refused. Errors name the file and the node/field.
Expected<ir::Graph> load_model(const std::string& path);
Expected<ir::Graph> load_model(const std::string& path, const LoadOptions& options);
// Loads from bytes; `base_dir` resolves external data ("" = external data refused), `origin` names
// the source in errors.
Expected<ir::Graph> load_model_from_bytes(std::string_view bytes, const std::string& base_dir,
                                          const std::string& origin);
// The newest opset of an ONNX domain ("" or "ai.onnx", "ai.onnx.ml", "ai.onnx.preview",
// "ai.onnx.preview.training") whose ops this importer knows; 0 for other domains, which are checked op
// by op. A model importing a newer version is refused naming both numbers.
int64_t max_supported_opset(std::string_view domain);
Expected<ir::Graph> load_model_from_bytes(std::string_view bytes, const std::string& base_dir,
                                          const std::string& origin, const LoadOptions& options);
// A serialized TensorProto file (ONNX test data input_0.pb / output_0.pb).
Expected<Tensor> load_tensor_pb(const std::string& path);
// A serialized test-data value of the type a model declares for it: a TensorProto, or a SequenceProto
// (a sequence value) or OptionalProto (an optional value, maybe empty) when `type` says so.
Expected<Tensor> load_value_pb(const std::string& path, const ir::ValueType& type);
// Writes a model (opset and ids kept: node ids go to metadata so a round trip keeps identity).
Status save_model(const ir::Graph& g, const std::string& path);

}  // namespace ms::onnx_io
