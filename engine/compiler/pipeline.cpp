#include "engine/compiler/pipeline.h"

#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/runtime/backend.h"

namespace ms::compiler {

Expected<JitLevel> parse_jit_level(const std::string& s) {
  if (s == "O0" || s == "o0" || s == "0") return JitLevel::O0;
  if (s == "O1" || s == "o1" || s == "1") return JitLevel::O1;
  if (s == "O2" || s == "o2" || s == "2") return JitLevel::O2;
  return invalid_argument("jit level must be O0, O1 or O2, got '" + s + "'");
}

const char* jit_level_name(JitLevel l) {
  switch (l) {
    case JitLevel::O0: return "O0";
    case JitLevel::O1: return "O1";
    case JitLevel::O2: return "O2";
  }
  return "?";
}

PassManager build_pipeline(JitLevel level, runtime::Backend* backend, AmpLevel amp, bool amp_input_layers_f32,
                           DType amp_type) {
  PassManager pm;
  // Inference in bf16 (the layers reading the input kept f32): inference BatchNorms fold into their
  // convs first, in f32; after amp-cast a bf16 conv's result reaches its (black-list, f32) BatchNorm
  // through a Cast, which no fold crosses, and every BatchNorm of a template ResNet stayed an f32 op
  // between two Casts.
  if (amp != AmpLevel::O0 && amp_input_layers_f32 && level != JitLevel::O0) {
    pm.add(make_infer_types_pass(backend));
    pm.add(make_fold_batchnorm_pass());
  }
  // First, so every later pass (folding, fusion, layout) sees the precision each op computes in.
  // Inference at O2 on a CPU (with AMX too): depthwise-separable blocks stay f32, where
  // fuse-inverted-residual's kernel outruns the bf16 convs (amp_cast.cpp).
  const bool f32_depthwise_blocks =
      level == JitLevel::O2 && amp_input_layers_f32 && amp_type == DType::BF16 && backend && backend->device().is_cpu();
  if (amp != AmpLevel::O0)
    pm.add(make_amp_cast_pass(amp, backend, amp_input_layers_f32, amp_type, f32_depthwise_blocks));
  pm.add(make_infer_types_pass(backend));
  if (level == JitLevel::O0) return pm;
  // Before constant folding, which would turn the weights' DequantizeLinear into float constants.
  pm.add(make_fold_qdq_pass());
  pm.add(make_simplify_pass());
  // Before constant folding, which would transpose the weights into a copy; CPU only (FusedMatMul's
  // transB has a CPU kernel).
  if (!backend || backend->device().is_cpu()) pm.add(make_fold_weight_transpose_pass());
  pm.add(make_constant_folding_pass(backend));
  pm.add(make_cse_pass());
  pm.add(make_fold_batchnorm_pass());
  // Before fuse-ops, so a Gelu or Swish becomes a matmul's or conv's post-op.
  pm.add(make_fuse_layer_norm_pass());
  pm.add(make_fuse_activations_pass());
  // Before fuse-ops, which would take the scores' scale or mask as a matmul's post-op; CPU only
  // (FusedAttention has a CPU kernel).
  if (!backend || backend->device().is_cpu()) pm.add(make_fuse_attention_pass());
  // Before fuse-ops, which would take its activations into the 1x1 convs; CPU only (one CPU kernel).
  if (!backend || backend->device().is_cpu()) pm.add(make_fuse_squeeze_excite_pass());
  pm.add(make_fuse_ops_pass(backend && !backend->device().is_cpu()));
  // After fuse-ops, so a packed projection's bias and post-ops split with its columns.
  pm.add(make_split_matmul_pass());
  // After split-matmul, so a selection of rows reaches a packed projection's query part alone; before
  // fuse-elementwise, whose chains it would otherwise have to cross.
  pm.add(make_narrow_rows_pass());
  // Fused elementwise loops where the backend runs them (the CPU; a device that says so): elsewhere
  // a chain stays as single ops, each with its own device kernel (and, at O2, one recorded graph),
  // rather than round trips to the CPU. Reducing chains have a CPU kernel only.
  if (!backend || backend->runs_fused_elementwise()) pm.add(make_fuse_elementwise_pass());
  if (!backend || backend->device().is_cpu()) pm.add(make_fuse_reduce_pass());
  pm.add(make_dce_pass());
  // oneDNN's blocked activation layouts: CPU only (cuDNN convs take NCHW).
  if (level == JitLevel::O2 && (!backend || backend->device().is_cpu())) {
    // bf16 convs (an AMP graph's) blocked too where the backend computes bf16 natively: without
    // oneDNN's bf16 convs they run the plain conv with an f32 tail.
    // On AMX, a graph with bf16 convs channels-last (the layout of oneDNN's AMX convs).
    pm.add(make_conv_layout_pass(backend && backend->native_bf16(), backend && backend->bf16_matrix_units()));
    pm.add(make_conv_algorithm_pass());
    // After the layout is chosen: it fuses blocked convs only.
    pm.add(make_fuse_inverted_residual_pass());
  }
  // cuDNN's tensor-core layout for low-precision convs: device backends only.
  if (level == JitLevel::O2 && backend && !backend->device().is_cpu()) pm.add(make_channels_last_pass());
  return pm;
}

void add_data_parallel_passes(PassManager& pm, const DataParallelPasses& dp) {
  size_t at = 0;
  for (size_t i = 0; i < pm.passes().size(); ++i)
    if (pm.passes()[i]->argument() == "infer-types") at = i + 1;
  pm.insert(at, make_insert_allreduce_pass(dp.mean));
  pm.insert(at + 1, make_fuse_allreduce_pass(AllReduceFusion{dp.split, dp.size_mb}));
}

std::vector<PipelineEntry> describe_pipeline(JitLevel level, AmpLevel amp, bool data_parallel) {
  std::vector<PipelineEntry> out;
  PassManager pm = build_pipeline(level, nullptr, amp);
  if (data_parallel) add_data_parallel_passes(pm, {});
  for (const auto& p : pm.passes()) out.push_back({p->argument(), p->name(), p->description()});
  // Device-only passes (the list above is the CPU pipeline's).
  if (level == JitLevel::O2) {
    PassPtr cl = make_channels_last_pass();
    out.push_back({cl->argument(), cl->name(), cl->description() + " (device backends)"});
  }
  out.push_back(
      {"plan-memory", "PlanMemory", "liveness, in-place reuse, offsets in one arena (runs on the final graph)"});
  if (level == JitLevel::O2)
    out.push_back({"branch-schedule", "BranchSchedule",
                   "independent branches assigned to concurrent CPU threads (runs on the final graph)"});
  return out;
}

Status check_pass_names(const std::vector<std::string>& names) {
  if (names.empty()) return Status::ok();
  // O2 without a backend lists every pass (the CPU-only ones included); AMP adds amp-cast.
  const std::vector<PipelineEntry> all = describe_pipeline(JitLevel::O2, AmpLevel::O2, /*data_parallel=*/true);
  for (const auto& name : names) {
    bool known = false;
    for (const auto& e : all) known = known || e.argument == name || e.name == name;
    if (known) continue;
    std::string valid;
    for (const auto& e : all) valid += (valid.empty() ? "" : ", ") + e.argument;
    return invalid_argument("unknown pass '" + name + "' (passes: " + valid + ")");
  }
  return Status::ok();
}

namespace {

// Stops the pipeline before the next pass once `cancelled` says so.
class CancelBetweenPasses final : public PassInstrumentation {
 public:
  explicit CancelBetweenPasses(std::function<bool()> cancelled) : cancelled_(std::move(cancelled)) {}
  bool run_before_pass(const Pass& /*pass*/, int /*index*/, const ir::Graph& /*g*/) override {
    return !(cancelled_ && cancelled_());
  }
  Status run_after_pass(const Pass& /*pass*/, int /*index*/, const ir::Graph& /*g*/) override {
    if (cancelled_ && cancelled_()) return Status::error(ErrorCode::Cancelled, "compile cancelled");
    return Status::ok();
  }

 private:
  std::function<bool()> cancelled_;
};

// Opens a RewriteBudget around pass `index` (bisection's cut inside the last pass it runs).
class BudgetOnePass final : public PassInstrumentation {
 public:
  BudgetOnePass(int index, int64_t budget) : index_(index), budget_(budget) {}
  bool run_before_pass(const Pass& /*pass*/, int index, const ir::Graph& /*g*/) override {
    if (index == index_) scope_.emplace(budget_);
    return true;
  }
  Status run_after_pass(const Pass& /*pass*/, int /*index*/, const ir::Graph& /*g*/) override {
    scope_.reset();
    return Status::ok();
  }
  void run_after_pass_failed(const Pass& /*pass*/, int /*index*/, const Status& /*error*/) override { scope_.reset(); }
  void run_skipped_pass(const Pass& /*pass*/, int /*index*/) override { scope_.reset(); }

 private:
  int index_;
  int64_t budget_;
  std::optional<RewriteBudget> scope_;
};

}  // namespace

Expected<CompileResult> run_pipeline(ir::Graph& g, runtime::Backend* backend, const JitConfig& config) {
  MS_RETURN_IF_ERROR(check_pass_names(config.disabled_passes));
  PassManager pm = build_pipeline(config.jit_level, backend, config.amp, config.amp_input_layers_f32, config.amp_type);
  if (config.customize) config.customize(pm);
  DisablePasses disable(config.disabled_passes);
  StopAfter stop(config.stop_after);
  VerifyAfterEachPass verify;
  SnapshotAfterEachPass snaps;
  PassTiming timing;
  CancelBetweenPasses cancel(config.cancelled);
  if (config.cancelled) pm.add_instrumentation(&cancel);
  pm.add_instrumentation(&disable);
  pm.add_instrumentation(&stop);
  if (config.verify) pm.add_instrumentation(&verify);
  if (config.snapshots) pm.add_instrumentation(&snaps);
  BudgetOnePass budget(config.stop_after - 1, config.rewrite_budget);
  if (config.stop_after > 0 && config.rewrite_budget >= 0) pm.add_instrumentation(&budget);
  pm.add_instrumentation(&timing);  // last: its before-hook runs right before the pass
  MS_RETURN_IF_ERROR(pm.run(g));
  if (config.cancelled && config.cancelled()) return Status::error(ErrorCode::Cancelled, "compile cancelled");

  CompileResult r;
  r.passes_ms = timing.total_ms();
  r.work = pm.total_work();
  r.snapshots = snaps.take();
  for (size_t i = 0; i < pm.passes().size(); ++i) {
    PassReport rep;
    rep.index = static_cast<int>(i);
    rep.pass = pm.passes()[i]->argument();
    rep.ms = std::max(0.0, timing.ms(static_cast<int>(i)));
    rep.ran = timing.ms(static_cast<int>(i)) >= 0;
    rep.work = pm.work(static_cast<int>(i));
    if (config.snapshots && i + 1 < r.snapshots.size()) {
      const Snapshot& before = r.snapshots[i];
      const Snapshot& after = r.snapshots[i + 1];
      rep.ran = after.ran;
      rep.changed = after.changed;
      rep.nodes_before = before.graph->nodes().size();
      rep.nodes_after = after.graph->nodes().size();
      if (after.changed) {
        const GraphDiff d = diff_graphs(*before.graph, *after.graph);
        rep.added = d.added.size();
        rep.removed = d.removed.size();
        rep.rewritten = d.rewritten.size();
        rep.fused = d.fused.size();
      }
    }
    r.reports.push_back(rep);
  }
  return r;
}

}  // namespace ms::compiler
