// `train MODEL [--mode pynative|graph] [--optimizer sgd|adam|adamw] [--lr X] [--steps N] [--batch N]
//  [--data digits|synthetic] [--report FILE.json] [--profile DIR] ...`: trains a zoo template (adapted
// to the data: zoo:mnist_mlp --data digits is a 64-input, 10-class MLP), printing the loss every few
// steps, then step time, compile time, peak memory and the test accuracy.
//
// `compare MODEL --train`: the same training run in PyNative and in Graph mode, side by side. The
// compare subcommand is defined by main.cpp; its --train options are added here (to the sibling
// subcommand, through the parent app) and compare_command hands over to compare_train_command.
#include "app/cli/cmd_train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/cli/fallbacks.h"
#include "app/cli/registry.h"
#include "app/cli/session_out.h"
#include "app/cli/train_parallel.h"
#include "app/session/figures.h"
#include "app/session/rank_curves.h"
#include "app/session/run_loop.h"
#include "app/session/train_profile.h"
#include "engine/compiler/pipeline.h"
#include "engine/core/atomic_file.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/train/run.h"
#include "engine/ir/graph.h"
#include "profiler/io/chrome_trace.h"

namespace ms::cli {
namespace {

using nn::train::RunOptions;
using TrainResult = nn::train::RunResult;

bool* g_compare_train = nullptr;  // compare --train
struct TrainArgs;
TrainArgs* g_compare_args = nullptr;

struct TrainArgs {
  RunOptions run;
  std::string mode = "pynative";
  std::string device = "cpu";
  int threads = 0;
  std::string jit_level = "O1";
  std::string amp = "O0";
  std::string loss_scale = "none";
  std::string report;
  std::string profile;
  std::string session;  // write the training (curves, the last step's trace) as a session file
  int log_every = 0;
  bool strict_device = false;                // a fallback is an error
  std::vector<runtime::Fallback> fallbacks;  // what did not run as asked (the report's list)
  ParallelArgs parallel;                     // data parallel across ranks (train_parallel.h)
};

Status apply_context(const std::string& device, int threads, nn::Mode mode) {
  nn::Context ctx;
  ctx.mode = mode;
  ctx.device = device;
  ctx.threads = threads;
  nn::set_context(ctx);
  return Status::ok();
}

nlohmann::json steps_json(const nn::train::StepSummary& s) {
  return {{"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"mean", s.mean}, {"min", s.min}};
}

nlohmann::json result_json(const TrainArgs& a, const TrainResult& r, const std::string& mode) {
  nlohmann::json j{{"model", r.model},
                   {"mode", mode},
                   {"device", a.device},
                   {"backend", nn::backend().description()},
                   {"jit_level", a.jit_level},
                   {"amp", a.amp},
                   {"data", r.data},
                   {"train_examples", r.train_examples},
                   {"test_examples", r.test_examples},
                   {"parameters", r.parameters},
                   {"optimizer", a.run.optimizer},
                   {"lr", r.lr},
                   {"schedule", a.run.schedule},
                   {"batch", a.run.batch},
                   {"steps", a.run.steps},
                   {"seed", a.run.seed},
                   {"losses", r.losses},
                   {"step_ms", steps_json(r.steady)},
                   {"first_step_ms", r.step_ms.empty() ? 0.0 : r.step_ms.front()},  // compile not included
                   {"step_ms_all", r.step_ms},
                   {"compile_ms", r.compile_ms},
                   {"peak_bytes", r.peak_bytes},
                   {"loss_scale_mode", a.loss_scale},
                   {"loss_scale", r.loss_scale},
                   {"skipped_steps", r.skipped_steps}};
  j["accuracy"] = r.accuracy >= 0 ? nlohmann::json(r.accuracy) : nlohmann::json(nullptr);
  j["fallbacks"] = fallbacks_json(a.fallbacks);
  j["environment"] = environment_json(nullptr);
  add_parallel_json(j, r);
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& p : r.passes)
    passes.push_back({{"pass", p.pass},
                      {"ran", p.ran},
                      {"changed", p.changed},
                      {"ms", p.ms},
                      {"nodes_before", p.nodes_before},
                      {"nodes_after", p.nodes_after}});
  j["passes"] = passes;
  return j;
}

// A Chrome trace (Perfetto UI) of the run's steps: the Graph-mode trace + compile, then one slice per
// step with the loss and lr as arguments, and a loss counter. The last step's op-level trace is
// written beside it (<mode>.step.trace.json).
// Data parallel: step i's collectives on a "collectives" track of the rank's process (pid).
void add_collective_events(nlohmann::json& events, const TrainResult& r, size_t step, double step_us, int pid) {
  if (step >= r.collectives.size()) return;
  for (const auto& c : r.collectives[step])
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", 2},
                      {"ts", step_us + c.start_ms * 1000.0},
                      {"dur", (c.end_ms - c.start_ms) * 1000.0},
                      {"name", "all-reduce #" + std::to_string(c.sequence)},
                      {"args", {{"sequence", c.sequence}, {"bytes", c.bytes}, {"step", step + 1}}}});
}

Status write_profile(const std::string& dir, const std::string& mode, const TrainResult& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error(dir + ": cannot create folder: " + ec.message());
  nlohmann::json events = nlohmann::json::array();
  // One process per rank, so merge-traces can put the ranks side by side.
  const int pid = r.rank + 1;
  const std::string who =
      r.communicator.empty() ? "" : " rank " + std::to_string(r.rank) + " of " + std::to_string(r.world_size);
  events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "train " + mode + who}}}});
  events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", 1}, {"name", "thread_name"}, {"args", {{"name", "steps"}}}});
  if (!r.communicator.empty())
    events.push_back(
        {{"ph", "M"}, {"pid", pid}, {"tid", 2}, {"name", "thread_name"}, {"args", {{"name", "collectives"}}}});
  double t_us = 0;
  if (r.compile_ms > 0) {
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", 1},
                      {"ts", 0.0},
                      {"dur", r.compile_ms * 1000.0},
                      {"name", "trace + compile step"}});
    t_us = r.compile_ms * 1000.0;
  }
  for (size_t i = 0; i < r.step_ms.size(); ++i) {
    const double dur = r.step_ms[i] * 1000.0;
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", 1},
                      {"ts", t_us},
                      {"dur", dur},
                      {"name", "step " + std::to_string(i + 1)},
                      {"args", {{"loss", r.losses[i]}, {"lr", r.lrs[i]}}}});
    events.push_back({{"ph", "C"}, {"pid", pid}, {"ts", t_us}, {"name", "loss"}, {"args", {{"loss", r.losses[i]}}}});
    add_collective_events(events, r, i, t_us, pid);
    t_us += dur;
  }
  const std::string path = (std::filesystem::path(dir) / (mode + ".train.trace.json")).string();
  const nlohmann::json trace{{"traceEvents", events},
                             {"displayTimeUnit", "ms"},
                             {"otherData", {{"rank", r.rank}, {"world_size", r.world_size}}}};
  return write_file_atomic(path, trace.dump() + "\n");
}

Expected<nn::Mode> parse_mode(const std::string& m) {
  if (m == "pynative") return nn::Mode::PyNative;
  if (m == "graph") return nn::Mode::Graph;
  return invalid_argument("unknown mode '" + m + "' (pynative, graph)");
}

Status prepare_args(TrainArgs& a) {
  MS_ASSIGN_OR_RETURN(a.run.amp, compiler::parse_amp_level(a.amp));
  a.amp = compiler::amp_level_name(a.run.amp);
  MS_ASSIGN_OR_RETURN(a.run.loss_scale, nn::train::parse_loss_scale(a.loss_scale));
  MS_ASSIGN_OR_RETURN(a.run.jit_level, compiler::parse_jit_level(a.jit_level));
  MS_ASSIGN_OR_RETURN(a.run.mode, parse_mode(a.mode));
  if (a.run.mode == nn::Mode::PyNative && a.device != "cpu") {
    if (a.strict_device)
      return unsupported("--strict-device: PyNative training on " + a.device + " would run on the CPU");
    a.fallbacks.push_back(
        {"*", 1, "PyNative training runs on the CPU (eager training steps on " + a.device + " are not supported yet)"});
    std::fprintf(stderr,
                 "note: PyNative training runs on the CPU (eager training steps on %s are not supported yet; "
                 "--mode graph trains there)\n",
                 a.device.c_str());
    a.device = "cpu";
  }
  return apply_context(a.device, a.threads, a.run.mode);
}

void print_summary(const TrainResult& r) {
  std::printf("step time (steps 2..%zu): median %.3f ms  p10 %.3f  p90 %.3f  mean %.3f; first step %.3f ms\n",
              r.step_ms.size(), r.steady.median, r.steady.p10, r.steady.p90, r.steady.mean,
              r.step_ms.empty() ? 0.0 : r.step_ms.front());
  std::printf("compile %.1f ms   peak memory %s\n", r.compile_ms,
              session::format_bytes(static_cast<double>(r.peak_bytes)).c_str());
  if (!r.passes.empty()) {
    std::string line;
    for (const auto& p : r.passes)
      if (p.ran) line += "  " + p.pass + " " + std::to_string(static_cast<int64_t>(std::lround(p.ms))) + " ms";
    std::printf("passes:%s\n", line.c_str());
  }
  if (r.loss_scale > 0)
    std::printf("loss scale %g at the end, %lld skipped steps (inf/NaN gradients)\n", r.loss_scale,
                static_cast<long long>(r.skipped_steps));
  if (r.accuracy >= 0)
    std::printf("test accuracy %.2f%% (%lld/%lld)\n", 100.0 * r.accuracy, static_cast<long long>(r.correct),
                static_cast<long long>(r.test_examples));
}

// --session: the loss, lr and step-time curves, and the profiled last step as a run (its trace,
// the compiled step's memory plan and pass reports).
// Data parallel: one curve per rank, from the ranks' reports (`rank_reports`, by rank).
Status write_training_session(const TrainArgs& a, const session::ProfiledTraining& profiled,
                              const std::vector<std::string>& rank_reports) {
  const TrainResult& r = *profiled.result;
  session::SessionData data;
  if (rank_reports.size() < 2)
    data.training.push_back({a.mode, a.mode, r.losses, r.lrs, r.step_ms, result_json(a, r, a.mode).dump()});
  for (size_t k = 0; rank_reports.size() > 1 && k < rank_reports.size(); ++k) {
    MS_ASSIGN_OR_RETURN(session::TrainingCurve c,
                        session::rank_curve_from_report(rank_reports[k], "rank " + std::to_string(k), r.lrs));
    data.training.push_back(std::move(c));
  }
  if (profiled.trace) {
    session::SessionRun run;
    run.label = "train:" + a.mode;
    run.request.mode = a.mode;
    run.request.device = a.device;
    run.request.jit_level = a.jit_level;
    run.request.threads = a.threads;
    run.request.iterations = static_cast<int>(a.run.steps);
    run.request.warmup = 0;
    run.request.disabled_passes = a.run.disabled_passes;
    session::ModeRunOutcome& o = run.outcome;
    o.mode = a.mode;
    o.backend = nn::backend().description();
    o.median_ms = r.steady.median;
    o.min_ms = r.steady.min;
    o.mean_ms = r.steady.mean;
    o.compile_ms = r.compile_ms;
    o.peak_bytes = static_cast<size_t>(r.peak_bytes);
    o.trace = profiled.trace;
    o.plan = profiled.plan;
    o.gpu_note = profiled.gpu_note;
    for (const compiler::PassReport& p : r.passes) {
      session::PassOutcome po;
      po.pass = p.pass;
      po.ran = p.ran;
      po.changed = p.changed;
      po.nodes_after = static_cast<int>(p.nodes_after);
      po.added = static_cast<int>(p.added);
      po.removed = static_cast<int>(p.removed);
      po.fused = static_cast<int>(p.fused);
      po.ms = p.ms;
      o.passes.push_back(std::move(po));
    }
    data.runs.push_back(std::move(run));
  }
  return write_session(a.session, r.model, "train", std::move(data));
}

void print_parallel_summary(const TrainResult& r) {
  if (r.communicator.empty()) return;
  const ParallelFigures f = parallel_figures(r);
  std::printf(
      "data parallel: %d rank(s) (%s), steps %d..%d: all-reduce median %.3f ms/step, overlap with the backward "
      "%.0f%%; warm-up step 1: %.3f ms, %.0f%%\n",
      r.world_size, r.communicator.c_str(), f.first_step, f.last_step, f.allreduce_ms, 100 * f.overlap,
      f.first_step_allreduce_ms, 100 * f.first_step_overlap);
}

int train_command(TrainArgs a) {
  if (a.threads == 0) a.threads = threads_per_local_rank();  // ranks on one machine share its cores
  Status st = prepare_args(a);
  if (!st.is_ok()) return fail(st.message());
  auto rank = start_parallel(a.parallel);
  if (!rank) return fail(rank.status().message());
  const bool quiet = *rank != 0;  // only rank 0 prints
  auto uri = nn::train::adapt_model(a.run);
  if (!uri) return fail(uri.status().message());
  const int64_t every = a.log_every > 0 ? a.log_every : std::max<int64_t>(1, a.run.steps / 10);
  if (!quiet)
    std::printf("train %s on %s data, %s mode, %s, %s lr %g, %lld steps\n", uri->model.c_str(), uri->data.c_str(),
                a.mode.c_str(), nn::backend().description().c_str(), a.run.optimizer.c_str(),
                a.run.lr > 0 ? a.run.lr : (a.run.optimizer == "sgd" ? 0.05 : 0.001),
                static_cast<long long>(a.run.steps));
  std::fflush(stdout);  // before any error line on stderr
  const int64_t last = a.run.steps;
  auto on_step = [every, last, quiet](int64_t s, double loss, double ms) {
    if (quiet) return;
    if (s == 1 || s % every == 0 || s == last) {
      std::printf("step %5lld  loss %.5f  %8.3f ms\n", static_cast<long long>(s), loss, ms);
      std::fflush(stdout);
    }
  };
  // --profile: the last step observed op by op, with its GPU kernels on a CUDA device (its trace
  // opens in the app's timeline and heatmap).
  session::ProfiledTraining profiled;
  runtime::FallbackLog fallbacks;
  runtime::FallbackScope noting(fallbacks);  // cases a device kernel hands to the CPU
  if (a.profile.empty() && a.session.empty())
    profiled.result = nn::train::run_training(a.run, on_step);
  else
    profiled = session::run_training_profiled(a.run, on_step, {{"amp", a.amp}});
  auto& r = profiled.result;
  if (!r) return fail(a.run.model + ": " + r.status().message());
  if (Status fs = report_fallbacks(fallbacks.list(), a.strict_device); !fs.is_ok()) return fail(fs.message());
  runtime::merge_fallbacks(a.fallbacks, fallbacks.list());
  if (!quiet) {
    print_summary(*r);
    print_parallel_summary(*r);
  }
  // Across ranks, with a report or a session: every rank's report, for each rank's loss curve.
  std::vector<std::string> rank_reports;
  if (r->world_size > 1 && (!a.report.empty() || !a.session.empty())) {
    auto gathered = gather_text(result_json(a, *r, a.mode).dump());
    if (!gathered) return fail("gathering the ranks' reports: " + gathered.status().message());
    rank_reports = std::move(*gathered);
  }
  parallel_collectives_done();
  // Rank 0 writes the report, every rank when the path has {rank}; with each rank's losses.
  if (!a.report.empty() && (!quiet || a.report.find("{rank}") != std::string::npos)) {
    nlohmann::json j = result_json(a, *r, a.mode);
    if (!rank_reports.empty()) {
      j["rank_losses"] = nlohmann::json::array();
      for (const std::string& text : rank_reports) {
        const nlohmann::json other = nlohmann::json::parse(text, nullptr, false);
        j["rank_losses"].push_back(other.is_object() && other.contains("losses") ? other["losses"] : nlohmann::json());
      }
    }
    if (Status ws = write_file_atomic(rank_path(a.report, *rank), j.dump(2) + "\n"); !ws) return fail(ws.message());
  }
  // --profile DIR: rank 0's, every rank's when DIR has {rank} (the others write the steps' trace).
  const bool profile_per_rank = a.profile.find("{rank}") != std::string::npos;
  a.profile = rank_path(a.profile, *rank);
  if (quiet) {
    if (!profile_per_rank) return 0;
    const Status ps = write_profile(a.profile, a.mode, *r);
    return ps.is_ok() ? 0 : fail(ps.message());
  }
  if (!a.session.empty()) {
    if (Status ss = write_training_session(a, profiled, rank_reports); !ss) return fail(ss.message());
  }
  if (!a.profile.empty()) {
    Status ps = write_profile(a.profile, a.mode, *r);
    if (!ps.is_ok()) return fail(ps.message());
    if (profiled.trace) {
      if (!profiled.gpu_note.empty())
        std::fprintf(stderr, "note: GPU kernels missing: %s\n", profiled.gpu_note.c_str());
      const prof::Trace& trace = *profiled.trace;
      const std::string path = (std::filesystem::path(a.profile) / (a.mode + ".step.trace.json")).string();
      ps = prof::export_chrome_trace_file(trace, path);
      if (!ps.is_ok()) return fail(ps.message());
      std::printf("profile: %s (the last step, %zu ops)\n", path.c_str(), r->observed_graph->nodes().size());
      // The graph that step ran, as text (Graph mode: the compiled step, every pass applied).
      const std::string graph_path = (std::filesystem::path(a.profile) / (a.mode + ".step.graph.txt")).string();
      ps = write_file_atomic(graph_path, ir::dump_text(*r->observed_graph));
      if (!ps.is_ok()) return fail(ps.message());
    }
    const std::string summary = (std::filesystem::path(a.profile) / "summary.json").string();
    ps = write_file_atomic(summary, result_json(a, *r, a.mode).dump(2) + "\n");
    if (!ps.is_ok()) return fail(ps.message());
  }
  return 0;
}

void add_train_options(CLI::App& cmd, TrainArgs& a) {
  cmd.add_option("--optimizer", a.run.optimizer, "sgd, adam or adamw")->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd.add_option("--lr", a.run.lr, "Learning rate (default: sgd 0.05, adam/adamw 0.001)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--schedule", a.run.schedule, "lr schedule: constant, step or cosine")
      ->check(CLI::IsMember({"constant", "step", "cosine"}));
  cmd.add_option("--lr-warmup", a.run.lr_warmup, "Linear lr warm-up steps")->check(CLI::NonNegativeNumber);
  cmd.add_option("--momentum", a.run.momentum, "SGD momentum");
  cmd.add_option("--weight-decay", a.run.weight_decay, "Weight decay (never on biases and norms)");
  cmd.add_option("--label-smoothing", a.run.label_smoothing, "Cross-entropy label smoothing in [0, 1)");
  cmd.add_option("--batch", a.run.batch, "Batch size (default: the template's batch parameter)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--data", a.run.data, "digits, synthetic, or auto (digits when the template takes them)")
      ->check(CLI::IsMember({"auto", "digits", "synthetic"}));
  cmd.add_option("--data-dir", a.run.data_dir, "Folder of digits_images.npy / digits_labels.npy");
  cmd.add_option(
      "--amp", a.amp,
      "Mixed precision: O0 fp32, O1 conv/matmul in bf16, O2 all but norms/softmax/loss in bf16, O3 all bf16");
  cmd.add_option("--loss-scale", a.loss_scale, "Loss scaling: none (default), dynamic, or a static scale N");
}

const RegisterCommand kTrain{
    "train", "Train a zoo template in one mode (loss, step time, compile time, peak memory, accuracy)", 35,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<TrainArgs>();
      cmd.add_option("MODEL", a->run.model, "zoo:NAME?key=value&... (input size and classes adapt to the data)")
          ->required();
      cmd.add_option("--mode", a->mode, "pynative or graph")->check(CLI::IsMember({"pynative", "graph"}));
      cmd.add_option("--device", a->device, "cpu or cuda (falls back to cpu with a note)")
          ->check(CLI::IsMember({"cpu", "cuda"}));
      cmd.add_option("--threads", a->threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--steps", a->run.steps, "Training steps")->check(CLI::PositiveNumber);
      cmd.add_option("--seed", a->run.seed, "Seed of the data split, shuffling and synthetic data");
      cmd.add_option("--jit-level", a->jit_level, "Graph-mode pipeline: O0, O1 or O2")
          ->check(CLI::IsMember({"O0", "O1", "O2"}));
      cmd.add_option("--disable", a->run.disabled_passes,
                     "Graph mode: leave a pass out of the step's compile (repeatable)");
      cmd.add_option("--report", a->report, "Write a JSON report (losses, step_ms, compile_ms, peak_bytes, accuracy)");
      cmd.add_option("--profile", a->profile, "Folder for <mode>.train.trace.json (Chrome trace) and summary.json");
      cmd.add_option("--session", a->session, "Write the training (curves, the last step profiled) as a session file");
      cmd.add_option("--log-every", a->log_every, "Print the loss every N steps (default: ~10 lines)");
      add_train_options(cmd, *a);
      add_parallel_options(cmd, a->parallel);
      cmd.add_flag("--strict-device", a->strict_device,
                   "Fail when anything does not run as asked on the device (an op on the CPU, another precision)");
      // compare MODEL --train: the same options on the compare subcommand (main.cpp adds it first).
      if (CLI::App* parent = cmd.get_parent()) {
        try {
          CLI::App* cmp = parent->get_subcommand("compare");
          static TrainArgs compare_args;
          static bool compare_train = false;
          compare_args.run.steps = 0;  // default: warm-up + iterations + 1
          cmp->add_flag("--train", compare_train, "Compare a training step in both modes (with the loss curves)");
          cmp->add_option("--steps", compare_args.run.steps, "--train: steps (default: warm-up + iterations + 1)")
              ->check(CLI::PositiveNumber);
          add_train_options(*cmp, compare_args);
          cmp->add_option("--report", compare_args.report, "--train: write both runs as JSON");
          g_compare_train = &compare_train;
          g_compare_args = &compare_args;
        } catch (const CLI::Error&) {
          // No compare subcommand: `train` works on its own.
        }
      }
      return [a] {
        const int rc = train_command(*a);
        stop_parallel(/*failed=*/rc != 0);  // ends the communicator (aborts the job when this rank failed)
        return rc;
      };
    }};

}  // namespace
}  // namespace ms::cli

namespace ms::cli {

bool compare_train_requested() { return g_compare_train && *g_compare_train; }

int compare_train_command(const RunArgs& ra) {
  TrainArgs a = g_compare_args ? *g_compare_args : TrainArgs{};
  a.run.model = ra.model;
  a.run.seed = ra.seed;
  a.device = ra.device;
  a.threads = ra.threads;
  a.jit_level = ra.jit_level;
  const int64_t skip = 1 + std::max(0, ra.warmup);  // the first step traces and compiles in Graph mode
  if (a.run.steps <= 0) a.run.steps = skip + std::max(1, ra.iters);
  if (!ra.disabled_passes.empty()) std::fprintf(stderr, "note: --disable is not applied to training steps\n");
  TrainResult runs[2];
  const char* names[2] = {"pynative", "graph"};
  for (int i = 0; i < 2; ++i) {
    a.mode = names[i];
    Status st = prepare_args(a);
    if (!st.is_ok()) return fail(st.message());
    auto r = nn::train::run_training(a.run);
    if (!r) return fail(ra.model + ": " + names[i] + ": " + r.status().message());
    runs[i] = std::move(*r);
  }
  const TrainResult &p = runs[0], &g = runs[1];
  auto tail = [&](const TrainResult& r) {
    const auto from = std::min<size_t>(static_cast<size_t>(skip), r.step_ms.size() > 1 ? r.step_ms.size() - 1 : 0);
    return nn::train::summarize_steps(
        std::vector<double>(r.step_ms.begin() + static_cast<long>(from), r.step_ms.end()));
  };
  const auto ps = tail(p), gs = tail(g);
  std::printf("%s training step on %s data (%lld train examples), %s, %s, %lld steps; times over steps %lld..%lld\n\n",
              p.model.c_str(), p.data.c_str(), static_cast<long long>(p.train_examples), a.run.optimizer.c_str(),
              nn::backend().description().c_str(), static_cast<long long>(a.run.steps),
              static_cast<long long>(std::min<int64_t>(skip + 1, a.run.steps)), static_cast<long long>(a.run.steps));
  std::printf("%-26s %14s %14s %10s\n", "", "PyNative", "Graph", "ratio");
  auto row = [](const char* label, double x, double y, const char* unit) {
    std::printf("%-26s %11.3f %-2s %11.3f %-2s %9.2fx\n", label, x, unit, y, unit, y > 0 ? x / y : 0.0);
  };
  row("step median", ps.median, gs.median, "ms");
  row("step p10", ps.p10, gs.p10, "ms");
  row("step p90", ps.p90, gs.p90, "ms");
  row("first step + compile", p.step_ms.front() + p.compile_ms, g.step_ms.front() + g.compile_ms, "ms");
  std::printf("%-26s %11s    %11.3f ms\n", "compile (trace + compile)", "-", g.compile_ms);
  std::printf("%-26s %14s %14s %9.2fx\n", "peak memory",
              session::format_bytes(static_cast<double>(p.peak_bytes)).c_str(),
              session::format_bytes(static_cast<double>(g.peak_bytes)).c_str(),
              g.peak_bytes > 0 ? static_cast<double>(p.peak_bytes) / static_cast<double>(g.peak_bytes) : 0.0);
  std::printf("%-26s %14.5f %14.5f\n", "final loss", p.losses.back(), g.losses.back());
  if (p.accuracy >= 0 && g.accuracy >= 0)
    std::printf("%-26s %13.2f%% %13.2f%%\n", "test accuracy", 100 * p.accuracy, 100 * g.accuracy);
  const double saving = ps.median - gs.median;
  if (saving > 0)
    std::printf("%-26s %14s %11.1f steps\n", "break-even", "", g.compile_ms / saving);
  else
    std::printf("%-26s %14s %14s\n", "break-even", "", "never");
  double max_diff = 0, max_rel = 0;
  for (size_t i = 0; i < p.losses.size() && i < g.losses.size(); ++i) {
    const double d = std::abs(p.losses[i] - g.losses[i]);
    max_diff = std::max(max_diff, d);
    max_rel = std::max(max_rel, d / std::max(1e-12, std::abs(p.losses[i])));
  }
  std::printf("\nloss curves: max |PyNative - Graph| %.3g (relative %.3g) over %zu steps\n", max_diff, max_rel,
              p.losses.size());
  if (!a.report.empty()) {
    AtomicFile file(a.report);
    file.stream() << nlohmann::json{{"pynative", result_json(a, p, "pynative")},
                                    {"graph", result_json(a, g, "graph")},
                                    {"break_even_steps",
                                     saving > 0 ? nlohmann::json(g.compile_ms / saving) : nlohmann::json(nullptr)},
                                    {"loss_max_abs_diff", max_diff}}
                         .dump(2)
                  << "\n";
    if (Status ws = file.commit(); !ws) return fail(ws.message());
  }
  return 0;
}

}  // namespace ms::cli
