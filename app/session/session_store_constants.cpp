// The tables schema 6 added: the constant data of the pass snapshots (the snapshots' JSON carries
// none), so a reopened session's snapshots hold the weights a pass made (folded constants, folded
// batch norms, attention masks, bf16 copies) as the live session did. Each distinct buffer is stored
// once however many snapshots share it; an embedded model's initializers are referred to by name
// (the model is in the file); the other constants' bytes are kept up to a budget, past which a
// constant is marked not kept. Older files get the tables empty through the migration.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"

namespace ms::session::store {

using sql::Stmt;

const char* const kSchemaV6 = R"sql(
CREATE TABLE snapshot_constants(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT, dtype TEXT NOT NULL,
  shape TEXT NOT NULL, bytes INTEGER NOT NULL, data BLOB);
CREATE TABLE snapshot_values(snapshot INTEGER, value TEXT, constant INTEGER, PRIMARY KEY(snapshot, value));
CREATE TABLE snapshot_constant_budget(budget INTEGER, kept INTEGER, kept_bytes INTEGER, from_model INTEGER,
  not_kept INTEGER, not_kept_bytes INTEGER);
)sql";

namespace {

std::string shape_text(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out;
}

std::optional<Shape> parse_shape(const std::string& text) {
  Shape s;
  if (text.empty()) return s;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    int64_t d = -1;
    auto [p, ec] = std::from_chars(text.data() + at, text.data() + end, d);
    if (ec != std::errc() || p != text.data() + end || d < 0) return std::nullopt;
    s.push_back(d);
    at = end + 1;
  }
  return s;
}

// The tensors whose bytes a file can keep: host tensors of a fixed-size dtype.
bool storable(const Tensor& t) {
  return t.defined() && t.is_tensor() && t.dtype() != DType::String && t.dtype() != DType::Undefined;
}

}  // namespace

SnapshotConstantWriter::SnapshotConstantWriter(sqlite3* db, std::string file, uint64_t budget, bool model_provides)
    : db_(db), file_(std::move(file)), model_provides_(model_provides) {
  totals_.recorded = true;
  totals_.budget = budget;
}

void SnapshotConstantWriter::begin_run(const ir::Graph* input) {
  model_.clear();
  if (!input || !model_provides_) return;
  for (const std::string& name : input->initializer_names()) {
    const Tensor& t = *input->value(name)->constant;
    if (storable(t)) model_.emplace(Key{t.buffer().get(), t.byte_offset(), t.dtype(), t.shape()}, name);
  }
}

Expected<int64_t> SnapshotConstantWriter::constant_id(const Tensor& t, bool known) {
  const Key key{t.buffer().get(), t.byte_offset(), t.dtype(), t.shape()};
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  const auto id = static_cast<int64_t>(ids_.size());
  const uint64_t bytes = t.nbytes();
  Stmt st(db_, file_, "INSERT INTO snapshot_constants VALUES(?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, id).bind(4, dtype_name(t.dtype())).bind(5, shape_text(t.shape())).bind(6, static_cast<int64_t>(bytes));
  if (auto m = model_.find(key); m != model_.end()) {
    st.bind(2, std::string_view("model")).bind(3, m->second);
    ++totals_.from_model;
  } else if (known && t.device().is_cpu() && totals_.kept_bytes + bytes <= totals_.budget) {
    st.bind(2, std::string_view("data")).bind_blob(7, t.raw(), bytes);
    ++totals_.kept;
    totals_.kept_bytes += bytes;
  } else {
    st.bind(2, std::string_view("not_kept"));
    ++totals_.not_kept;
    totals_.not_kept_bytes += bytes;
  }
  st.run();
  MS_RETURN_IF_ERROR(st.status());
  ids_.emplace(key, id);
  return id;
}

Status SnapshotConstantWriter::write(int64_t snapshot, const PassOutcome& p) {
  const ir::Graph& g = *p.graph;
  const std::vector<std::string>& not_kept = p.constants_not_kept;
  Stmt st(db_, file_, "INSERT INTO snapshot_values VALUES(?, ?, ?)");
  for (const std::string& name : g.initializer_names()) {
    const Tensor& t = *g.value(name)->constant;
    if (!storable(t)) continue;  // string constants stay as the snapshot's JSON has them
    const bool known =
        std::find(not_kept.begin(), not_kept.end(), name) == not_kept.end() && !p.constants_from_model.count(name);
    MS_ASSIGN_OR_RETURN(const int64_t id, constant_id(t, known));
    st.bind(1, snapshot).bind(2, name).bind(3, id).run();
  }
  return st.status();
}

Status SnapshotConstantWriter::finish() {
  Stmt st(db_, file_, "INSERT INTO snapshot_constant_budget VALUES(?, ?, ?, ?, ?, ?)");
  const SnapshotConstantBudget& t = totals_;
  st.bind(1, static_cast<int64_t>(t.budget)).bind(2, t.kept).bind(3, static_cast<int64_t>(t.kept_bytes));
  st.bind(4, t.from_model).bind(5, t.not_kept).bind(6, static_cast<int64_t>(t.not_kept_bytes)).run();
  return st.status();
}

namespace {

// One stored constant: its bytes (kind data), the model's initializer (kind model) or neither.
struct StoredConstant {
  std::string kind, name;
  DType dtype = DType::Undefined;
  Shape shape;
  Tensor data;
};

Status bad_row(const std::string& file, const std::string& where, const std::string& what) {
  return invalid_model(file + ": " + where + ": " + what);
}

Expected<StoredConstant> constant_row(const std::string& file, const Stmt& st) {
  const std::string where = "snapshot_constants row " + std::to_string(st.i64(0));
  StoredConstant c;
  c.kind = st.text(1), c.name = st.text(2);
  if (c.kind != "data" && c.kind != "model" && c.kind != "not_kept")
    return bad_row(file, where, "kind '" + c.kind + "' is not data, model or not_kept");
  auto dtype = dtype_from_name(st.text(3));
  if (!dtype || *dtype == DType::String || *dtype == DType::Undefined)
    return bad_row(file, where, "dtype '" + st.text(3) + "' is not a numeric dtype");
  c.dtype = *dtype;
  auto shape = parse_shape(st.text(4));
  if (!shape) return bad_row(file, where, "shape '" + st.text(4) + "' is not a list of dims");
  c.shape = std::move(*shape);
  if (numel(c.shape) > (int64_t{1} << 34))
    return bad_row(file, where, "shape " + shape_to_string(c.shape) + " is too large");
  const uint64_t need = static_cast<uint64_t>(numel(c.shape)) * dtype_size(c.dtype);
  if (st.i64(5) < 0 || static_cast<uint64_t>(st.i64(5)) != need)
    return bad_row(
        file, where,
        "bytes " + std::to_string(st.i64(5)) + " is not the " + std::to_string(need) + " its dtype and shape need");
  if (c.kind == "model" && c.name.empty()) return bad_row(file, where, "a model constant without a name");
  if (c.kind != "data") return c;
  const std::string blob = st.blob(6);
  if (blob.size() != need)
    return bad_row(file, where, "data has " + std::to_string(blob.size()) + " bytes, not " + std::to_string(need));
  c.data = Tensor::empty(c.dtype, c.shape);
  if (need) std::memcpy(c.data.raw(), blob.data(), need);
  return c;
}

Status read_budget(sqlite3* db, const std::string& file, SnapshotConstantBudget& b) {
  Stmt st(db, file, "SELECT * FROM snapshot_constant_budget");
  if (st.step()) {
    b.recorded = true;
    b.budget = static_cast<uint64_t>(st.i64(0)), b.kept = st.i64(1), b.kept_bytes = static_cast<uint64_t>(st.i64(2));
    b.from_model = st.i64(3), b.not_kept = st.i64(4), b.not_kept_bytes = static_cast<uint64_t>(st.i64(5));
  }
  return st.status();
}

}  // namespace

Status read_snapshot_constants(sqlite3* db, const std::string& file, std::map<int64_t, ir::Graph>& graphs,
                               std::map<int64_t, SnapshotMarks>& marks, SnapshotConstantBudget& budget) {
  MS_RETURN_IF_ERROR(read_budget(db, file, budget));
  if (!budget.recorded) {  // before schema 6: no constant data at all
    for (auto& [id, g] : graphs) marks[id].not_kept = g.initializer_names();
    return Status::ok();
  }
  std::map<int64_t, StoredConstant> constants;
  // Constants without data (model, not kept) get one zero tensor each, shared by every snapshot that
  // names them as the live ones shared their buffer: a later save stores them once again.
  Stmt c(db, file, "SELECT id, kind, name, dtype, shape, bytes, data FROM snapshot_constants ORDER BY id");
  while (c.step()) {
    MS_ASSIGN_OR_RETURN(StoredConstant row, constant_row(file, c));
    constants[c.i64(0)] = std::move(row);
  }
  MS_RETURN_IF_ERROR(c.status());
  Stmt v(db, file, "SELECT snapshot, value, constant FROM snapshot_values ORDER BY snapshot, value");
  while (v.step()) {
    const int64_t snapshot = v.i64(0), id = v.i64(2);
    const std::string value = v.text(1);
    const std::string where = "snapshot_values (snapshot " + std::to_string(snapshot) + ", value '" + value + "')";
    auto g = graphs.find(snapshot);
    if (g == graphs.end()) return bad_row(file, where, "names a snapshot that is not in the session");
    auto k = constants.find(id);
    if (k == constants.end())
      return bad_row(file, where, "names constant " + std::to_string(id) + ", which is missing");
    ir::Value* target = g->second.value(value);
    if (!target || !target->constant) return bad_row(file, where, "the snapshot has no initializer of that name");
    StoredConstant& s = k->second;
    if (target->constant->dtype() != s.dtype || target->constant->shape() != s.shape)
      return bad_row(file, where,
                     "constant " + std::to_string(id) + " is " + std::string(dtype_name(s.dtype)) +
                         shape_to_string(s.shape) + ", the value " +
                         std::string(dtype_name(target->constant->dtype())) +
                         shape_to_string(target->constant->shape()));
    if (!s.data.defined()) s.data = Tensor::zeros(s.dtype, s.shape);
    target->constant = s.data;
    if (s.kind == "model")
      marks[snapshot].from_model[value] = s.name;
    else if (s.kind == "not_kept")
      marks[snapshot].not_kept.push_back(value);
  }
  return v.status();
}

}  // namespace ms::session::store

namespace ms::session {

int64_t restore_model_constants(std::vector<SessionRun>& runs, const ir::Graph& model) {
  struct Restored {
    std::shared_ptr<const ir::Graph> original, graph;  // the original kept alive: its address is the key
    std::vector<std::string> missing;
  };
  std::map<const ir::Graph*, Restored> done;
  int64_t filled = 0;
  for (SessionRun& r : runs) {
    for (PassOutcome& p : r.outcome.passes) {
      if (p.constants_from_model.empty() || !p.graph) continue;
      auto it = done.find(p.graph.get());
      if (it == done.end()) {
        auto copy = std::make_shared<ir::Graph>(*p.graph);
        Restored out;
        out.original = p.graph;
        for (const auto& [value, name] : p.constants_from_model) {
          const ir::Value* m = model.value(name);
          ir::Value* v = copy->value(value);
          const bool same = m && m->constant && v && v->constant && m->constant->is_tensor() &&
                            m->constant->dtype() == v->constant->dtype() &&
                            m->constant->shape() == v->constant->shape();
          if (same) {
            v->constant = *m->constant;
            ++filled;
          } else {
            out.missing.push_back(value);
          }
        }
        out.graph = std::move(copy);
        it = done.emplace(p.graph.get(), std::move(out)).first;
      }
      p.graph = it->second.graph;
      p.constants_not_kept.insert(p.constants_not_kept.end(), it->second.missing.begin(), it->second.missing.end());
      p.constants_from_model.clear();
    }
  }
  return filled;
}

}  // namespace ms::session
