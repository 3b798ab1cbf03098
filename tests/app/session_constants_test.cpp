// Sessions keep their pass snapshots' constants (schema 6): a constant a pass folded comes back with
// the live session's values, is stored once however many snapshots share it, an embedded model's
// initializers are filled in from the model opened again, constants past the budget are marked not
// kept, a schema-5 file's snapshots take the model's weights by name, and damaged rows fail with one
// line naming the table.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "app/session/session_file.h"
#include "tests/app/session_test_util.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::session {
namespace {

// `c` is computed from initializers only: constant folding makes it a new initializer.
ir::Graph folding_graph() {
  return testing::parse_graph(R"(
    input x: f32[2,3]
    init a: f32[3] = 1 2 3
    init b: f32[3] = 10
    c = Add(a, b)
    y = Add(x, c)
    output y
  )");
}

SessionData folded_session(const std::string& model_kind) {
  static const SessionRun run = test::small_run(folding_graph(), "graph");
  SessionData d;
  d.model.kind = model_kind;
  d.model.source = "folding.onnx";
  d.model.bytes = "model bytes";
  d.runs.push_back(run);
  return d;
}

const Tensor* constant_of(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.value(name);
  return v && v->constant ? &*v->constant : nullptr;
}

std::vector<float> values(const Tensor& t) { return test::f32_values_of(t); }

// Every snapshot that holds the folded constant `c`, from the live run: at least two (the pass that
// folds it and the ones after), all sharing one buffer.
std::vector<size_t> passes_with_c(const SessionData& d) {
  std::vector<size_t> out;
  const auto& passes = d.runs[0].outcome.passes;
  for (size_t i = 0; i < passes.size(); ++i)
    if (passes[i].graph && constant_of(*passes[i].graph, "c")) out.push_back(i);
  return out;
}

int64_t count(const std::string& path, const std::string& sql) { return test::query_count(path, sql); }

TEST(SessionConstants, AFoldedConstantComesBackAsLiveAndIsStoredOnce) {
  test::TempDir dir("session_constants");
  const std::string path = dir.file("folded.modescope");
  const SessionData live = folded_session("spec");
  const std::vector<size_t> with_c = passes_with_c(live);
  ASSERT_GE(with_c.size(), 2u) << "constant folding made no constant 'c' shared by later snapshots";
  const auto& live_passes = live.runs[0].outcome.passes;
  ASSERT_TRUE(save_session(path, live).is_ok());

  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_TRUE(back->constants.recorded);
  EXPECT_EQ(back->constants.not_kept, 0);
  EXPECT_EQ(back->constants.from_model, 0);  // a spec model: its initializers are stored too
  const auto& passes = back->runs[0].outcome.passes;
  ASSERT_EQ(passes.size(), live_passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    if (!live_passes[i].graph) continue;
    EXPECT_TRUE(passes[i].constants_not_kept.empty());
    for (const std::string& name : live_passes[i].graph->initializer_names()) {
      const Tensor* want = constant_of(*live_passes[i].graph, name);
      const Tensor* got = constant_of(*passes[i].graph, name);
      ASSERT_TRUE(got) << "pass " << i << " " << name;
      EXPECT_EQ(got->dtype(), want->dtype());
      EXPECT_EQ(got->shape(), want->shape());
      EXPECT_EQ(values(*got), values(*want)) << "pass " << i << " " << name;
    }
  }
  EXPECT_EQ(values(*constant_of(*passes[with_c[0]].graph, "c")), (std::vector<float>{11, 12, 13}));

  // One stored copy of c (and of a and b), however many snapshots name it; read back as one tensor.
  EXPECT_EQ(count(path, "SELECT COUNT(DISTINCT constant) FROM snapshot_values WHERE value = 'c'"), 1);
  EXPECT_GE(count(path, "SELECT COUNT(*) FROM snapshot_values WHERE value = 'c'"), 2);
  std::set<const Buffer*> live_buffers;
  for (const auto& p : live_passes)
    if (p.graph)
      for (const std::string& name : p.graph->initializer_names())
        live_buffers.insert(constant_of(*p.graph, name)->buffer().get());
  EXPECT_EQ(count(path, "SELECT COUNT(*) FROM snapshot_constants"), static_cast<int64_t>(live_buffers.size()));
  EXPECT_EQ(constant_of(*passes[with_c.front()].graph, "c")->buffer(),
            constant_of(*passes[with_c.back()].graph, "c")->buffer());
}

TEST(SessionConstants, AnEmbeddedModelsInitializersComeFromTheModel) {
  test::TempDir dir("session_constants_model");
  const std::string path = dir.file("embedded.modescope");
  const SessionData live = folded_session("embedded");
  ASSERT_TRUE(save_session(path, live).is_ok());
  EXPECT_EQ(count(path, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'model' AND data IS NULL"), 2);
  EXPECT_EQ(count(path, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'data'"), 1);  // c

  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->constants.from_model, 2);
  const PassOutcome& input = back->runs[0].outcome.passes[0];
  EXPECT_EQ(input.constants_from_model, (std::map<std::string, std::string>{{"a", "a"}, {"b", "b"}}));

  // The model opened again provides a and b: every snapshot then holds the live values.
  std::vector<SessionRun> runs = back->runs;
  EXPECT_GE(restore_model_constants(runs, folding_graph()), 2);  // a and b, in each snapshot that holds them
  const auto& live_passes = live.runs[0].outcome.passes;
  for (size_t i = 0; i < runs[0].outcome.passes.size(); ++i) {
    const PassOutcome& p = runs[0].outcome.passes[i];
    if (!p.graph) continue;
    EXPECT_TRUE(p.constants_from_model.empty());
    EXPECT_TRUE(p.constants_not_kept.empty());
    for (const std::string& name : p.graph->initializer_names()) {
      EXPECT_EQ(values(*constant_of(*p.graph, name)), values(*constant_of(*live_passes[i].graph, name)))
          << "pass " << i << " " << name;
    }
  }

  // A model without `b` (another file at the path): b is not kept rather than wrong.
  ir::Graph other = folding_graph();
  other.erase_value("b");
  std::vector<SessionRun> partial = back->runs;
  EXPECT_GE(restore_model_constants(partial, other), 1);
  EXPECT_EQ(partial[0].outcome.passes[0].constants_not_kept, std::vector<std::string>{"b"});
}

TEST(SessionConstants, ConstantsPastTheBudgetAreMarkedNotKept) {
  test::TempDir dir("session_constants_cap");
  const std::string path = dir.file("capped.modescope");
  const SessionData live = folded_session("embedded");
  const std::vector<size_t> with_c = passes_with_c(live);
  ASSERT_FALSE(with_c.empty());
  ASSERT_TRUE(save_session(path, live, 0).is_ok());
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->constants.budget, 0u);
  EXPECT_EQ(back->constants.kept, 0);
  EXPECT_EQ(back->constants.not_kept, 1);
  EXPECT_EQ(back->constants.not_kept_bytes, 12u);
  for (size_t i : with_c) {
    EXPECT_EQ(back->runs[0].outcome.passes[i].constants_not_kept, std::vector<std::string>{"c"}) << "pass " << i;
  }
  EXPECT_EQ(count(path, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'not_kept' AND data IS NULL"), 1);

  // Saved again from what was read, with room to spare: c stays not kept (its zeros are not data).
  const std::string again = dir.file("again.modescope");
  ASSERT_TRUE(save_session(again, *back).is_ok());
  EXPECT_EQ(count(again, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'not_kept'"), 1);
  EXPECT_EQ(count(again, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'model'"), 2);
  EXPECT_EQ(count(again, "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'data'"), 0);

  // A budget of exactly c's 12 bytes keeps it.
  ASSERT_TRUE(save_session(path, live, 12).is_ok());
  auto kept = load_session(path);
  ASSERT_TRUE(kept.has_value()) << kept.status().message();
  EXPECT_EQ(kept->constants.kept, 1);
  EXPECT_EQ(kept->constants.not_kept, 0);
  EXPECT_EQ(values(*constant_of(*kept->runs[0].outcome.passes[with_c[0]].graph, "c")),
            (std::vector<float>{11, 12, 13}));
}

TEST(SessionConstants, ASchemaFiveFilesSnapshotsTakeTheModelsWeightsByName) {
  test::TempDir dir("session_constants_v5");
  const std::string path = dir.file("old.modescope");
  const SessionData live = folded_session("embedded");
  ASSERT_TRUE(save_session(path, live).is_ok());
  test::exec_sql(path, MS_DROP_SCHEMA_6_SQL "PRAGMA user_version = 5; PRAGMA journal_mode = DELETE; VACUUM;");
  const std::string bytes = test::read_bytes(path);
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  EXPECT_EQ(reader->schema_version(), 5);
  auto old = reader->load();
  ASSERT_TRUE(old.has_value()) << old.status().message();
  EXPECT_FALSE(old->constants.recorded);
  // No constant data: each snapshot's initializers are left to the model under their own names, and
  // until a model fills them in they count as not kept (their data is zeros, as schema 5 read them).
  for (const PassOutcome& p : old->runs[0].outcome.passes) {
    if (!p.graph) continue;
    std::map<std::string, std::string> by_name;
    for (const std::string& name : p.graph->initializer_names()) by_name[name] = name;
    EXPECT_TRUE(p.constants_not_kept.empty());
    EXPECT_EQ(p.constants_from_model, by_name);
    EXPECT_EQ(not_kept_tensors(p).size(), by_name.size());
  }
  const std::vector<size_t> with_c = passes_with_c(*old);
  ASSERT_FALSE(with_c.empty());
  EXPECT_EQ(values(*constant_of(*old->runs[0].outcome.passes[with_c[0]].graph, "c")), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(test::read_bytes(path), bytes);  // opening wrote nothing
  // Saved before a model filled them in: none of their zeros is stored as data.
  ASSERT_TRUE(save_session(dir.file("new.modescope"), *old).is_ok());
  EXPECT_EQ(count(dir.file("new.modescope"), "SELECT COUNT(*) FROM snapshot_constants WHERE kind = 'data'"), 0);

  // The model opened again supplies a and b by name, with the live values, in every snapshot; c, which
  // constant folding made, is not the model's: it stays not kept.
  std::vector<SessionRun> runs = old->runs;
  EXPECT_GE(restore_model_constants(runs, folding_graph()), 2);
  const auto& live_passes = live.runs[0].outcome.passes;
  int filled = 0;
  for (size_t i = 0; i < runs[0].outcome.passes.size(); ++i) {
    const PassOutcome& p = runs[0].outcome.passes[i];
    if (!p.graph) continue;
    EXPECT_TRUE(p.constants_from_model.empty());
    std::vector<std::string> lost;
    for (const std::string& name : p.graph->initializer_names()) {
      if (name != "a" && name != "b") {
        lost.push_back(name);
        continue;
      }
      EXPECT_EQ(values(*constant_of(*p.graph, name)), values(*constant_of(*live_passes[i].graph, name)))
          << "pass " << i << " " << name;
      ++filled;
    }
    EXPECT_EQ(p.constants_not_kept, lost) << "pass " << i;
    EXPECT_EQ(not_kept_tensors(p).size(), lost.size()) << "pass " << i;
  }
  EXPECT_GE(filled, 2);
  EXPECT_EQ(runs[0].outcome.passes[with_c[0]].constants_not_kept, std::vector<std::string>{"c"});

  // A model whose `b` has another shape: b is not kept rather than wrong.
  ir::Graph other = folding_graph();
  other.value("b")->constant = Tensor::from_vector<float>({10, 10}, {2});
  std::vector<SessionRun> partial = old->runs;
  restore_model_constants(partial, other);
  const PassOutcome& input = partial[0].outcome.passes[0];
  ASSERT_TRUE(input.graph);
  EXPECT_EQ(input.constants_not_kept, std::vector<std::string>{"b"});
  EXPECT_EQ(values(*constant_of(*input.graph, "a")), (std::vector<float>{1, 2, 3}));
}

void expect_row_error(const std::string& sql, const std::string& table, const std::string& what) {
  test::expect_damaged_row(folded_session("spec"), sql, table, what);
}

TEST(SessionConstants, DamagedRowsFailWithOneLineNamingTheTable) {
  expect_row_error("UPDATE snapshot_constants SET data = x'0000'", "snapshot_constants row", "data has 2 bytes");
  expect_row_error("UPDATE snapshot_constants SET dtype = 'f99'", "snapshot_constants row", "dtype 'f99'");
  expect_row_error("UPDATE snapshot_constants SET shape = '3,x'", "snapshot_constants row", "shape '3,x'");
  expect_row_error("UPDATE snapshot_constants SET kind = 'elsewhere'", "snapshot_constants row", "kind");
  expect_row_error("UPDATE snapshot_constants SET shape = '4', bytes = 16, data = zeroblob(16)", "snapshot_values",
                   "f32[4]");
  expect_row_error("UPDATE snapshot_values SET constant = 99", "snapshot_values", "constant 99");
  const std::string first = " WHERE rowid = (SELECT MIN(rowid) FROM snapshot_values)";
  expect_row_error("UPDATE snapshot_values SET value = 'gone'" + first, "snapshot_values", "no initializer");
  expect_row_error("UPDATE snapshot_values SET snapshot = 1000" + first, "snapshot_values", "not in the session");
}

}  // namespace
}  // namespace ms::session
