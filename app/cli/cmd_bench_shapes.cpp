// `bench-shapes`: a model with a symbolic dim (a dynamic sequence or batch axis) swept over sizes in
// one process, PyNative against Graph mode with one compile per shape bucket (compiler/buckets.h).
//   bench-shapes MODEL --sweep seq=1:512[:STEP] [--iters 3] [--exact] [--capacity 16] [--report F]
// Per size: one untimed run in each mode (Graph: compiling the bucket when it is new), then --iters
// runs of each mode interleaved, the median of each. Per bucket: the sizes it served, its compile
// time, the medians over its sizes and the worst Graph/PyNative ratio at any size. With --exact
// Graph mode compiles once per exact shape instead, for comparison. --dump DIR writes each compiled
// bucket's graph (DIR/bucket_N.txt, in compile order).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "app/cli/compile_options.h"
#include "app/cli/fallbacks.h"
#include "app/cli/prepare.h"
#include "app/cli/registry.h"
#include "app/session/figures.h"
#include "app/session/model_inputs.h"
#include "engine/compiler/buckets.h"
#include "engine/core/atomic_file.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/mode_diff.h"

namespace ms::cli {
namespace {

struct ShapeBenchState {
  RunArgs run;
  std::string sweep;  // NAME=LO:HI[:STEP]
  bool exact = false;
  int capacity = 16;
  std::string dump;  // folder for each compiled bucket's graph
};

struct Sweep {
  std::string dim;
  int64_t lo = 1, hi = 1, step = 1;
};

Expected<Sweep> parse_sweep(const std::string& text) {
  Sweep s;
  const auto eq = text.find('=');
  const std::string bad = "--sweep '" + text + "': expected NAME=LO:HI or NAME=LO:HI:STEP with 1 <= LO <= HI";
  if (eq == std::string::npos || eq == 0) return invalid_argument(bad);
  s.dim = text.substr(0, eq);
  int64_t v[3] = {0, 0, 1};
  int n = 0;
  size_t at = eq + 1;
  while (n < 3 && at <= text.size()) {
    const auto colon = text.find(':', at);
    const std::string part = text.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
    auto parsed = session::parse_dim_value("--sweep", part);
    if (!parsed) return invalid_argument(bad);
    v[n++] = *parsed;
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  if (n < 2 || v[0] > v[1]) return invalid_argument(bad);
  s.lo = v[0];
  s.hi = v[1];
  s.step = v[2];
  return s;
}

using Clock = std::chrono::steady_clock;

template <class F> Expected<double> timed_ms(F&& run) {
  const auto t0 = Clock::now();
  auto out = run();
  if (!out) return std::move(out).take_status();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct SizeFigures {
  int64_t size = 0;
  std::string bucket;
  double pynative_ms = 0, graph_ms = 0, compile_ms = 0;
  double max_rel = 0;  // largest relative difference of the two modes' outputs
  size_t steps = 0;    // kernel steps of the compiled graph
};

// One size: an untimed run in each mode, then `iters` interleaved timed runs of each.
Expected<SizeFigures> measure_size(const ir::Graph& g, runtime::EagerExecutor& eager, compiler::BucketedExecutor& graph,
                                   const runtime::TensorMap& inputs, int iters) {
  SizeFigures f;
  const double before = graph.stats().compile_ms;
  MS_ASSIGN_OR_RETURN(compiler::CompiledExecutor * ex, graph.executor_for(inputs));
  f.compile_ms = graph.stats().compile_ms - before;
  f.bucket = graph.last_bucket();
  f.steps = ex->num_steps();
  auto run_eager = [&] { return eager.run(inputs); };
  auto run_graph = [&] { return ex->run(inputs); };
  // The untimed runs: the two modes' outputs compared.
  MS_ASSIGN_OR_RETURN(auto ref, eager.run(inputs));
  MS_ASSIGN_OR_RETURN(auto got, ex->run(inputs));
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    if (!ref[i].is_tensor() || !is_float(ref[i].dtype()) || ref[i].numel() != got[i].numel()) continue;
    const auto d = runtime::diff_tensors(got[i], ref[i]);
    f.max_rel = std::max(f.max_rel, d.nonfinite_mismatches ? 1.0 : d.max_rel);
  }
  std::vector<double> pn, gr;
  for (int i = 0; i < iters; ++i) {
    MS_ASSIGN_OR_RETURN(double a, timed_ms(run_eager));
    MS_ASSIGN_OR_RETURN(double b, timed_ms(run_graph));
    pn.push_back(a);
    gr.push_back(b);
  }
  (void)g;
  f.pynative_ms = session::summarize(pn).median;
  f.graph_ms = session::summarize(gr).median;
  return f;
}

double median_of(std::vector<double> v) { return session::summarize(std::move(v)).median; }

struct BucketRow {
  std::string bucket;
  int64_t first = 0, last = 0, sizes = 0;
  double compile_ms = 0, worst_ratio = 0, max_rel = 0;
  int64_t worst_at = 0;
  size_t steps = 0;
  std::vector<double> pn, gr;
};

std::vector<BucketRow> by_bucket(const std::vector<SizeFigures>& all) {
  std::vector<BucketRow> rows;
  for (const auto& f : all) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const BucketRow& r) { return r.bucket == f.bucket; });
    if (it == rows.end()) {
      rows.push_back(BucketRow{f.bucket, f.size, f.size, 0, 0, 0, 0, 0, 0, {}, {}});
      it = rows.end() - 1;
    }
    it->last = f.size;
    it->steps = f.steps;
    ++it->sizes;
    it->compile_ms += f.compile_ms;
    it->max_rel = std::max(it->max_rel, f.max_rel);
    it->pn.push_back(f.pynative_ms);
    it->gr.push_back(f.graph_ms);
    const double ratio = f.pynative_ms > 0 ? f.graph_ms / f.pynative_ms : 0;
    if (ratio > it->worst_ratio) {
      it->worst_ratio = ratio;
      it->worst_at = f.size;
    }
  }
  return rows;
}

std::string report_json(const ShapeBenchState& st, const Prepared& prep, const Sweep& sw,
                        const std::vector<SizeFigures>& all, const std::vector<BucketRow>& rows,
                        const compiler::BucketedExecutor& graph) {
  const auto& s = graph.stats();
  nlohmann::json j = {{"model", st.run.model},
                      {"dim", sw.dim},
                      {"exact", st.exact},
                      {"jit_level", st.run.jit_level},
                      {"threads", prep.backend->threads()},
                      {"iters", st.run.iters},
                      {"compiles", s.compiles},
                      {"cache_hits", s.cache_hits},
                      {"evictions", s.evictions},
                      {"cache_capacity", graph.capacity()},
                      {"compile_ms", s.compile_ms}};
  nlohmann::json buckets = nlohmann::json::array(), sizes = nlohmann::json::array();
  for (const auto& r : rows)
    buckets.push_back({{"bucket", r.bucket},
                       {"first", r.first},
                       {"last", r.last},
                       {"compile_ms", r.compile_ms},
                       {"pynative_ms", median_of(r.pn)},
                       {"graph_ms", median_of(r.gr)},
                       {"worst_ratio", r.worst_ratio},
                       {"worst_at", r.worst_at},
                       {"max_rel_diff", r.max_rel},
                       {"steps", r.steps}});
  for (const auto& f : all)
    sizes.push_back({{"size", f.size},
                     {"pynative_ms", f.pynative_ms},
                     {"graph_ms", f.graph_ms},
                     {"compile_ms", f.compile_ms},
                     {"max_rel_diff", f.max_rel}});
  j["buckets"] = std::move(buckets);
  j["sizes"] = std::move(sizes);
  j["environment"] = environment_json(prep.backend.get());
  return j.dump(1) + "\n";
}

void print_rows(const std::vector<BucketRow>& rows, const compiler::BucketedExecutor& graph) {
  std::printf("  %-22s %11s %6s %11s %12s %10s %7s %16s %10s\n", "bucket", "sizes", "steps", "compile ms",
              "PyNative ms", "Graph ms", "G/P", "worst G/P (at)", "max diff");
  double worst = 0;
  for (const auto& r : rows) {
    const double pn = median_of(r.pn), gr = median_of(r.gr);
    char sizes[32], worst_cell[32];
    std::snprintf(sizes, sizeof sizes, "%lld-%lld", static_cast<long long>(r.first), static_cast<long long>(r.last));
    std::snprintf(worst_cell, sizeof worst_cell, "%.2f (%lld)", r.worst_ratio, static_cast<long long>(r.worst_at));
    std::printf("  %-22s %11s %6zu %11.1f %12.3f %10.3f %7.2f %16s %10.1e\n", r.bucket.c_str(), sizes, r.steps,
                r.compile_ms, pn, gr, pn > 0 ? gr / pn : 0.0, worst_cell, r.max_rel);
    worst = std::max(worst, r.worst_ratio);
  }
  const auto& s = graph.stats();
  std::printf(
      "compiles %lld, cache hits %lld, evictions %lld (capacity %zu), compile %.1f ms in all; worst "
      "Graph/PyNative at any size %.2f\n",
      static_cast<long long>(s.compiles), static_cast<long long>(s.cache_hits), static_cast<long long>(s.evictions),
      graph.capacity(), s.compile_ms, worst);
}

Status dump_bucket(const std::string& dir, const compiler::BucketedExecutor& graph, int64_t index) {
  const compiler::CompiledExecutor* ex = graph.most_recent();
  if (!ex) return Status::ok();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::error(ErrorCode::Io, "--dump: cannot create '" + dir + "': " + ec.message());
  const std::string path = (std::filesystem::path(dir) / ("bucket_" + std::to_string(index) + ".txt")).string();
  return write_file_atomic(path, "# " + graph.last_bucket() + "\n" + ir::dump_text(ex->graph()));
}

int bench_shapes_command(const ShapeBenchState& st) {
  auto sw = parse_sweep(st.sweep);
  if (!sw) return fail(sw.status().message());
  RunArgs first = st.run;
  first.dims.push_back(sw->dim + "=" + std::to_string(sw->lo));
  auto prep = prepare(first);
  if (!prep) return fail(prep.status().message());
  if (!prep->note.empty()) std::fprintf(stderr, "note: %s\n", prep->note.c_str());
  const auto sym = compiler::symbolic_dims(prep->graph);
  bool found = false;
  for (const auto& [input, dims] : sym) found = found || std::count(dims.begin(), dims.end(), sw->dim) > 0;
  if (!found) return fail(st.run.model + ": no input has a symbolic dim named '" + sw->dim + "'");
  auto opts = compile_options(st.run.jit_level, st.run.disabled_passes);
  if (!opts) return fail(opts.status().message());
  opts->keep_snapshots = false;
  runtime::EagerExecutor eager(prep->graph, *prep->backend);
  compiler::BucketedExecutor graph(prep->graph, *prep->backend, *opts, static_cast<size_t>(st.capacity), st.exact);
  std::printf("%s: %s from %lld to %lld, PyNative against Graph %s (%s), %d threads, median of %d\n",
              st.run.model.c_str(), sw->dim.c_str(), static_cast<long long>(sw->lo), static_cast<long long>(sw->hi),
              st.run.jit_level.c_str(), st.exact ? "one compile per exact shape" : "one compile per shape bucket",
              prep->backend->threads(), st.run.iters);
  std::vector<SizeFigures> all;
  for (int64_t n = sw->lo; n <= sw->hi; n += sw->step) {
    auto inputs = session::make_inputs(prep->graph, {}, {{sw->dim, n}}, st.run.seed);
    if (!inputs) return fail(st.run.model + ": " + inputs.status().message());
    const int64_t compiles = graph.stats().compiles;
    auto f = measure_size(prep->graph, eager, graph, *inputs, st.run.iters);
    if (!f) return fail(st.run.model + " at " + sw->dim + "=" + std::to_string(n) + ": " + f.status().message());
    if (!st.dump.empty() && graph.stats().compiles > compiles)
      if (Status ds = dump_bucket(st.dump, graph, graph.stats().compiles); !ds) return fail(ds.message());
    f->size = n;
    all.push_back(*f);
  }
  const auto rows = by_bucket(all);
  print_rows(rows, graph);
  if (!st.run.report.empty())
    if (Status ws = write_file_atomic(st.run.report, report_json(st, *prep, *sw, all, rows, graph)); !ws)
      return fail(ws.message());
  return 0;
}

const RegisterCommand kBenchShapes{
    "bench-shapes", "A symbolic dim swept over sizes: PyNative against Graph mode compiled per shape bucket", 93,
    [](CLI::App& cmd) -> CommandRunner {
      auto st = std::make_shared<ShapeBenchState>();
      st->run.iters = 3;
      add_run_options(&cmd, st->run, false);
      cmd.add_option("--sweep", st->sweep, "NAME=LO:HI[:STEP]: the symbolic dim and the sizes it takes")->required();
      cmd.add_flag("--exact", st->exact, "Compile once per exact shape instead of once per bucket");
      cmd.add_option("--capacity", st->capacity, "Compiled buckets kept (least recently used dropped)")
          ->check(CLI::PositiveNumber);
      cmd.add_option("--report", st->run.report, "Write a JSON report");
      cmd.add_option("--dump", st->dump, "Folder for each compiled bucket's graph (bucket_N.txt)");
      return [st] { return bench_shapes_command(*st); };
    }};

}  // namespace
}  // namespace ms::cli
