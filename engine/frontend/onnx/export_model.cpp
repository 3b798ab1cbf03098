// ir::Graph -> ModelProto file. Initializers as raw_data, subgraphs recursive, value types kept,
// node ids and origins in metadata_props so a reload keeps identity.
#include <algorithm>
#include <climits>
#include <set>

#include "engine/core/atomic_file.h"
#include "engine/core/strings.h"
#include "engine/frontend/onnx/import_internal.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::onnx_io {
namespace detail {

Status tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& out) {
  if (!t.defined()) return invalid_argument("tensor '" + name + "' has no data");
  if (!t.is_tensor())
    return unsupported("tensor '" + name + "': a " + value_kind_name(t.kind()) + " value cannot be saved as a tensor");
  if (t.dtype() == DType::Undefined)
    return unsupported("tensor '" + name + "': dtype " + std::string(dtype_name(t.dtype())) + " cannot be saved");
  out.set_name(name);
  out.set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) out.add_dims(d);
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) out.add_string_data(string_at(t, i));
    return Status::ok();
  }
  const int bits = dtype_packed_bits(t.dtype());
  if (bits < 8) {
    // Sub-byte types: one code per byte here, packed from the least significant bits in the file.
    const int per_byte = 8 / bits;
    const auto* src = static_cast<const uint8_t*>(t.raw());
    const size_t n = static_cast<size_t>(t.numel());
    std::string packed((n * static_cast<size_t>(bits) + 7) / 8, '\0');
    const unsigned mask = (1u << bits) - 1;
    for (size_t i = 0; i < n; ++i)
      packed[i / per_byte] = static_cast<char>(static_cast<unsigned char>(packed[i / per_byte]) |
                                               ((src[i] & mask) << ((i % per_byte) * bits)));
    out.set_raw_data(std::move(packed));
    return Status::ok();
  }
  // Host layout is little-endian and bools are single 0/1 bytes: the raw_data format exactly.
  out.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  return Status::ok();
}

}  // namespace detail

namespace {

Status graph_to_proto(const ir::Graph& g, onnx::GraphProto& gp);

void type_to_proto(const ir::ValueType& vt, onnx::TypeProto& tp) {
  if (vt.kind == ValueKind::Sequence)
    return type_to_proto(vt.element(), *tp.mutable_sequence_type()->mutable_elem_type());
  if (vt.kind == ValueKind::Optional)
    return type_to_proto(vt.element(), *tp.mutable_optional_type()->mutable_elem_type());
  auto* tt = tp.mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(vt.dtype));
  if (!vt.dims) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < vt.dims->size(); ++i) {
    auto* d = shape->add_dim();
    const int64_t v = (*vt.dims)[i];
    if (v >= 0)
      d->set_dim_value(v);
    else if (i < vt.dim_params.size() && !vt.dim_params[i].empty())
      d->set_dim_param(vt.dim_params[i]);
  }
}

void value_info(const ir::Graph& g, const std::string& name, onnx::ValueInfoProto& vi) {
  vi.set_name(name);
  const ir::Value* v = g.value(name);
  if (v && v->type.dtype != DType::Undefined) type_to_proto(v->type, *vi.mutable_type());
}

// The one type-valued attribute of the standard set (Optional's).
constexpr const char* kTypeAttr = "type";

Status attr_to_proto(const std::string& key, const ir::Attribute& a, onnx::AttributeProto& ap) {
  using AP = onnx::AttributeProto;
  ap.set_name(key);
  const auto& s = a.storage();
  switch (a.kind()) {
    case ir::Attribute::Kind::Int:
      ap.set_type(AP::INT);
      ap.set_i(std::get<int64_t>(s));
      break;
    case ir::Attribute::Kind::Float:
      ap.set_type(AP::FLOAT);
      ap.set_f(std::get<float>(s));
      break;
    case ir::Attribute::Kind::String:
      // Optional's 'type' is a TYPE_PROTO kept as its text (ir::parse_value_type).
      if (key == kTypeAttr) {
        if (auto vt = ir::parse_value_type(std::get<std::string>(s))) {
          ap.set_type(AP::TYPE_PROTO);
          type_to_proto(*vt, *ap.mutable_tp());
          break;
        }
      }
      ap.set_type(AP::STRING);
      ap.set_s(std::get<std::string>(s));
      break;
    case ir::Attribute::Kind::Ints:
      ap.set_type(AP::INTS);
      for (int64_t v : std::get<std::vector<int64_t>>(s)) ap.add_ints(v);
      break;
    case ir::Attribute::Kind::Floats:
      ap.set_type(AP::FLOATS);
      for (float v : std::get<std::vector<float>>(s)) ap.add_floats(v);
      break;
    case ir::Attribute::Kind::Strings:
      ap.set_type(AP::STRINGS);
      for (const auto& v : std::get<std::vector<std::string>>(s)) ap.add_strings(v);
      break;
    case ir::Attribute::Kind::Tensor:
      ap.set_type(AP::TENSOR);
      return detail::tensor_to_proto(std::get<Tensor>(s), "", *ap.mutable_t());
    case ir::Attribute::Kind::Graph: {
      ap.set_type(AP::GRAPH);
      const auto& sub = std::get<ir::Attribute::GraphPtr>(s);
      if (!sub) return invalid_argument("attribute '" + key + "' holds no graph");
      return graph_to_proto(*sub, *ap.mutable_g());
    }
    case ir::Attribute::Kind::Graphs:
      ap.set_type(AP::GRAPHS);
      for (const auto& sub : std::get<std::vector<ir::Attribute::GraphPtr>>(s)) {
        if (!sub) return invalid_argument("attribute '" + key + "' holds no graph");
        MS_RETURN_IF_ERROR(graph_to_proto(*sub, *ap.add_graphs()));
      }
      break;
  }
  return Status::ok();
}

Status graph_to_proto(const ir::Graph& g, onnx::GraphProto& gp) {
  gp.set_name(g.name);
  std::set<std::string> listed(g.inputs.begin(), g.inputs.end());
  listed.insert(g.outputs.begin(), g.outputs.end());
  for (const auto& in : g.inputs) value_info(g, in, *gp.add_input());
  for (const auto& name : g.initializer_names()) {
    Status st = detail::tensor_to_proto(*g.value(name)->constant, name, *gp.add_initializer());
    if (!st.is_ok()) return st;
    listed.insert(name);
  }
  for (const auto& n : g.nodes()) {
    auto* np = gp.add_node();
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    if (!n.name.empty()) np->set_name(n.name);
    for (const auto& in : n.inputs) np->add_input(in);
    for (const auto& out : n.outputs) np->add_output(out);
    for (const auto& [key, a] : n.attrs) {
      Status st = attr_to_proto(key, a, *np->add_attribute());
      if (!st.is_ok()) return st.prepend(n.label() + ": ").with_node(n.id.value);
    }
  }
  for (const auto& out : g.outputs) value_info(g, out, *gp.add_output());
  // Types of intermediate values, sorted so the file is deterministic.
  std::vector<std::string> names;
  for (const auto& [name, v] : g.values())
    if (!listed.count(name) && v.type.dtype != DType::Undefined) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) value_info(g, name, *gp.add_value_info());
  return Status::ok();
}

}  // namespace

Status save_model(const ir::Graph& g, const std::string& path) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto meta = g.metadata;
  auto take = [&](const char* key) {
    auto it = meta.find(key);
    if (it == meta.end()) return std::string();
    std::string v = it->second;
    meta.erase(it);
    return v;
  };
  const std::string producer = take("onnx.producer_name");
  m.set_producer_name(producer.empty() ? "modescope" : producer);
  m.set_producer_version(take("onnx.producer_version"));
  m.set_domain(take("onnx.domain"));
  m.set_doc_string(take("onnx.doc_string"));
  const std::string graph_doc = take("onnx.graph_doc_string");
  const std::string model_version = take("onnx.model_version");
  if (!model_version.empty()) m.set_model_version(std::atoll(model_version.c_str()));
  meta.erase(detail::kNodeIdsKey);

  auto opsets = g.opsets;
  if (!opsets.count("")) opsets[""] = g.opset("");
  // Every domain a node uses must be imported, or the file would not load again.
  detail::for_each_node_preorder(g, [&](const ir::Graph& owner, const ir::Node& n) {
    if (!opsets.count(n.domain)) opsets[n.domain] = owner.opset(n.domain);
  });
  for (const auto& [domain, version] : opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }

  Status st = graph_to_proto(g, *m.mutable_graph());
  if (!st.is_ok()) return st.prepend(path + ": ");
  if (!graph_doc.empty()) m.mutable_graph()->set_doc_string(graph_doc);
  for (const auto& [k, v] : meta) {
    auto* kv = m.add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  auto* ids = m.add_metadata_props();
  ids->set_key(detail::kNodeIdsKey);
  ids->set_value(detail::encode_node_ids(g));

  if (m.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return io_error(path + ": model too large to serialize (over 2 GiB)");
  // Serialized straight into the file: a large model's weights are not held a second time as one
  // string of the whole file.
  AtomicFile out(path);
  if (!m.SerializeToOstream(&out.stream()) && out.ok()) return io_error(path + ": the model could not be serialized");
  return out.commit();
}

}  // namespace ms::onnx_io
