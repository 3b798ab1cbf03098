// GraphProto -> ir::Graph: inputs, initializers, nodes with attributes (subgraphs recursive),
// value types. Nodes get fresh ids in file order, then are sorted topologically.
#include <unordered_map>
#include <unordered_set>

#include "engine/frontend/onnx/import_internal.h"

namespace ms::onnx_io::detail {
namespace {

using AP = onnx::AttributeProto;

// A TypeProto's tensor type (dtype and dims).
Status tensor_type_from_proto(const onnx::TypeProto::Tensor& tt, ir::ValueType& vt, const ImportContext& ctx,
                              const std::string& what) {
  MS_ASSIGN_OR_RETURN(vt.dtype, dtype_from_proto(tt.elem_type(), ctx, what));
  if (!tt.has_shape()) return Status::ok();
  std::vector<int64_t> dims;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      // -1 is how some exporters spell "unknown"; anything lower is corrupt.
      if (d.dim_value() < -1)
        return ctx.invalid(what + ": dim " + std::to_string(i) + " is negative (" + std::to_string(d.dim_value()) +
                           ")");
      dims.push_back(d.dim_value());
      vt.dim_params.emplace_back();
    } else {
      dims.push_back(-1);
      vt.dim_params.push_back(d.has_dim_param() ? d.dim_param() : std::string());
    }
  }
  // Known dims must not describe an absurd tensor.
  std::vector<int64_t> known;
  for (int64_t d : dims)
    if (d >= 0) known.push_back(d);
  MS_RETURN_IF_ERROR(checked_numel(known, ctx, what).status());
  vt.dims = std::move(dims);
  return Status::ok();
}

// tensor(T), seq(tensor(T)), optional(tensor(T)) and optional(seq(tensor(T))); anything else (maps,
// sparse tensors, nested sequences) is refused as unsupported. An element type left at 0 in an
// optional type (not required) leaves the type unknown.
Status type_from_proto(const onnx::TypeProto& tp, ir::ValueType& vt, const ImportContext& ctx, const std::string& what,
                       bool required, int depth) {
  using TP = onnx::TypeProto;
  auto unsupported_kind = [&] {
    return ctx.error(ErrorCode::Unsupported, what +
                                                 ": only tensor, sequence of tensors and optional types are "
                                                 "supported (map, sparse and nested sequences are not)");
  };
  switch (tp.value_case()) {
    case TP::kTensorType:
      if (tp.tensor_type().elem_type() == 0 && !required) return Status::ok();
      return tensor_type_from_proto(tp.tensor_type(), vt, ctx, what);
    case TP::kSequenceType: {
      if (depth > 0 && vt.kind == ValueKind::Sequence) return unsupported_kind();
      if (!tp.sequence_type().has_elem_type()) return ctx.invalid(what + ": sequence type has no element type");
      const auto& et = tp.sequence_type().elem_type();
      if (et.value_case() != TP::kTensorType) return unsupported_kind();
      vt.kind = ValueKind::Sequence;
      return type_from_proto(et, vt, ctx, what, required, depth + 1);
    }
    case TP::kOptionalType: {
      if (depth > 0) return unsupported_kind();
      if (!tp.optional_type().has_elem_type()) return ctx.invalid(what + ": optional type has no element type");
      const auto& et = tp.optional_type().elem_type();
      vt.kind = ValueKind::Optional;
      if (et.value_case() == TP::kTensorType) return type_from_proto(et, vt, ctx, what, required, depth + 1);
      if (et.value_case() != TP::kSequenceType) return unsupported_kind();
      ir::ValueType seq;
      MS_RETURN_IF_ERROR(type_from_proto(et, seq, ctx, what, required, depth + 1));
      vt = ir::ValueType::optional_of(seq);
      return Status::ok();
    }
    case TP::VALUE_NOT_SET:
      if (required) return ctx.invalid(what + ": has no type");
      return Status::ok();
    default: return unsupported_kind();
  }
}

// The type a ValueInfoProto declares. `required`: a missing tensor type is an error (main inputs).
Expected<ir::ValueType> value_type_from_proto(const onnx::ValueInfoProto& vi, const ImportContext& ctx,
                                              const std::string& what, bool required) {
  ir::ValueType vt;
  if (!vi.has_type()) {
    if (required) return ctx.invalid(what + ": has no type");
    return vt;
  }
  MS_RETURN_IF_ERROR(type_from_proto(vi.type(), vt, ctx, what, required, 0));
  return vt;
}

// An attribute declared UNDEFINED (old exporters) takes its kind from the field that is set.
int attribute_kind(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  if (a.graphs_size()) return AP::GRAPHS;
  if (a.tensors_size()) return AP::TENSORS;
  return AP::UNDEFINED;
}

Expected<ir::Attribute> attribute_from_proto(const AP& a, const std::shared_ptr<ir::IdSource>& ids,
                                             const ImportContext& ctx, const std::string& what) {
  if (!a.ref_attr_name().empty())
    return ctx.invalid(what + ": references a function attribute (ref_attr_name) outside a function");
  switch (attribute_kind(a)) {
    case AP::FLOAT: return ir::Attribute(a.f());
    case AP::INT: return ir::Attribute(static_cast<int64_t>(a.i()));
    case AP::STRING: return ir::Attribute(a.s());
    case AP::FLOATS: return ir::Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
    case AP::INTS: return ir::Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AP::STRINGS: return ir::Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AP::TENSOR: {
      MS_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), ctx, what));
      return ir::Attribute(std::move(t));
    }
    case AP::GRAPH: {
      MS_ASSIGN_OR_RETURN(ir::Graph g, graph_from_proto(a.g(), ids, ctx, false));
      return ir::Attribute(std::make_shared<ir::Graph>(std::move(g)));
    }
    case AP::GRAPHS: {
      std::vector<ir::Attribute::GraphPtr> gs;
      for (const auto& gp : a.graphs()) {
        MS_ASSIGN_OR_RETURN(ir::Graph g, graph_from_proto(gp, ids, ctx, false));
        gs.push_back(std::make_shared<ir::Graph>(std::move(g)));
      }
      return ir::Attribute(std::move(gs));
    }
    case AP::TYPE_PROTO: {  // kept as the type's text (ir::parse_value_type reads it back)
      ir::ValueType vt;
      MS_RETURN_IF_ERROR(type_from_proto(a.tp(), vt, ctx, what, true, 0));
      return ir::Attribute(vt.to_string());
    }
    case AP::UNDEFINED: return ctx.invalid(what + ": has no type and no value");
    default:
      return ctx.error(ErrorCode::Unsupported, what + ": attribute type " + std::to_string(a.type()) +
                                                   " (tensors/sparse/type protos) is not supported");
  }
}

std::string node_display(const onnx::NodeProto& np, size_t index) {
  if (!np.name().empty()) return "node '" + np.name() + "' (" + np.op_type() + ")";
  if (np.output_size() && !np.output(0).empty()) return "node '" + np.output(0) + "' (" + np.op_type() + ")";
  return "node #" + std::to_string(index) + " (" + np.op_type() + ")";
}

Expected<ir::Node> node_from_proto(const onnx::NodeProto& np, size_t index, const std::shared_ptr<ir::IdSource>& ids,
                                   const ImportContext& ctx) {
  const std::string disp = node_display(np, index);
  if (np.op_type().empty()) return ctx.invalid(disp + ": empty op_type");
  ir::Node n;
  n.id = ids->next();  // before the subgraphs: a node's id precedes its body's ids
  n.op_type = np.op_type();
  n.domain = np.domain() == "ai.onnx" ? std::string() : np.domain();
  n.name = np.name();
  n.inputs.assign(np.input().begin(), np.input().end());
  n.outputs.assign(np.output().begin(), np.output().end());
  if (!ctx.opsets.count(n.domain))
    return ctx.invalid(disp + ": domain '" + (n.domain.empty() ? std::string("ai.onnx") : n.domain) +
                       "' has no opset_import in the model");
  for (const auto& a : np.attribute()) {
    if (a.name().empty()) return ctx.invalid(disp + ": attribute with an empty name");
    if (n.attrs.count(a.name())) return ctx.invalid(disp + ": attribute '" + a.name() + "' given twice");
    MS_ASSIGN_OR_RETURN(ir::Attribute attr, attribute_from_proto(a, ids, ctx, disp + ", attribute '" + a.name() + "'"));
    n.attrs.emplace(a.name(), std::move(attr));
  }
  MS_RETURN_IF_ERROR(check_node_attributes(n, ctx));
  return n;
}

}  // namespace

Expected<ir::Graph> graph_from_proto(const onnx::GraphProto& gp, const std::shared_ptr<ir::IdSource>& ids,
                                     const ImportContext& ctx, bool is_main, onnx::GraphProto* release) {
  ir::Graph g(ids);
  g.name = gp.name();
  g.opsets = ctx.opsets;  // subgraphs too, so opset() is right without a parent link
  const std::string gname = is_main ? std::string("graph") : "subgraph '" + gp.name() + "'";
  if (gp.sparse_initializer_size())
    return ctx.error(ErrorCode::Unsupported, gname + ": sparse initializers are not supported");

  std::unordered_set<std::string> defined;  // names defined in this graph (for duplicate checks)
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const onnx::TensorProto& init = gp.initializer(i);
    const std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty()) return ctx.invalid(gname + ": initializer without a name");
    if (!defined.insert(init.name()).second) return ctx.invalid(what + ": defined twice");
    MS_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(init, ctx, what));
    g.add_initializer(init.name(), std::move(t));
    if (release && init.has_raw_data()) delete release->mutable_initializer(i)->release_raw_data();
  }
  std::unordered_set<std::string> input_names;
  for (const auto& in : gp.input()) {
    const std::string what = "input '" + in.name() + "'";
    if (in.name().empty()) return ctx.invalid(gname + ": input without a name");
    if (!input_names.insert(in.name()).second) return ctx.invalid(gname + ": " + what + " is listed twice");
    if (g.has_value(in.name())) continue;  // an initializer listed as input (IR < 4): it stays an initializer
    MS_ASSIGN_OR_RETURN(ir::ValueType vt, value_type_from_proto(in, ctx, what, is_main));
    defined.insert(in.name());
    g.inputs.push_back(in.name());
    g.add_value(ir::Value{in.name(), std::move(vt), {}, std::nullopt});
  }

  std::vector<ir::Node> nodes;
  std::unordered_map<std::string, std::string> producer_of;  // output name -> node display
  nodes.reserve(static_cast<size_t>(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i) {
    MS_ASSIGN_OR_RETURN(ir::Node n, node_from_proto(gp.node(i), static_cast<size_t>(i), ids, ctx));
    for (const auto& out : n.outputs) {
      if (out.empty()) continue;
      if (defined.count(out)) {
        auto it = producer_of.find(out);
        const std::string other = it != producer_of.end() ? it->second : "a graph input or initializer";
        return ctx.invalid(n.label() + ": duplicate output name '" + out + "' (also produced by " + other + ")");
      }
      defined.insert(out);
      producer_of.emplace(out, n.label());
    }
    nodes.push_back(std::move(n));
  }
  MS_RETURN_IF_ERROR(topo_sort(nodes, ctx, gname));
  for (auto& n : nodes) g.add_node(std::move(n));

  std::unordered_set<std::string> output_names;
  for (const auto& out : gp.output()) {
    const std::string what = "output '" + out.name() + "'";
    if (out.name().empty()) return ctx.invalid(gname + ": output without a name");
    if (!output_names.insert(out.name()).second) return ctx.invalid(gname + ": " + what + " is listed twice");
    MS_ASSIGN_OR_RETURN(ir::ValueType vt, value_type_from_proto(out, ctx, what, false));
    g.outputs.push_back(out.name());
    ir::Value* v = g.value(out.name());
    if (v && !v->is_initializer() && vt.dtype != DType::Undefined) v->type = std::move(vt);
  }
  for (const auto& vi : gp.value_info()) {
    ir::Value* v = g.value(vi.name());
    if (!v || v->is_initializer()) continue;  // types of unknown names are hints only
    auto vt = value_type_from_proto(vi, ctx, "value_info '" + vi.name() + "'", false);
    if (!vt) {
      if (vt.status().code() == ErrorCode::Unsupported) continue;  // non-tensor hint: ignore
      return std::move(vt).take_status();
    }
    if (vt->dtype != DType::Undefined && v->type.dtype == DType::Undefined) v->type = std::move(*vt);
  }
  return g;
}

}  // namespace ms::onnx_io::detail
