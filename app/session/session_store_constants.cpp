// The tables schema 6 added: the constant data of the pass snapshots (the snapshots' JSON carries
// none), so a reopened session's snapshots hold the weights a pass made (folded constants, folded
// batch norms, attention masks, bf16 copies) as the live session did. Each distinct buffer is stored
// once however many snapshots share it; an embedded model's initializers are referred to by name
// (the model is in the file); the other constants' bytes are kept up to a budget, past which a
// constant is marked not kept. Older files get the tables empty through the migration. Schema 7
// adds the constants nested in a snapshot (its subgraphs' initializers, its tensor attributes such
// as a Constant's value), named by path (NestedConstant) and stored the same way.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>

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

const char* const kSchemaV7 = R"sql(
CREATE TABLE snapshot_nested_values(snapshot INTEGER, path TEXT, constant INTEGER, PRIMARY KEY(snapshot, path));
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

Expected<int64_t> SnapshotConstantWriter::constant_id(const Tensor& t, bool known, bool nested) {
  const Key key{t.buffer().get(), t.byte_offset(), t.dtype(), t.shape()};
  if (auto it = ids_.find(key); it != ids_.end() && !(nested && it->second.second)) return it->second.first;
  if (auto it = nested_ids_.find(key); nested && it != nested_ids_.end()) return it->second;
  const auto id = static_cast<int64_t>(ids_.size() + nested_ids_.size());
  const uint64_t bytes = t.nbytes();
  Stmt st(db_, file_, "INSERT INTO snapshot_constants VALUES(?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, id).bind(4, dtype_name(t.dtype())).bind(5, shape_text(t.shape())).bind(6, static_cast<int64_t>(bytes));
  bool by_name = false;
  if (auto m = model_.find(key); m != model_.end() && !nested) {
    by_name = true;
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
  if (ids_.count(key))  // a model buffer, nested: its own row
    nested_ids_.emplace(key, id);
  else
    ids_.emplace(key, std::make_pair(id, by_name));
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
  MS_RETURN_IF_ERROR(st.status());
  return write_nested(snapshot, p);
}

Status SnapshotConstantWriter::write_nested(int64_t snapshot, const PassOutcome& p) {
  const std::vector<std::string>& not_kept = p.nested_constants_not_kept;
  std::set<std::string> written;  // a path twice (node ids repeated in one graph) names the first
  Stmt st(db_, file_, "INSERT INTO snapshot_nested_values VALUES(?, ?, ?)");
  for (const NestedConstant& c : nested_constants(*p.graph)) {
    if (!storable(*c.tensor) || !written.insert(c.path).second) continue;
    const bool known = std::find(not_kept.begin(), not_kept.end(), c.path) == not_kept.end();
    MS_ASSIGN_OR_RETURN(const int64_t id, constant_id(*c.tensor, known, true));
    st.bind(1, snapshot).bind(2, c.path).bind(3, id).run();
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

// A constant nested in a snapshot: where it is (the graph holding it, and the node and attribute or
// the initializer's name) and its tensor. The graphs walked are the reader's own (set_slot), or read
// only.
struct NestedSlot {
  std::string path;
  ir::Graph* graph = nullptr;
  ir::Node* node = nullptr;
  std::string attr, value;
  const Tensor* tensor = nullptr;
};

std::string escape_attr_name(const std::string& name) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '%' || ch == '.' || ch == '/' || ch == ':' || ch == '#')
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    else
      out += ch;
  }
  return out;
}

void walk_nested(const ir::Graph& g, const std::string& scope, bool top, std::vector<NestedSlot>& out) {
  auto* graph = const_cast<ir::Graph*>(&g);  // see NestedSlot
  if (!top)
    for (const std::string& name : g.initializer_names())
      out.push_back({scope + ":" + name, graph, nullptr, {}, name, &*g.value(name)->constant});
  for (ir::Node& n : graph->nodes())
    for (const auto& [key, a] : n.attrs) {
      const std::string at = std::to_string(n.id.value) + "." + escape_attr_name(key);
      if (const auto* t = a.get_if<Tensor>()) {
        out.push_back({scope + "#" + at, graph, &n, key, {}, t});
      } else if (const auto* sub = a.get_if<ir::Attribute::GraphPtr>(); sub && *sub) {
        walk_nested(**sub, scope + at + "/", false, out);
      } else if (const auto* subs = a.get_if<std::vector<ir::Attribute::GraphPtr>>()) {
        for (size_t i = 0; i < subs->size(); ++i)
          if ((*subs)[i]) walk_nested(*(*subs)[i], scope + at + "." + std::to_string(i) + "/", false, out);
      }
    }
}

std::vector<NestedSlot> nested_slots(const ir::Graph& g) {
  std::vector<NestedSlot> out;
  walk_nested(g, "", true, out);
  return out;
}

void set_slot(NestedSlot& s, const Tensor& t) {
  if (s.node)
    s.node->attrs[s.attr] = ir::Attribute(t);
  else
    s.graph->value(s.value)->constant = t;
}

}  // namespace

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

// The data a value of the snapshots gets from stored constant `id` (where: the row naming it): its
// bytes, or for a constant without any one zero tensor shared by every snapshot that names it, as
// the live ones shared their buffer (a later save stores it once again).
Expected<Tensor> stored_data(const std::string& file, const std::string& where,
                             std::map<int64_t, StoredConstant>& constants, int64_t id, const Tensor& target) {
  auto k = constants.find(id);
  if (k == constants.end()) return bad_row(file, where, "names constant " + std::to_string(id) + ", which is missing");
  StoredConstant& s = k->second;
  if (target.dtype() != s.dtype || target.shape() != s.shape)
    return bad_row(file, where,
                   "constant " + std::to_string(id) + " is " + std::string(dtype_name(s.dtype)) +
                       shape_to_string(s.shape) + ", the value " + std::string(dtype_name(target.dtype())) +
                       shape_to_string(target.shape()));
  if (!s.data.defined()) s.data = Tensor::zeros(s.dtype, s.shape);
  return s.data;
}

// A row of snapshot_values or snapshot_nested_values (snapshot, key, constant) and the snapshot it
// names (where: how errors name the row).
struct ValueRow {
  int64_t snapshot = -1, id = -1;
  std::string key, where;
  ir::Graph* graph = nullptr;
};

Expected<ValueRow> value_row(const std::string& file, const Stmt& st, const char* table, const char* key,
                             std::map<int64_t, ir::Graph>& graphs) {
  ValueRow r;
  r.snapshot = st.i64(0), r.id = st.i64(2), r.key = st.text(1);
  r.where = std::string(table) + " (snapshot " + std::to_string(r.snapshot) + ", " + key + " '" + r.key + "')";
  auto g = graphs.find(r.snapshot);
  if (g == graphs.end()) return bad_row(file, r.where, "names a snapshot that is not in the session");
  r.graph = &g->second;
  return r;
}

// Schema 7's rows: the constants nested in the snapshots. A subgraph initializer without a row has
// no data (the JSON carries none): not kept.
Status read_nested(sqlite3* db, const std::string& file, std::map<int64_t, ir::Graph>& graphs,
                   std::map<int64_t, SnapshotMarks>& marks, std::map<int64_t, StoredConstant>& constants) {
  std::set<std::pair<int64_t, std::string>> read;
  std::map<int64_t, std::map<std::string, NestedSlot>> slots;  // per snapshot, found when first named
  Stmt v(db, file, "SELECT snapshot, path, constant FROM snapshot_nested_values ORDER BY snapshot, path");
  while (v.step()) {
    MS_ASSIGN_OR_RETURN(const ValueRow r, value_row(file, v, "snapshot_nested_values", "path", graphs));
    auto& known = slots[r.snapshot];
    if (known.empty())
      for (NestedSlot& slot : nested_slots(*r.graph)) known.emplace(slot.path, slot);
    auto slot = known.find(r.key);
    if (slot == known.end()) return bad_row(file, r.where, "the snapshot has no constant at that path");
    MS_ASSIGN_OR_RETURN(Tensor data, stored_data(file, r.where, constants, r.id, *slot->second.tensor));
    if (constants[r.id].kind == "model") return bad_row(file, r.where, "a nested constant cannot be the model's");
    set_slot(slot->second, data);
    if (constants[r.id].kind == "not_kept") marks[r.snapshot].nested_not_kept.push_back(r.key);
    read.emplace(r.snapshot, r.key);
  }
  MS_RETURN_IF_ERROR(v.status());
  for (auto& [id, g] : graphs)
    for (const NestedConstant& c : nested_constants(g))
      if (c.initializer && storable(*c.tensor) && !read.count({id, c.path}))
        marks[id].nested_not_kept.push_back(c.path);
  return Status::ok();
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
  std::map<int64_t, StoredConstant> constants;
  if (!budget.recorded) {  // before schema 6: no constant data; left to the model by name
    for (auto& [id, g] : graphs)
      for (const std::string& name : g.initializer_names()) marks[id].from_model[name] = name;
    return read_nested(db, file, graphs, marks, constants);
  }
  Stmt c(db, file, "SELECT id, kind, name, dtype, shape, bytes, data FROM snapshot_constants ORDER BY id");
  while (c.step()) {
    MS_ASSIGN_OR_RETURN(StoredConstant row, constant_row(file, c));
    constants[c.i64(0)] = std::move(row);
  }
  MS_RETURN_IF_ERROR(c.status());
  Stmt v(db, file, "SELECT snapshot, value, constant FROM snapshot_values ORDER BY snapshot, value");
  while (v.step()) {
    MS_ASSIGN_OR_RETURN(const ValueRow r, value_row(file, v, "snapshot_values", "value", graphs));
    ir::Value* target = r.graph->value(r.key);
    if (!target || !target->constant) return bad_row(file, r.where, "the snapshot has no initializer of that name");
    MS_ASSIGN_OR_RETURN(target->constant, stored_data(file, r.where, constants, r.id, *target->constant));
    const StoredConstant& s = constants[r.id];
    if (s.kind == "model")
      marks[r.snapshot].from_model[r.key] = s.name;
    else if (s.kind == "not_kept")
      marks[r.snapshot].not_kept.push_back(r.key);
  }
  MS_RETURN_IF_ERROR(v.status());
  return read_nested(db, file, graphs, marks, constants);
}

}  // namespace ms::session::store

namespace ms::session {

std::vector<NestedConstant> nested_constants(const ir::Graph& g) {
  std::vector<NestedConstant> out;
  for (const store::NestedSlot& s : store::nested_slots(g)) out.push_back({s.path, s.tensor, s.node == nullptr});
  return out;
}

const Tensor* find_nested_constant(const ir::Graph& g, std::string_view path) {
  for (const store::NestedSlot& s : store::nested_slots(g))
    if (s.path == path) return s.tensor;
  return nullptr;
}

std::vector<Tensor> not_kept_tensors(const PassOutcome& p) {
  std::vector<Tensor> out;
  if (!p.graph) return out;
  for (const std::string& name : p.constants_not_kept)
    if (const ir::Value* v = p.graph->value(name); v && v->constant) out.push_back(*v->constant);
  // Left to a model that was not there to fill them in (restore_model_constants): zeros as well.
  for (const auto& [name, from] : p.constants_from_model)
    if (const ir::Value* v = p.graph->value(name); v && v->constant) out.push_back(*v->constant);
  if (p.nested_constants_not_kept.empty()) return out;
  const std::set<std::string> nested(p.nested_constants_not_kept.begin(), p.nested_constants_not_kept.end());
  for (const store::NestedSlot& s : store::nested_slots(*p.graph))
    if (nested.count(s.path)) out.push_back(*s.tensor);
  return out;
}

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
