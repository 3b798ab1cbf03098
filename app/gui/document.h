// The session's engine work, run inside jobs off the UI thread: open a model (load, infer types,
// build the view model, first layout) and run it in a mode (the session library's loop). No widgets here.
#pragma once

#include <QString>

#include <memory>
#include <string>
#include <vector>

#include "app/session/compile_cache.h"
#include "app/session/mode_run.h"
#include "app/session/numerics.h"
#include "app/session/pass_effect.h"
#include "engine/ir/graph.h"
#include "views/jobs/job_tracker.h"
#include "views/layout/pipeline.h"

namespace ms::app {

struct OpenedModel {
  QString source;                          // path or "generated:N"
  std::shared_ptr<const ir::Graph> graph;  // as loaded (what runs)
  std::shared_ptr<const ir::Graph> typed;  // with every value's type inferred (what is shown)
  std::shared_ptr<const views::GraphModel> model;
  views::PreparedView view;
  QString warning;  // e.g. type inference failed: edges then show declared types only
  double load_ms = 0, infer_ms = 0, model_ms = 0, layout_ms = 0;
};

// MODEL: an .onnx path, a zoo template "zoo:NAME?k=v", or "generated:N" (a synthetic N-node network with name scopes,
// for benchmarks and tests).
Expected<OpenedModel> open_model(const QString& source, views::JobContext& ctx);

// A synthetic graph: `blocks` residual blocks of `per_block` ops each, scoped "/stage<s>/block<b>/…".
ir::Graph generated_graph(int nodes);

// A run by names (mode, device, jit level, batch) and what it yields: the session library's, so
// the app's runs go through the same loop as the CLI's (app/session/run_loop.h).
using RunRequest = session::ModeRun;
using PassOutcome = session::PassOutcome;
using RunOutcome = session::ModeRunOutcome;

// The job's cancel flag and progress, as the loop's callbacks. With `cache`, a Graph-mode run of its
// model reuses the graphs earlier runs compiled (session/compile_cache.h).
Expected<RunOutcome> run_model(const ir::Graph& g, const RunRequest& req, views::JobContext& ctx,
                               session::CompileCache* cache = nullptr);

// A numerics job (compare both modes' values, bisect the passes, trap NaN/inf) with the job's cancel
// flag and progress; with `cache`, its Graph-mode graphs come from there and stay there.
Expected<session::NumericsOutcome> run_numerics(const ir::Graph& g, const session::NumericsJob& job,
                                                views::JobContext& ctx, session::CompileCache* cache = nullptr);

// The Pass Effect dock's measurement (session/pass_effect.h) with the job's cancel flag and progress.
Expected<session::PassEffects> run_pass_effects(const ir::Graph& g, const RunRequest& req,
                                                const std::vector<std::string>& passes, views::JobContext& ctx,
                                                session::CompileCache* cache = nullptr);

// "Graph mode failed at node 'conv1' (Conv #12): …" -> a sentence for the status bar and log.
QString human_error(const Status& s, const QString& what);

}  // namespace ms::app
