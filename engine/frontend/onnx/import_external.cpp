// External tensor data: the path must stay inside the model's folder (a model file is untrusted
// input; letting it name /etc/shadow or ../../secret would turn the loader into a file reader).
// Aligned tensors are views into the mapped file, read from disk only where a run touches them.
#include <charconv>
#include <filesystem>
#include <fstream>

#include "engine/frontend/onnx/import_internal.h"

namespace ms::onnx_io::detail {
namespace {

namespace fs = std::filesystem;

bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// True when `inner` is `outer` or lies below it (both canonical).
bool is_within(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // trailing separator
    if (i == inner.end() || *o != *i) return false;
  }
  return true;
}

}  // namespace

Expected<ExternalRange> resolve_external_data(const onnx::TensorProto& t, size_t expected_bytes,
                                              const ImportContext& ctx, const std::string& what) {
  std::string location, offset_s, length_s;
  bool has_offset = false, has_length = false;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset_s = kv.value(), has_offset = true;
    else if (kv.key() == "length")
      length_s = kv.value(), has_length = true;
  }
  if (ctx.base_dir.empty()) return ctx.invalid(what + ": external data is not allowed here (model loaded from memory)");
  if (location.empty()) return ctx.invalid(what + ": external data without a 'location'");
  if (location.find('\0') != std::string::npos) return ctx.invalid(what + ": external data location holds a NUL byte");

  const fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return ctx.invalid(what + ": external data location '" + location + "' is an absolute path (refused)");
  for (const auto& part : rel)
    if (part == "..") return ctx.invalid(what + ": external data location '" + location + "' contains '..' (refused)");

  uint64_t offset = 0, length = 0;
  if (has_offset && !parse_u64(offset_s, offset))
    return ctx.invalid(what + ": external data offset '" + offset_s + "' is not a non-negative integer");
  if (has_length && !parse_u64(length_s, length))
    return ctx.invalid(what + ": external data length '" + length_s + "' is not a non-negative integer");

  std::error_code ec;
  const fs::path base = fs::canonical(fs::path(ctx.base_dir), ec);
  if (ec) return ctx.invalid(what + ": model folder '" + ctx.base_dir + "' cannot be resolved: " + ec.message());
  const fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) return ctx.invalid(what + ": external data '" + location + "' cannot be resolved: " + ec.message());
  if (!is_within(base, full))
    return ctx.invalid(what + ": external data '" + location + "' resolves outside the model's folder (refused)");
  if (!fs::is_regular_file(full, ec))
    return ctx.invalid(what + ": external data file '" + location + "' does not exist or is not a regular file");
  const uint64_t size = fs::file_size(full, ec);
  if (ec) return ctx.invalid(what + ": external data file '" + location + "': " + ec.message());

  if (offset > size)
    return ctx.invalid(what + ": external data offset " + std::to_string(offset) + " is past the end of '" + location +
                       "' (" + std::to_string(size) + " bytes)");
  if (!has_length) length = size - offset;
  if (length > size - offset)
    return ctx.invalid(what + ": external data range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                       ") runs past the end of '" + location + "' (" + std::to_string(size) + " bytes)");
  if (length != expected_bytes)
    return ctx.invalid(what + ": external data length " + std::to_string(length) + " does not match the " +
                       std::to_string(expected_bytes) + " bytes its dims need");

  return ExternalRange{full.string(), location, offset, length};
}

Expected<std::string> read_external_data(const ExternalRange& r, const ImportContext& ctx, const std::string& what) {
  std::ifstream in(r.path, std::ios::binary);
  if (!in) return ctx.error(ErrorCode::Io, what + ": cannot open external data file '" + r.location + "'");
  std::string bytes(static_cast<size_t>(r.length), '\0');
  in.seekg(static_cast<std::streamoff>(r.offset));
  if (r.length && !in.read(bytes.data(), static_cast<std::streamsize>(r.length)))
    return ctx.error(ErrorCode::Io, what + ": short read from external data file '" + r.location + "'");
  return bytes;
}

Expected<std::shared_ptr<Buffer>> map_external_data(const ExternalRange& r, const ImportContext& ctx,
                                                    const std::string& what) {
  if (r.offset % 64 != 0 || r.length == 0) return std::shared_ptr<Buffer>();
  auto it = ctx.mapped.find(r.path);
  if (it == ctx.mapped.end()) {
    auto file = MappedFile::open(r.path);
    if (!file)
      return ctx.error(ErrorCode::Io, what + ": external data file '" + r.location + "': " + file.status().message());
    it = ctx.mapped.emplace(r.path, std::move(*file)).first;
  }
  // The file may have changed since its size was checked: the range must still lie inside it.
  if (r.offset + r.length > it->second->size())
    return ctx.invalid(what + ": external data range runs past the end of '" + r.location + "'");
  return it->second->view(r.offset, r.length);
}

}  // namespace ms::onnx_io::detail
