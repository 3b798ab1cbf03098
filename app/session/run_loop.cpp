#include "app/session/run_loop.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "engine/core/cpu_wait.h"
#include "engine/core/mapped_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

namespace ms::session {

namespace {

using Clock = std::chrono::steady_clock;

Status cancelled() { return Status::error(ErrorCode::Cancelled, "cancelled"); }

// The callbacks of callers that give none: the executors then poll no cancel predicate between
// steps (bench dispatch measures about a microsecond per op).
RunCallbacks& no_callbacks() {
  static RunCallbacks none;
  return none;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// One model in one mode through the loop: set-up, one iteration at a time, then the figures.
class ModelRun {
 public:
  ModelRun(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend, const RunRequest& r)
      : g_(g),
        inputs_(inputs),
        backend_(backend),
        req_(r),
        warmup_(std::max(0, r.warmup)),
        total_(warmup_ + std::max(1, r.iters)) {}

  int total() const { return total_; }
  int warmup() const { return warmup_; }
  const char* mode_name() const { return runtime::exec_mode_name(req_.mode); }

  Status prepare(RunCallbacks& cb) {
    out_.mode = req_.mode;
    out_.output_names = g_.outputs;
    out_.nodes = g_.nodes().size();
    if (req_.profile) {
      prof::ProfilingOptions po = req_.profiling;
      po.also = req_.observer;
      profiling_ = std::make_unique<prof::ProfilingSession>(backend_, std::move(po));
    }
    if (req_.mode == runtime::ExecMode::PyNative) {
      out_.weight_bytes = weight_bytes(g_);
      MS_RETURN_IF_ERROR(check_memory());
      eager_ = std::make_unique<runtime::EagerExecutor>(g_, backend_);
      runtime::find_fallbacks(g_, backend_, fallbacks_);
      return Status::ok();
    }
    if (req_.executor) {
      ex_ = req_.executor;
    } else {
      cb.progress(0.02, "Compiling");
      std::map<std::string, ir::ValueType> sig;
      for (const auto& [name, t] : inputs_) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
      compiler::CompileOptions co = req_.compile;
      if (&cb != &no_callbacks() && !co.cancelled) co.cancelled = [&cb] { return cb.cancelled(); };
      auto c = compiler::compile_executor(g_, backend_, sig, co);
      if (!c) return std::move(c).take_status();
      out_.compiled = std::move(*c);
      ex_ = out_.compiled.get();
      out_.compile_ms = ex_->compile_ms();
      if (req_.release_packed_weights && !req_.tap && !req_.profile) ex_->executor().release_constants_once_packed();
    }
    out_.executor = ex_;
    runtime::find_fallbacks(ex_->graph(), backend_, fallbacks_);
    out_.arena_bytes = ex_->memory_plan().arena_bytes;
    out_.weight_bytes = weight_bytes(ex_->graph());
    out_.packed_bytes = packed_bytes(ex_->graph());
    return check_memory();
  }

  // The weights (input 1, a constant) of the ops whose kernels keep a packed copy of them.
  static uint64_t packed_bytes(const ir::Graph& g) {
    static const std::set<std::string> packing = {"Conv",      "ConvTranspose", "MatMul",   "Gemm",
                                                  "FusedConv", "FusedMatMul",   "FusedGemm"};
    std::set<std::string> seen;
    uint64_t total = 0;
    for (const auto& n : g.nodes()) {
      if (n.inputs.size() < 2 || !packing.count(n.op_type) || !seen.insert(n.inputs[1]).second) continue;
      const ir::Value* w = g.value(n.inputs[1]);
      if (w && w->constant && w->constant->is_tensor() && w->constant->defined()) total += w->constant->nbytes();
    }
    return total;
  }

  static uint64_t weight_bytes(const ir::Graph& g) {
    uint64_t total = 0;
    for (const auto& [name, v] : g.values())
      if (v.constant && v.constant->is_tensor() && v.constant->defined()) total += v.constant->nbytes();
    return total;
  }

  // Refuses a run that cannot fit before it starts (what it needs against what is available).
  Status check_memory() const {
    const int64_t available = available_memory();
    const uint64_t need = out_.weight_bytes + out_.packed_bytes + out_.arena_bytes;
    if (available < 0 || need <= static_cast<uint64_t>(available)) return Status::ok();
    return Status::error(ErrorCode::OutOfMemory,
                         "the run needs " + format_bytes(static_cast<double>(need)) + " (weights " +
                             format_bytes(static_cast<double>(out_.weight_bytes)) + ", packed weights " +
                             format_bytes(static_cast<double>(out_.packed_bytes)) + ", activations " +
                             format_bytes(static_cast<double>(out_.arena_bytes)) + ") but only " +
                             format_bytes(static_cast<double>(available)) + " is available");
  }

  // Iteration i of total(): warm-up while i < warmup, then timed (and observed). A settling
  // iteration (i < 0) is run but neither timed nor observed.
  Status iterate(int i, RunCallbacks& cb) {
    const bool timed = i >= warmup_;
    runtime::RunOptions ro;
    ro.iteration = i - warmup_;
    if (&cb != &no_callbacks()) ro.cancelled = [&cb] { return cb.cancelled(); };
    if (timed && profiling_) {
      profiling_->start_gpu();  // once, at the first timed iteration
      ro.observer = &profiling_->observer();
    } else if (timed) {
      ro.observer = req_.observer;
    }
    if (i == total_ - 1) ro.tap = req_.tap;
    runtime::FallbackScope noting(fallbacks_);  // cases a device kernel hands to the CPU
    const int64_t wait0 = timed ? process_cpu_wait_ns() : -1;
    const auto t0 = Clock::now();
    auto outs = eager_ ? eager_->run(inputs_, ro) : ex_->run(inputs_, ro);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!outs) return std::move(outs).take_status();
    if (timed) {
      out_.latencies_ms.push_back(ms);
      const int64_t wait1 = process_cpu_wait_ns();
      if (wait0 >= 0 && wait1 >= wait0)
        cpu_wait_ns_ += wait1 - wait0;
      else
        cpu_wait_known_ = false;
    }
    if (i == total_ - 1) {
      // Observed buffers report their free to the observer, which may go first: keep host copies.
      out_.outputs.clear();
      for (const Tensor& t : *outs) out_.outputs.push_back(ro.observer ? t.clone() : t);
    }
    return Status::ok();
  }

  RunResult finish() {
    const runtime::RunStats st = eager_ ? eager_->last_stats() : ex_->last_stats();
    out_.kernels_per_iter = st.kernels;
    out_.peak_bytes = st.peak_bytes;
    if (ex_) out_.released_bytes = ex_->executor().released_bytes();
    out_.latency = summarize(out_.latencies_ms);
    double timed_ms = 0;
    for (double ms : out_.latencies_ms) timed_ms += ms;
    if (cpu_wait_known_ && timed_ms > 0)
      out_.cpu_wait_share = static_cast<double>(cpu_wait_ns_) / (timed_ms * 1e6 * std::max(1, backend_.threads()));
    out_.fallbacks = fallbacks_.list();
    if (profiling_) build_trace();
    return std::move(out_);
  }

 private:
  void build_trace() {
    prof::BuildContext ctx;
    ir::Graph typed;  // PyNative: the model with types inferred from the inputs (shapes and cost per node)
    if (eager_) {
      typed = g_.deep_copy();
      for (const auto& name : typed.inputs)
        if (ir::Value* v = typed.value(name); v && inputs_.count(name))
          v->type = ir::ValueType{inputs_.at(name).dtype(), inputs_.at(name).shape(), {}};
      // Best effort: a model whose types cannot be inferred statically still profiles (no shapes).
      if (!compiler::infer_graph_types(typed, &backend_).is_ok()) typed = g_.deep_copy();
      ctx.graph = &typed;
    } else {
      ctx.graph = &ex_->graph();
      ctx.plan = &ex_->memory_plan();
    }
    ctx.metadata = req_.metadata;
    ctx.metadata["mode"] = mode_name();
    // What the comparison's verdict reads to say the timings were disturbed (finish() set it first).
    if (out_.cpu_wait_share >= 0) ctx.metadata["cpu_wait_share"] = number(out_.cpu_wait_share);
    if (ex_) {
      ctx.metadata["compile_ms"] = number(ex_->compile_ms());
      ctx.metadata["compile_cached"] = req_.executor && !req_.executor_compiled_now ? "true" : "false";
      ctx.metadata["kernel_steps"] = std::to_string(ex_->num_steps());
    }
    out_.trace = profiling_->build(std::move(ctx));
    out_.recorded_events = profiling_->recorded();
    out_.build_ms = profiling_->build_ms();
    out_.gpu_records = profiling_->gpu_records();
    out_.gpu_note = profiling_->gpu_note();
  }

  const ir::Graph& g_;
  const runtime::TensorMap& inputs_;
  runtime::Backend& backend_;
  const RunRequest& req_;
  const int warmup_, total_;
  // The recorder goes after the executors: buffers they still hold report their free to it.
  std::unique_ptr<prof::ProfilingSession> profiling_;
  std::unique_ptr<runtime::EagerExecutor> eager_;
  compiler::CompiledExecutor* ex_ = nullptr;  // Graph mode: out_.compiled's or the request's
  runtime::FallbackLog fallbacks_;
  int64_t cpu_wait_ns_ = 0;  // the timed iterations' run-queue wait, all threads
  bool cpu_wait_known_ = true;
  RunResult out_;
};

std::string iteration_text(const ModelRun& r, int i) {
  return std::string(r.mode_name()) + " iteration " + std::to_string(i + 1) + " of " + std::to_string(r.total());
}

}  // namespace

std::string cpu_wait_note(double share) {
  if (!(share >= kCpuWaitNoted)) return {};
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100 * share);
  return std::string("its threads waited for a CPU ") + pct +
         " of the time (other work had the cores: another process, or this process's own threads beside the "
         "run): the timings are inflated; fewer threads or a quieter machine give the model's own";
}

Expected<RunResult> run_model(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                              const RunRequest& request, RunCallbacks& callbacks) {
  ModelRun run(g, inputs, backend, request);
  MS_RETURN_IF_ERROR(run.prepare(callbacks));
  for (int i = 0; i < run.total(); ++i) {
    if (callbacks.cancelled()) return cancelled();
    callbacks.progress(0.05 + 0.95 * i / run.total(), iteration_text(run, i));
    MS_RETURN_IF_ERROR(run.iterate(i, callbacks));
  }
  return run.finish();
}

Expected<RunResult> run_model(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                              const RunRequest& request) {
  return run_model(g, inputs, backend, request, no_callbacks());
}

Expected<std::vector<RunResult>> run_interleaved(const std::vector<InterleavedRun>& runs, RunCallbacks& callbacks,
                                                 int turn) {
  const auto profiled =
      std::count_if(runs.begin(), runs.end(), [](const InterleavedRun& r) { return r.request.profile; });
  if (profiled > 1) return invalid_argument("interleaved runs: at most one may profile");
  std::vector<std::unique_ptr<ModelRun>> loop;
  int longest = 0;
  for (const InterleavedRun& r : runs) {
    if (!r.graph || !r.inputs || !r.backend)
      return invalid_argument("interleaved runs: graph, inputs and backend needed");
    loop.push_back(std::make_unique<ModelRun>(*r.graph, *r.inputs, *r.backend, r.request));
    MS_RETURN_IF_ERROR(loop.back()->prepare(callbacks));
    longest = std::max(longest, loop.back()->total());
  }
  turn = std::max(1, turn);
  for (int start = 0; start < longest; start += turn) {
    for (auto& run : loop) {
      if (start >= run->total()) continue;
      if (callbacks.cancelled()) return cancelled();
      // A turn after the others' starts with an untimed iteration that brings this run's weights
      // and arena back into the caches, as the iteration before it would have in a loop of its own.
      if (turn > 1 && start > 0 && start >= run->warmup()) MS_RETURN_IF_ERROR(run->iterate(-1, callbacks));
      for (int i = start; i < std::min(start + turn, run->total()); ++i) {
        if (callbacks.cancelled()) return cancelled();
        callbacks.progress(0.05 + 0.95 * i / longest, iteration_text(*run, i));
        MS_RETURN_IF_ERROR(run->iterate(i, callbacks));
      }
    }
  }
  std::vector<RunResult> out;
  for (auto& run : loop) out.push_back(run->finish());
  return out;
}

Expected<std::vector<RunResult>> run_interleaved(const std::vector<InterleavedRun>& runs, int turn) {
  return run_interleaved(runs, no_callbacks(), turn);
}

}  // namespace ms::session
