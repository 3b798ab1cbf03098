// Numerics commands: `inspect MODEL` (capture intermediate values in one mode, with statistics, the
// NaN/inf trap and .npy export), `diff MODEL` (every Graph value against the PyNative value it
// stands for) and `bisect MODEL` (the first pass, and rewrite, that takes the outputs past a
// tolerance). The work is app/session/numerics.h's; these print and write reports.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/cli/compile_options.h"
#include "app/cli/prepare.h"
#include "app/cli/registry.h"
#include "app/session/figures.h"
#include "app/session/numerics.h"
#include "engine/compiler/compile.h"
#include "engine/core/atomic_file.h"
#include "engine/frontend/npy.h"

namespace ms::cli {
namespace {

using nlohmann::json;

json stats_json(const runtime::ValueStats& s) {
  json j{{"count", s.count}, {"finite", s.finite}, {"nan", s.nan}, {"posinf", s.posinf}, {"neginf", s.neginf}};
  if (s.finite) {
    j["min"] = s.min;
    j["max"] = s.max;
    j["mean"] = s.mean;
    j["std"] = s.std;
    j["histogram"] = s.histogram;
  }
  return j;
}

json value_json(const runtime::CapturedValue& v) {
  return json{{"value", v.name},
              {"node", v.node},
              {"node_id", v.producer.value},
              {"op", v.op},
              {"output", v.output},
              {"order", v.order},
              {"dtype", dtype_name(v.dtype)},
              {"shape", v.shape},
              {"kept", v.value.defined()},
              {"reordered_from_blocked", v.reordered},
              {"stats", stats_json(v.stats)}};
}

Status write_json(const std::string& path, const json& j) { return write_file_atomic(path, j.dump(2) + '\n'); }

std::string npy_name(const std::string& value) {
  std::string s = value;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  return s + ".npy";
}

// .npy has no bfloat16 nor the narrow types: those are written as float32.
Status save_value(const runtime::CapturedValue& v, const std::string& dir) {
  Tensor t = v.value;
  if (t.dtype() == DType::BF16 || is_narrow(t.dtype())) {
    const std::vector<double> d = runtime::to_doubles(t);
    Tensor f = Tensor::empty(DType::F32, t.shape());
    for (size_t i = 0; i < d.size(); ++i) f.data<float>()[i] = static_cast<float>(d[i]);
    t = std::move(f);
  }
  return save_npy(t, (std::filesystem::path(dir) / npy_name(v.name)).string());
}

// The model, inputs and backend of `run`, and its Graph-mode compile options; a note about the
// backend printed.
struct Setup {
  Prepared prep;
  compiler::CompileOptions compile;
};
Expected<Setup> setup(const RunArgs& run, const std::string& amp) {
  auto prep = prepare(run);
  if (!prep) return std::move(prep).take_status();
  if (!prep->note.empty()) std::fprintf(stderr, "note: %s\n", prep->note.c_str());
  auto jit = compile_options(run.jit_level, run.disabled_passes);
  if (!jit) return std::move(jit).take_status();
  auto level = compiler::parse_amp_level(amp);
  if (!level) return std::move(level).take_status();
  jit->amp = *level;
  return Setup{std::move(*prep), std::move(*jit)};
}

void add_amp_option(CLI::App& cmd, std::string& amp) {
  cmd.add_option("--amp", amp, "Graph mode's mixed precision: O0 (f32), O1..O3 (bf16 on the amp lists)")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}));
}

struct InspectArgs {
  RunArgs run;
  std::string amp = "O0";
  std::vector<std::string> values;
  std::string pattern, save_npy, json;
  double budget_mb = 0;
  bool stats_only = false, trap = false;
};

int inspect_command(const InspectArgs& a) {
  auto prep = setup(a.run, a.amp);
  if (!prep) return fail(prep.status().message());
  session::CaptureRequest req;
  req.mode = a.run.mode == "graph" ? runtime::ExecMode::Graph : runtime::ExecMode::PyNative;
  req.compile = prep->compile;
  req.warmup = req.mode == runtime::ExecMode::Graph ? 1 : 0;
  req.capture.all = a.values.empty() && a.pattern.empty();
  req.capture.names = a.values;
  req.capture.pattern = a.pattern;
  req.capture.budget_bytes = static_cast<size_t>(a.budget_mb * 1024 * 1024);
  req.capture.keep_values = !a.stats_only;
  req.capture.trap_nonfinite = a.trap;
  auto r = session::capture_values(prep->prep.graph, prep->prep.inputs, *prep->prep.backend, req);
  if (!r) return fail(a.run.model + ": " + r.status().message());
  for (const auto& name : a.values) {
    const bool found = std::any_of(r->values.begin(), r->values.end(),
                                   [&](const auto& v) { return v.name == name || v.node == name; });
    if (!found && !r->trap) return fail(a.run.model + ": no value or node named '" + name + "' ran in " + a.run.mode);
  }

  std::printf("%s, %s mode: %zu values captured (%s kept", a.run.model.c_str(), a.run.mode.c_str(), r->values.size(),
              session::format_bytes(static_cast<double>(r->kept_bytes)).c_str());
  if (r->over_budget) std::printf(", %zu past the budget: statistics only", r->over_budget);
  std::printf(")\n\n%-5s %-28s %-44s %-18s %s\n", "#", "value", "made by", "type", "statistics");
  for (const auto& v : r->values) {
    std::printf("%-5zu %-28s %-44s %-18s %s\n", v.order, v.name.c_str(), v.node.c_str(),
                (std::string(dtype_name(v.dtype)) + shape_to_string(v.shape)).c_str(), v.stats.to_string().c_str());
  }
  if (!a.save_npy.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.save_npy, ec);
    if (ec) return fail(a.save_npy + ": " + ec.message());
    size_t saved = 0;
    for (const auto& v : r->values) {
      if (!v.value.defined()) continue;
      if (Status st = save_value(v, a.save_npy); !st.is_ok()) return fail(st.message());
      ++saved;
    }
    std::printf("\n%zu values written to %s\n", saved, a.save_npy.c_str());
  }
  if (!a.json.empty()) {
    json j{{"model", a.run.model},          {"mode", a.run.mode},  {"kept_bytes", r->kept_bytes},
           {"over_budget", r->over_budget}, {"run_ms", r->run_ms}, {"values", json::array()}};
    for (const auto& v : r->values) j["values"].push_back(value_json(v));
    if (r->trap) {
      json inputs = json::array();
      for (const auto& [name, s] : r->trap->inputs) inputs.push_back({{"value", name}, {"stats", stats_json(s)}});
      j["trap"] = {{"value", r->trap->value},
                   {"node", r->trap->node},
                   {"node_id", r->trap->producer.value},
                   {"op", r->trap->op},
                   {"stats", stats_json(r->trap->stats)},
                   {"inputs", inputs},
                   {"message", r->trap->message()}};
    }
    if (Status st = write_json(a.json, j); !st.is_ok()) return fail(st.message());
  }
  if (r->trap) {
    std::fprintf(stderr, "error: %s: %s mode: %s\n", a.run.model.c_str(), a.run.mode.c_str(),
                 r->trap->message().c_str());
    return 3;
  }
  if (a.trap) std::printf("\nno NaN or infinity in any value\n");
  return 0;
}

struct DiffArgs {
  RunArgs run;
  std::string amp = "O0";
  double tol = 1e-4, budget_mb = 0;
  int top = 10;
  std::string json;
};

int diff_command(const DiffArgs& a) {
  auto prep = setup(a.run, a.amp);
  if (!prep) return fail(prep.status().message());
  session::DiffRequest req;
  req.compile = prep->compile;
  req.tol = a.tol;
  req.budget_bytes = static_cast<size_t>(a.budget_mb * 1024 * 1024);
  auto r = session::diff_modes(prep->prep.graph, prep->prep.inputs, *prep->prep.backend, req);
  if (!r) return fail(a.run.model + ": " + r.status().message());
  const runtime::ModeDiff& d = r->diff;
  std::printf("%s, Graph mode at %s against PyNative: %s\n", a.run.model.c_str(), a.run.jit_level.c_str(),
              d.summary().c_str());
  std::printf("aligned and compared in %.1f ms after the runs\n\n", r->diff_ms);
  std::vector<size_t> order;
  for (size_t i = 0; i < d.values.size(); ++i)
    if (d.values[i].compared) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return d.values[x].max_rel > d.values[y].max_rel; });
  if (order.size() > static_cast<size_t>(a.top)) order.resize(static_cast<size_t>(a.top));
  std::printf("%-5s %-24s %-44s %-44s %-10s %-10s %s\n", "#", "Graph value", "Graph node", "PyNative node", "max abs",
              "max rel", "match");
  for (size_t i : order) {
    const auto& v = d.values[i];
    std::printf("%-5zu %-24s %-44s %-44s %-10.3g %-10.3g %s%s\n", v.order, v.value.c_str(), v.node.c_str(),
                v.ref_node.c_str(), v.max_abs, v.max_rel, v.match.c_str(),
                static_cast<int>(i) == d.first_divergence ? "  <- first past the tolerance" : "");
  }
  size_t not_compared = 0;
  for (const auto& v : d.values) not_compared += v.compared ? 0 : 1;
  if (not_compared)
    std::printf("\n%zu Graph values not compared (no counterpart or not kept; see --json)\n", not_compared);
  if (!a.json.empty()) {
    json j{{"model", a.run.model},
           {"jit_level", a.run.jit_level},
           {"tol", d.tol},
           {"compared", d.compared},
           {"diverged", d.diverged},
           {"max_rel", d.max_rel},
           {"first_divergence", d.first_divergence},
           {"diff_ms", r->diff_ms},
           {"pynative_run_ms", r->pynative.run_ms},
           {"graph_run_ms", r->graph.run_ms},
           {"values", json::array()}};
    for (const auto& v : d.values)
      j["values"].push_back({{"value", v.value},
                             {"node", v.node},
                             {"node_id", v.node_id.value},
                             {"op", v.op},
                             {"ref_value", v.ref_value},
                             {"ref_node", v.ref_node},
                             {"ref_node_id", v.ref_node_id.value},
                             {"match", v.match},
                             {"note", v.note},
                             {"compared", v.compared},
                             {"max_abs", v.max_abs},
                             {"max_rel", v.max_rel},
                             {"nonfinite_mismatches", v.nonfinite_mismatches},
                             {"diverged", v.diverged},
                             {"order", v.order}});
    if (Status st = write_json(a.json, j); !st.is_ok()) return fail(st.message());
  }
  return 0;
}

struct BisectArgs {
  RunArgs run;
  std::string amp = "O0";
  double tol = 1e-4;
  bool no_rewrites = false;
  std::string json;
};

int bisect_command(const BisectArgs& a) {
  auto prep = setup(a.run, a.amp);
  if (!prep) return fail(prep.status().message());
  session::BisectRequest req;
  req.compile = prep->compile;
  req.tol = a.tol;
  req.rewrites = !a.no_rewrites;
  auto r = session::bisect_passes(prep->prep.graph, prep->prep.inputs, *prep->prep.backend, req);
  if (!r) return fail(a.run.model + ": " + r.status().message());
  std::printf("%s, Graph mode at %s: %s\n", a.run.model.c_str(), a.run.jit_level.c_str(), r->summary().c_str());
  for (const auto& p : r->probes) {
    const std::string cut = p.passes < 0 ? "all passes"
                                         : std::to_string(p.passes) + " pass" + (p.passes == 1 ? "" : "es") +
                                               (p.rewrites >= 0 ? ", last after " + std::to_string(p.rewrites) +
                                                                      " rewrite" + (p.rewrites == 1 ? "" : "s")
                                                                : "");
    std::printf("  %-40s error %-11.3g %s\n", cut.c_str(), p.error, p.within ? "within" : "past the tolerance");
  }
  if (!r->nodes.empty() && r->after) {
    std::printf("nodes of the guilty rewrite:");
    for (const auto& id : r->nodes)
      if (const ir::Node* n = r->after->find_node(id)) std::printf(" %s (%s)", n->label().c_str(), n->op_type.c_str());
    std::printf("\n");
  }
  if (!a.json.empty()) {
    json probes = json::array();
    for (const auto& p : r->probes)
      probes.push_back({{"passes", p.passes},
                        {"rewrites", p.rewrites},
                        {"error", std::isfinite(p.error) ? json(p.error) : json("inf")},
                        {"within", p.within}});
    json nodes = json::array();
    for (const auto& id : r->nodes) nodes.push_back(id.value);
    json j{{"model", a.run.model},
           {"jit_level", a.run.jit_level},
           {"tol", r->tol},
           {"clean", r->clean},
           {"at_start", r->at_start},
           {"pass_index", r->pass_index},
           {"pass", r->pass},
           {"pass_rewrites", r->pass_rewrites},
           {"rewrite", r->rewrite},
           {"nodes", nodes},
           {"runs", r->probes.size()},
           {"passes", r->pass_names},
           {"probes", probes},
           {"summary", r->summary()}};
    if (Status st = write_json(a.json, j); !st.is_ok()) return fail(st.message());
  }
  return 0;
}

struct BenchArgs {
  RunArgs run;
  std::string amp = "O0";
  int rounds = 7;
  std::string json;
};

// Graph mode on one compiled executor, rounds alternating: no tap, a tap that keeps nothing (the
// cost of the hook itself), every value captured. Then the mode diff's alignment time.
int bench_numerics_command(const BenchArgs& a) {
  auto prep = setup(a.run, a.amp);
  if (!prep) return fail(prep.status().message());
  runtime::Backend& be = *prep->prep.backend;
  std::map<std::string, ir::ValueType> sig;
  for (const auto& [name, t] : prep->prep.inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
  auto exe = compiler::compile_executor(prep->prep.graph, be, sig, prep->compile);
  if (!exe) return fail(a.run.model + ": " + exe.status().message());
  runtime::CaptureOptions nothing;
  nothing.all = false;
  runtime::ValueCapture idle(nothing), all;
  std::vector<double> plain, hooked, captured;
  size_t kept = 0, values = 0;
  auto time_run = [&](runtime::ValueTap* tap) -> Expected<double> {
    runtime::RunOptions ro;
    ro.tap = tap;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = (*exe)->run(prep->prep.inputs, ro);
    if (!r) return std::move(r).take_status();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < 2; ++i)
    if (auto w = time_run(nullptr); !w) return fail(w.status().message());  // warm-up: kernel scratch learned
  for (int r = 0; r < a.rounds; ++r) {
    auto p = time_run(nullptr);
    auto h = time_run(&idle);
    all.clear();
    auto c = time_run(&all);
    if (!p || !h || !c) return fail(a.run.model + ": a run failed");
    plain.push_back(*p);
    hooked.push_back(*h);
    captured.push_back(*c);
    kept = all.kept_bytes();
    values = all.values().size();
  }
  const auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double mp = med(plain), mh = med(hooked), mc = med(captured);
  std::printf("%s, Graph mode at %s, %d rounds (medians)\n", a.run.model.c_str(), a.run.jit_level.c_str(), a.rounds);
  std::printf("  no tap                 %9.3f ms\n", mp);
  std::printf("  tap keeping nothing    %9.3f ms  (%.3fx)\n", mh, mh / mp);
  std::printf("  every value captured   %9.3f ms  (%.2fx): %zu values, %s kept\n", mc, mc / mp, values,
              session::format_bytes(static_cast<double>(kept)).c_str());
  session::DiffRequest dreq;
  dreq.compile = prep->compile;
  auto d = session::diff_modes(prep->prep.graph, prep->prep.inputs, be, dreq);
  if (!d) return fail(a.run.model + ": " + d.status().message());
  std::printf("  mode diff              %9.1f ms after the runs: %s\n", d->diff_ms, d->diff.summary().c_str());
  if (!a.json.empty()) {
    json j{{"model", a.run.model},
           {"jit_level", a.run.jit_level},
           {"rounds", a.rounds},
           {"plain_ms", mp},
           {"tap_idle_ms", mh},
           {"capture_ms", mc},
           {"capture_ratio", mc / mp},
           {"idle_ratio", mh / mp},
           {"values", values},
           {"kept_bytes", kept},
           {"diff_ms", d->diff_ms},
           {"diff_compared", d->diff.compared},
           {"diff_values", d->diff.values.size()},
           {"diff_max_rel", d->diff.max_rel}};
    if (Status st = write_json(a.json, j); !st.is_ok()) return fail(st.message());
  }
  return 0;
}

const RegisterCommand kInspect{
    "inspect", "Capture intermediate values in one mode: statistics, .npy export, the NaN/inf trap", 40,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<InspectArgs>();
      add_amp_option(cmd, a->amp);
      add_run_options(&cmd, a->run, true);
      a->run.iters = 1;
      a->run.warmup = 0;
      cmd.add_option("--value", a->values, "A value or node name to keep (repeatable; default: every value)");
      cmd.add_option("--pattern", a->pattern, "Keep the values whose value or node name matches this regex");
      cmd.add_option("--budget-mb", a->budget_mb, "Copies kept at most (MiB); beyond, statistics only")
          ->check(CLI::NonNegativeNumber);
      cmd.add_flag("--stats-only", a->stats_only, "Keep statistics, not the values");
      cmd.add_flag("--trap-nonfinite", a->trap,
                   "Stop at the first NaN or infinity and name the node that made it (exit 3)");
      cmd.add_option("--save-npy", a->save_npy, "Folder for <value>.npy of every kept value");
      cmd.add_option("--json", a->json, "Write the values' statistics (and the trap) as JSON");
      return [a] { return inspect_command(*a); };
    }};

const RegisterCommand kDiff{
    "diff", "Every Graph-mode value against the PyNative value it stands for (through node origins)", 41,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<DiffArgs>();
      add_amp_option(cmd, a->amp);
      add_run_options(&cmd, a->run, false);
      cmd.add_option("--tol", a->tol, "Relative tolerance (error over the value's largest magnitude)")
          ->check(CLI::NonNegativeNumber);
      cmd.add_option("--budget-mb", a->budget_mb, "Copies kept per mode at most (MiB)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--top", a->top, "Rows printed (largest errors first)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--json", a->json, "Write every value's comparison as JSON");
      return [a] { return diff_command(*a); };
    }};

const RegisterCommand kBenchNumerics{
    "bench-numerics", "What capturing values costs in Graph mode, and how long the mode diff takes", 43,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<BenchArgs>();
      add_amp_option(cmd, a->amp);
      add_run_options(&cmd, a->run, false);
      cmd.add_option("--rounds", a->rounds, "Rounds of the three runs")->check(CLI::PositiveNumber);
      cmd.add_option("--json", a->json, "Write the figures as JSON");
      return [a] { return bench_numerics_command(*a); };
    }};

const RegisterCommand kBisect{
    "bisect", "Find the first pass, and its first rewrite, that takes Graph-mode outputs past a tolerance", 42,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<BisectArgs>();
      add_amp_option(cmd, a->amp);
      add_run_options(&cmd, a->run, false);
      cmd.add_option("--tol", a->tol, "Largest relative output error against PyNative")->check(CLI::NonNegativeNumber);
      cmd.add_flag("--no-rewrites", a->no_rewrites, "Stop at the pass; do not bisect over its rewrites");
      cmd.add_option("--json", a->json, "Write the bisection (every run) as JSON");
      return [a] { return bisect_command(*a); };
    }};

}  // namespace
}  // namespace ms::cli
