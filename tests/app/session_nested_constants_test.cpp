// Sessions keep the constants nested in their pass snapshots (schema 7): an If branch's initializer
// and a Constant's value (at the top and inside a branch) come back with the live values, each
// distinct buffer stored once however many snapshots hold it, past the budget they are marked not
// kept (and stay so when saved again), a schema-6 file opens with its branches' initializers marked
// not kept and its Constants' values as its JSON had them, and a damaged row is one line.
#include <gtest/gtest.h>

#include <algorithm>

#include "app/session/session_file.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

ir::ValueType nested_f32() {
  ir::ValueType t;
  t.dtype = DType::F32;
  t.dims = std::vector<int64_t>{3};
  t.dim_params = {""};
  return t;
}

std::string nested_op(ir::Graph& g, const std::string& op, const std::string& out, std::vector<std::string> in,
                      std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.op_type = op;
  n.name = out;
  n.inputs = std::move(in);
  n.outputs = {out};
  n.attrs = std::move(attrs);
  const ir::Node& added = g.add_node(std::move(n));
  g.add_value({out, nested_f32(), added.id, {}});
  return out;
}

Tensor f32_values(std::vector<float> v) { return Tensor::from_vector<float>(std::move(v), {3}); }

// y = x + If(cond, then: w + Constant c1, else: Identity(v)) + a + Constant c0.
std::shared_ptr<ir::Graph> nested_graph() {
  auto g = std::make_shared<ir::Graph>();
  g->name = "nested";
  ir::ValueType cond;
  cond.dtype = DType::Bool;
  cond.dims = std::vector<int64_t>{};
  g->add_value({"cond", cond, {}, {}});
  g->add_value({"x", nested_f32(), {}, {}});
  g->inputs = {"cond", "x"};
  g->add_initializer("a", f32_values({1, 2, 3}));
  nested_op(*g, "Constant", "c0", {}, {{"value", ir::Attribute(f32_values({4, 5, 6}))}});
  auto then_g = std::make_shared<ir::Graph>(g->ids());
  then_g->name = "then";
  then_g->add_initializer("w", f32_values({7, 8, 9}));
  nested_op(*then_g, "Constant", "c1", {}, {{"value", ir::Attribute(f32_values({10, 11, 12}))}});
  then_g->outputs = {nested_op(*then_g, "Add", "t", {"w", "c1"})};
  auto else_g = std::make_shared<ir::Graph>(g->ids());
  else_g->name = "else";
  else_g->add_initializer("v", f32_values({13, 14, 15}));
  else_g->outputs = {nested_op(*else_g, "Identity", "e", {"v"})};
  nested_op(*g, "If", "branch", {"cond"},
            {{"then_branch", ir::Attribute(ir::Attribute::GraphPtr(then_g))},
             {"else_branch", ir::Attribute(ir::Attribute::GraphPtr(else_g))}});
  nested_op(*g, "Add", "y1", {"x", "branch"});
  nested_op(*g, "Add", "y2", {"y1", "a"});
  g->outputs = {nested_op(*g, "Add", "y", {"y2", "c0"})};
  return g;
}

std::vector<float> nested_values(const Tensor& t) { return test::f32_values_of(t); }

// The path of `g`'s nested constant whose path ends with `tail` (":w", "#<id>.value" of node `node`).
std::string path_of(const ir::Graph& g, const std::string& tail) {
  for (const NestedConstant& c : nested_constants(g))
    if (c.path.size() >= tail.size() && c.path.compare(c.path.size() - tail.size(), tail.size(), tail) == 0)
      return c.path;
  return {};
}

uint64_t nested_node_id(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes()) {
    if (n.name == name) return n.id.value;
    for (const auto& sub : n.subgraphs())
      if (const uint64_t id = nested_node_id(*sub, name)) return id;
  }
  return 0;
}

// The path of the value of Constant node `name`.
std::string value_path(const ir::Graph& g, const std::string& name) {
  return path_of(g, "#" + std::to_string(nested_node_id(g, name)) + ".value");
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Three snapshots: the input, a copy sharing every buffer, and one whose branch initializer w is new.
SessionData nested_session() {
  auto input = nested_graph();
  auto same = std::make_shared<ir::Graph>(input->deep_copy());
  auto changed = std::make_shared<ir::Graph>(input->deep_copy());
  for (ir::Node& n : changed->nodes())
    if (n.op_type == "If") n.attr_graph("then_branch")->value("w")->constant = f32_values({70, 80, 90});
  SessionRun run;
  run.label = "graph";
  run.request.mode = run.outcome.mode = "graph";
  const char* names[] = {"input", "copy", "rewrite"};
  std::shared_ptr<ir::Graph> graphs[] = {input, same, changed};
  for (int i = 0; i < 3; ++i) {
    PassOutcome p;
    p.pass = names[i];
    p.graph = graphs[i];
    run.outcome.passes.push_back(p);
  }
  SessionData d;
  d.model.kind = "spec";
  d.model.source = "generated:nested";
  d.runs.push_back(run);
  return d;
}

int64_t nested_count(const std::string& path, const std::string& sql) { return test::query_count(path, sql); }

TEST(SessionConstants, ASubgraphsConstantsComeBackAsLive) {
  test::TempDir dir("session_nested");
  const std::string path = dir.file("nested.modescope");
  const SessionData live = nested_session();
  const ir::Graph& live_input = *live.runs[0].outcome.passes[0].graph;
  const std::string w = path_of(live_input, ":w"), v = path_of(live_input, ":v");
  const std::string c0 = value_path(live_input, "c0"), c1 = value_path(live_input, "c1");
  ASSERT_FALSE(w.empty());
  ASSERT_FALSE(c0.empty());
  ASSERT_FALSE(c1.empty());
  EXPECT_EQ(c0.find('/'), std::string::npos) << c0;  // at the top
  EXPECT_NE(c1.find("then_branch/"), std::string::npos) << c1;
  ASSERT_TRUE(save_session(path, live).is_ok());

  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->constants.not_kept, 0);
  const auto& passes = back->runs[0].outcome.passes;
  ASSERT_EQ(passes.size(), 3u);
  for (size_t i = 0; i < passes.size(); ++i) {
    const ir::Graph& want = *live.runs[0].outcome.passes[i].graph;
    EXPECT_TRUE(passes[i].nested_constants_not_kept.empty()) << "pass " << i;
    const std::vector<NestedConstant> nested = nested_constants(want);
    EXPECT_EQ(nested.size(), 4u);  // c0's value, v, w, c1's value
    for (const NestedConstant& c : nested) {
      const Tensor* got = find_nested_constant(*passes[i].graph, c.path);
      ASSERT_TRUE(got) << "pass " << i << " " << c.path;
      EXPECT_EQ(got->dtype(), c.tensor->dtype());
      EXPECT_EQ(nested_values(*got), nested_values(*c.tensor)) << "pass " << i << " " << c.path;
    }
  }
  EXPECT_EQ(nested_values(*find_nested_constant(*passes[0].graph, w)), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(nested_values(*find_nested_constant(*passes[2].graph, w)), (std::vector<float>{70, 80, 90}));
  EXPECT_EQ(nested_values(*find_nested_constant(*passes[1].graph, c1)), (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(nested_values(*find_nested_constant(*passes[1].graph, c0)), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(nested_values(*find_nested_constant(*passes[0].graph, v)), (std::vector<float>{13, 14, 15}));

  // The JSON carries no tensor data; each buffer is stored once: w of the first two snapshots is one
  // row, the rewritten w another; read back, the shared one is one tensor.
  EXPECT_EQ(nested_count(path, "SELECT COUNT(*) FROM snapshots WHERE json LIKE '%\"data\"%'"), 0);
  EXPECT_EQ(nested_count(path, "SELECT COUNT(*) FROM snapshot_nested_values WHERE path = '" + w + "'"), 3);
  EXPECT_EQ(nested_count(path, "SELECT COUNT(DISTINCT constant) FROM snapshot_nested_values WHERE path = '" + w + "'"),
            2);
  EXPECT_EQ(nested_count(path, "SELECT COUNT(DISTINCT constant) FROM snapshot_nested_values WHERE path = '" + c1 + "'"),
            1);
  EXPECT_EQ(nested_count(path, "SELECT COUNT(*) FROM snapshot_constants"), 6);  // a, w, w', c0, c1, v
  EXPECT_EQ(find_nested_constant(*passes[0].graph, c1)->buffer(), find_nested_constant(*passes[1].graph, c1)->buffer());
}

TEST(SessionConstants, ASubgraphsConstantsPastTheBudgetAreMarkedNotKept) {
  test::TempDir dir("session_nested_cap");
  const std::string path = dir.file("capped.modescope");
  ASSERT_TRUE(save_session(path, nested_session(), 0).is_ok());
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->constants.kept, 0);
  EXPECT_EQ(back->constants.not_kept, 6);
  const PassOutcome& p = back->runs[0].outcome.passes[0];
  const std::string w = path_of(*p.graph, ":w"), c1 = value_path(*p.graph, "c1");
  const std::vector<std::string>& lost = p.nested_constants_not_kept;
  EXPECT_EQ(lost.size(), 4u);
  EXPECT_NE(std::find(lost.begin(), lost.end(), w), lost.end());
  EXPECT_NE(std::find(lost.begin(), lost.end(), c1), lost.end());
  EXPECT_EQ(nested_values(*find_nested_constant(*p.graph, w)), (std::vector<float>{0, 0, 0}));
  // What the app marks in the inspector: the zeros read back for each, the top's `a` included.
  const std::vector<Tensor> marked = not_kept_tensors(p);
  EXPECT_EQ(marked.size(), 5u);
  const Tensor* zeros_w = find_nested_constant(*p.graph, w);
  EXPECT_TRUE(
      std::any_of(marked.begin(), marked.end(), [&](const Tensor& t) { return t.buffer() == zeros_w->buffer(); }));

  // Saved again with room to spare: still not kept (their zeros are not data).
  const std::string again = dir.file("again.modescope");
  ASSERT_TRUE(save_session(again, *back).is_ok());
  EXPECT_EQ(nested_count(again, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'data'"), 0);
  EXPECT_EQ(nested_count(again, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'not_kept'"), 6);
}

// Rewrites table `table`'s digest as the saving code computes it (FNV-1a over typed values).
void refresh_nested_digest(sqlite3* db, const std::string& table) {
  std::string bytes;
  auto put = [&bytes](const void* p, size_t n) { bytes.append(static_cast<const char*>(p), n); };
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, ("SELECT * FROM " + table + " ORDER BY rowid").c_str(), -1, &st, nullptr),
            SQLITE_OK);
  int64_t rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ++rows;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const int type = sqlite3_column_type(st, c);
      put(&type, sizeof type);
      if (type == SQLITE_INTEGER) {
        const int64_t v = sqlite3_column_int64(st, c);
        put(&v, sizeof v);
      } else if (type != SQLITE_NULL) {
        ASSERT_NE(type, SQLITE_FLOAT);
        const void* p = sqlite3_column_blob(st, c);
        const int n = sqlite3_column_bytes(st, c);
        put(&n, sizeof n);
        if (p) put(p, static_cast<size_t>(n));
      }
    }
  }
  sqlite3_finalize(st);
  const std::string sql = "UPDATE digests SET rows = " + std::to_string(rows) + ", hash = '" + content_hash(bytes) +
                          "' WHERE tbl = '" + table + "'";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
}

// What schema 6 wrote: no nested rows, and snapshots whose JSON had the Constants' values (tensor
// attributes) but not the subgraphs' initializers.
void make_schema_six(const std::string& path, const SessionData& live) {
  test::exec_sql(path, MS_DROP_SCHEMA_7_SQL "PRAGMA user_version = 6;");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE snapshots SET json = ? WHERE id = ?", -1, &st, nullptr), SQLITE_OK);
  const auto& passes = live.runs[0].outcome.passes;
  for (size_t i = 0; i < passes.size(); ++i) {  // one snapshot per pass, numbered in order
    const std::string json = ir::to_json(*passes[i].graph, false);
    sqlite3_bind_text(st, 1, json.c_str(), static_cast<int>(json.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, static_cast<int64_t>(i));
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  refresh_nested_digest(db, "snapshots");
  sqlite3_close(db);
  test::exec_sql(path, "PRAGMA journal_mode = DELETE; VACUUM;");
}

TEST(SessionConstants, ASchemaSixFileOpensWithItsBranchesInitializersNotKept) {
  test::TempDir dir("session_nested_v6");
  const std::string path = dir.file("old.modescope");
  const SessionData live = nested_session();
  ASSERT_TRUE(save_session(path, live).is_ok());
  make_schema_six(path, live);
  const std::string bytes = test::read_bytes(path);
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  EXPECT_EQ(reader->schema_version(), 6);
  auto old = reader->load();
  ASSERT_TRUE(old.has_value()) << old.status().message();
  const PassOutcome& p = old->runs[0].outcome.passes[0];
  const std::string w = path_of(*p.graph, ":w"), v = path_of(*p.graph, ":v");
  EXPECT_EQ(sorted(p.nested_constants_not_kept), sorted({w, v}));
  EXPECT_TRUE(p.constants_not_kept.empty());  // a: schema 6 kept it
  EXPECT_EQ(nested_values(*p.graph->value("a")->constant), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(nested_values(*find_nested_constant(*p.graph, w)), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(nested_values(*find_nested_constant(*p.graph, value_path(*p.graph, "c1"))),
            (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(test::read_bytes(path), bytes);  // opening wrote nothing

  // Saved as schema 7: the Constants' values as data, the branches' initializers not kept.
  const std::string again = dir.file("new.modescope");
  ASSERT_TRUE(save_session(again, *old).is_ok());
  auto reopened = SessionReader::open(again);
  ASSERT_TRUE(reopened.has_value()) << reopened.status().message();
  EXPECT_EQ(reopened->schema_version(), kSessionSchemaVersion);
  auto newer = reopened->load();
  ASSERT_TRUE(newer.has_value()) << newer.status().message();
  EXPECT_EQ(sorted(newer->runs[0].outcome.passes[0].nested_constants_not_kept), sorted({w, v}));
  EXPECT_EQ(nested_values(*find_nested_constant(*newer->runs[0].outcome.passes[0].graph, value_path(*p.graph, "c0"))),
            (std::vector<float>{4, 5, 6}));
}

TEST(SessionConstants, ADamagedNestedRowFailsWithOneLine) {
  const std::string first = " WHERE rowid = (SELECT MIN(rowid) FROM snapshot_nested_values)";
  const std::string table = "snapshot_nested_values (snapshot ";
  const SessionData d = nested_session();
  test::expect_damaged_row(d, "UPDATE snapshot_nested_values SET path = '99.body/:w'" + first, table,
                           "no constant at that path");
  test::expect_damaged_row(d, "UPDATE snapshot_nested_values SET constant = 99" + first, table, "constant 99");
  test::expect_damaged_row(d, "UPDATE snapshot_nested_values SET snapshot = 1000" + first, table, "not in the session");
  // A constant only the nested rows name, of another shape than the value at its path.
  test::expect_damaged_row(d,
                           "UPDATE snapshot_constants SET shape = '4', bytes = 16, data = zeroblob(16) WHERE id NOT "
                           "IN (SELECT constant FROM snapshot_values)",
                           table, "f32[4]");
}

}  // namespace
}  // namespace ms::session
