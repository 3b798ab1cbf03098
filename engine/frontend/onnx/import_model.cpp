// ModelProto -> ir::Graph: parsing, opsets, metadata, node ids, then verify and the op check.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "engine/frontend/onnx/import_internal.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::onnx_io {
namespace {

using detail::ImportContext;

Status read_opsets(const onnx::ModelProto& m, ImportContext& ctx) {
  for (const auto& op : m.opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? std::string() : op.domain();
    const std::string shown = domain.empty() ? std::string("ai.onnx") : domain;
    if (op.version() <= 0)
      return ctx.invalid("opset_import for domain '" + shown + "' has version " + std::to_string(op.version()));
    if (const int64_t newest = max_supported_opset(domain); newest > 0 && op.version() > newest)
      return ctx.error(ErrorCode::Unsupported,
                       "opset " + std::to_string(op.version()) + " of domain '" + shown +
                           "' is newer than this importer supports (newest: " + std::to_string(newest) + ")");
    if (!ctx.opsets.emplace(domain, op.version()).second)
      return ctx.invalid("opset_import lists domain '" + shown + "' twice");
  }
  return Status::ok();
}

void read_metadata(const onnx::ModelProto& m, ir::Graph& g) {
  auto keep = [&](const char* key, const std::string& v) {
    if (!v.empty()) g.metadata[key] = v;
  };
  keep("onnx.producer_name", m.producer_name());
  keep("onnx.producer_version", m.producer_version());
  keep("onnx.domain", m.domain());
  keep("onnx.doc_string", m.doc_string());
  keep("onnx.graph_doc_string", m.graph().doc_string());
  if (m.model_version() != 0) g.metadata["onnx.model_version"] = std::to_string(m.model_version());
  for (const auto& kv : m.metadata_props()) g.metadata[kv.key()] = kv.value();
}

}  // namespace

int64_t max_supported_opset(std::string_view domain) {
  // The op schemas of ONNX 1.23 (opset 28): every op the registry knows follows its newest version.
  if (domain.empty() || domain == "ai.onnx") return 28;
  if (domain == "ai.onnx.ml") return 5;
  if (domain == "ai.onnx.preview" || domain == "ai.onnx.preview.training") return 1;
  if (domain == "com.microsoft") return 1;  // ONNX Runtime's contrib ops (ops/contrib.cpp)
  return 0;
}

namespace {

// Everything after the parse. The main graph's initializers give up their raw bytes as they become
// tensors, so a large model's weights are not held twice while the graph is built.
Expected<ir::Graph> graph_of_model(onnx::ModelProto& m, ImportContext& ctx, const LoadOptions& options) {
  if (!m.has_graph()) return ctx.invalid("not a valid ONNX model (no graph)");
  MS_RETURN_IF_ERROR(read_opsets(m, ctx));
  MS_RETURN_IF_ERROR(detail::inline_functions(m, ctx));
  MS_RETURN_IF_ERROR(detail::expand_contrib_ops(m, ctx));

  auto ids = std::make_shared<ir::IdSource>();
  MS_ASSIGN_OR_RETURN(ir::Graph g, detail::graph_from_proto(m.graph(), ids, ctx, /*is_main=*/true, m.mutable_graph()));
  read_metadata(m, g);
  auto it = g.metadata.find(detail::kNodeIdsKey);
  if (it != g.metadata.end()) {
    // A stale or edited id list is dropped: fresh ids are better than wrong ones.
    detail::restore_node_ids(g, it->second);
    g.metadata.erase(it);
  }

  Status st = ir::verify(g);
  if (!st.is_ok()) return st.prepend(ctx.origin + ": ");
  if (options.require_supported_ops) MS_RETURN_IF_ERROR(detail::check_supported_ops(g, ctx));
  return g;
}

Status parse_model(google::protobuf::io::CodedInputStream& in, onnx::ModelProto& m, const ImportContext& ctx) {
  in.SetTotalBytesLimit(INT_MAX);  // the default limit is lower in some protobuf versions
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return ctx.invalid("not a valid ONNX model (protobuf parse failed: truncated or corrupt file)");
  return Status::ok();
}

}  // namespace

Expected<ir::Graph> load_model_from_bytes(std::string_view bytes, const std::string& base_dir,
                                          const std::string& origin, const LoadOptions& options) {
  ImportContext ctx;
  ctx.origin = origin;
  ctx.base_dir = base_dir;
  if (bytes.empty()) return ctx.invalid("empty file, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return ctx.invalid("file is larger than 2 GiB; store the weights as external data");
  onnx::ModelProto m;
  {
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    MS_RETURN_IF_ERROR(parse_model(in, m, ctx));
  }
  return graph_of_model(m, ctx, options);
}

Expected<ir::Graph> load_model_from_bytes(std::string_view bytes, const std::string& base_dir,
                                          const std::string& origin) {
  return load_model_from_bytes(bytes, base_dir, origin, LoadOptions{});
}

// The file is parsed as it is read (a small buffer, not a copy of the whole file): a 437 MB model
// peaked at 1.9 GB resident when it was read whole first, then parsed, then turned into tensors.
Expected<ir::Graph> load_model(const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return io_error(path + ": is a folder, not a model file");
  ImportContext ctx;
  ctx.origin = path;
  ctx.base_dir = fs::path(path).parent_path().string();
  if (ctx.base_dir.empty()) ctx.base_dir = ".";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path + ": cannot open file");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(path + ": read error (" + std::strerror(errno) + ")");
  if (st.st_size == 0) return ctx.invalid("empty file, not an ONNX model");
  if (st.st_size > INT_MAX) return ctx.invalid("file is larger than 2 GiB; store the weights as external data");
  onnx::ModelProto m;
  {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream in(&file);
    const Status parsed = parse_model(in, m, ctx);
    if (file.GetErrno() != 0) return io_error(path + ": read error (" + std::strerror(file.GetErrno()) + ")");
    MS_RETURN_IF_ERROR(parsed);
  }
  return graph_of_model(m, ctx, options);
}

Expected<ir::Graph> load_model(const std::string& path) { return load_model(path, LoadOptions{}); }

}  // namespace ms::onnx_io
