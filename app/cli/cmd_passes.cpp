// `passes MODEL [--jit-level O0|O1|O2] [--disable PASS]... [--dump DIR]`: compiles MODEL for its input
// signature and reports each pass (changed, ms, nodes before/after, added/removed/rewritten/fused).
// --dump DIR writes, for each pass that changed the graph, DIR/NN_<argument>.txt (stable text dump)
// and .json, plus DIR/passes.json with the reports (each pass's time and work counters, see
// compiler/work.h), the whole compile's work and the memory plan. `passes --list` prints each
// level's pipeline.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/cli/compile_options.h"
#include "app/cli/prepare.h"
#include "app/cli/registry.h"
#include "app/session/figures.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/work.h"
#include "engine/core/atomic_file.h"

namespace ms::cli {
namespace {

int list_pipelines(bool data_parallel) {
  for (auto level : {compiler::JitLevel::O0, compiler::JitLevel::O1, compiler::JitLevel::O2}) {
    std::printf("%s:\n", compiler::jit_level_name(level));
    for (const auto& e : compiler::describe_pipeline(level, compiler::AmpLevel::O0, data_parallel))
      std::printf("  %-22s %-30s %s\n", e.argument.c_str(), e.name.c_str(), e.description.c_str());
  }
  // Mixed precision (train --amp): the amp-cast pass runs first at any JIT level.
  std::printf("with an AMP level (O1, O2, O3), first:\n");
  const auto amp = compiler::describe_pipeline(compiler::JitLevel::O0, compiler::AmpLevel::O2).front();
  std::printf("  %-22s %-30s %s\n", amp.argument.c_str(), amp.name.c_str(), amp.description.c_str());
  return 0;
}

std::string passes_json(const compiler::CompileResult& r, const runtime::MemoryPlan& plan, const std::string& level,
                        double compile_ms, const std::vector<int>& threads, const compiler::WorkCounters& work) {
  std::string s = "{\n  \"jit_level\": \"" + level + "\",\n  \"compile_ms\": " + std::to_string(compile_ms) +
                  ",\n  \"passes_ms\": " + std::to_string(r.passes_ms) + ",\n  \"work\": " + work.to_json() +
                  ",\n  \"passes\": [";
  for (size_t i = 0; i < r.reports.size(); ++i) {
    const auto& p = r.reports[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s\n    {\"index\": %d, \"pass\": \"%s\", \"ran\": %s, \"changed\": %s, \"ms\": %.4f, "
                  "\"nodes_before\": %zu, \"nodes_after\": %zu, \"added\": %zu, \"removed\": %zu, \"rewritten\": %zu, "
                  "\"fused\": %zu, \"work\": ",
                  i ? "," : "", p.index, json_escape(p.pass).c_str(), p.ran ? "true" : "false",
                  p.changed ? "true" : "false", p.ms, p.nodes_before, p.nodes_after, p.added, p.removed, p.rewritten,
                  p.fused);
    s += buf + p.work.to_json() + "}";
  }
  s += "\n  ],\n  \"memory_plan\": {\"arena_bytes\": " + std::to_string(plan.arena_bytes) +
       ", \"naive_bytes\": " + std::to_string(plan.naive_bytes) +
       ", \"lower_bound_bytes\": " + std::to_string(plan.lower_bound) + ", \"values\": [";
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const auto& v = plan.slots[i];
    s += std::string(i ? "," : "") + "\n    {\"value\": \"" + json_escape(v.value) +
         "\", \"producer\": " + std::to_string(v.producer.value) + ", \"offset\": " + std::to_string(v.offset) +
         ", \"bytes\": " + std::to_string(v.bytes) + ", \"first_step\": " + std::to_string(v.first_step) +
         ", \"last_step\": " + std::to_string(v.last_step) + ", \"reuses\": \"" + json_escape(v.reuses) +
         "\", \"thread\": " + std::to_string(v.thread) + ", \"within\": " + std::to_string(v.within) +
         ", \"within_offset\": " + std::to_string(v.within_offset) + ", \"view\": " + (v.view ? "true" : "false") + "}";
  }
  int max_thread = 0;
  for (int t : threads) max_thread = std::max(max_thread, t);
  s += "\n  ]},\n  \"threads_used\": " + std::to_string(max_thread + 1) + "\n}\n";
  return s;
}

Status write_file(const std::filesystem::path& p, const std::string& text) {
  return write_file_atomic(p.string(), text);
}

int passes_command(const RunArgs& a, const std::string& dump, bool list, bool data_parallel) {
  if (list) return list_pipelines(data_parallel);
  if (a.model.empty()) return fail("passes: MODEL is required (or --list)");
  auto opts = compile_options(a.jit_level, a.disabled_passes);
  if (!opts) return fail(opts.status().message());
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  // The pipeline a bf16 Graph run compiles (amp-cast first), as the app's stepper shows it.
  if (Status ps = apply_precision(*opts, a.precision, *prep->backend); !ps) return fail(ps.message());
  std::map<std::string, ir::ValueType> sig;
  for (const auto& [name, t] : prep->inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
  // The whole compile's work (passes, type inference, memory plan), next to each pass's own.
  compiler::WorkCounters work;
  auto ex = [&] {
    compiler::WorkScope scope(work);
    return compiler::compile_executor(prep->graph, *prep->backend, sig, *opts);
  }();
  if (!ex) return fail(a.model + ": " + ex.status().message());
  const auto& r = (*ex)->compile_result();
  const auto& plan = (*ex)->memory_plan();
  const std::string level = a.jit_level + (session::is_low_precision(a.precision) ? " " + a.precision : "");
  std::printf("%s at %s: %zu nodes -> %zu nodes, compile %.1f ms\n", a.model.c_str(), level.c_str(),
              prep->graph.nodes().size(), (*ex)->graph().nodes().size(), (*ex)->compile_ms());
  std::printf("  %-3s %-22s %-8s %9s %6s %6s %6s %6s %6s %6s\n", "#", "pass", "changed", "ms", "before", "after",
              "added", "remov", "rewr", "fused");
  for (const auto& p : r.reports)
    std::printf("  %-3d %-22s %-8s %9.3f %6zu %6zu %6zu %6zu %6zu %6zu\n", p.index, p.pass.c_str(),
                !p.ran      ? "skipped"
                : p.changed ? "yes"
                            : "no",
                p.ms, p.nodes_before, p.nodes_after, p.added, p.removed, p.rewritten, p.fused);
  std::printf(
      "  memory plan: arena %s, naive %s, lower bound %s\n", session::format_bytes(double(plan.arena_bytes)).c_str(),
      session::format_bytes(double(plan.naive_bytes)).c_str(), session::format_bytes(double(plan.lower_bound)).c_str());
  if (dump.empty()) return 0;
  std::error_code ec;
  std::filesystem::create_directories(dump, ec);
  if (ec) return fail(dump + ": " + ec.message());
  const std::filesystem::path dir(dump);
  for (const auto& snap : r.snapshots) {
    if (!snap.changed || !snap.ran || !snap.graph) continue;
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02d_", snap.index + 1);
    const std::string base = prefix + snap.pass;
    Status st = write_file(dir / (base + ".txt"), ir::dump_text(*snap.graph));
    if (st.is_ok()) st = write_file(dir / (base + ".json"), ir::to_json(*snap.graph, false));
    if (!st.is_ok()) return fail(st.message());
  }
  Status st = write_file(dir / "passes.json",
                         passes_json(r, plan, a.jit_level, (*ex)->compile_ms(), (*ex)->step_threads(), work));
  if (!st.is_ok()) return fail(st.message());
  std::printf("  dumped to %s\n", dump.c_str());
  return 0;
}

struct PassesState {
  RunArgs args;
  std::string dump;
  bool list = false;
  bool data_parallel = false;  // --list with the data-parallel passes
};

const RegisterCommand kPasses{
    "passes", "Compile a model and report (and dump) the graph after every pass", 25,
    [](CLI::App& cmd) -> CommandRunner {
      auto st = std::make_shared<PassesState>();
      RunArgs& a = st->args;
      cmd.add_option("MODEL", a.model, "An .onnx file or zoo:NAME?key=value&...");
      cmd.add_option("--device", a.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
      cmd.add_option("--threads", a.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--input", a.inputs, "NAME=FILE.npy (repeatable); others are random with --seed");
      cmd.add_option("--dim", a.dims, "PARAM=N for symbolic input dims (default 1)");
      cmd.add_option("--seed", a.seed, "Seed for random inputs");
      cmd.add_option("--jit-level", a.jit_level, "Pipeline: O0, O1 or O2")->check(CLI::IsMember({"O0", "O1", "O2"}));
      cmd.add_option("--disable", a.disabled_passes, "Leave a pass out (repeatable)");
      add_precision_option(&cmd, a);
      cmd.add_option("--dump", st->dump, "Folder for NN_<pass>.txt/.json and passes.json");
      cmd.add_flag("--list", st->list, "Print each level's pipeline");
      cmd.add_flag("--data-parallel", st->data_parallel,
                   "--list: the pipelines of a data-parallel training step (insert-allreduce, fuse-allreduce)");
      return [st] { return passes_command(st->args, st->dump, st->list, st->data_parallel); };
    }};

}  // namespace
}  // namespace ms::cli
