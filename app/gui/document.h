// The session's engine work, run inside jobs off the UI thread: open a model (load, infer types,
// build the view model, first layout) and run it in a mode. No widgets here.
#pragma once

#include <QString>

#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/executor.h"
#include "profiler/trace/trace.h"
#include "views/jobs/job_tracker.h"
#include "views/layout/pipeline.h"

namespace ms::app {

struct OpenedModel {
  QString source;                                // path or "generated:N"
  std::shared_ptr<const ir::Graph> graph;        // as loaded (what runs)
  std::shared_ptr<const ir::Graph> typed;        // with every value's type inferred (what is shown)
  std::shared_ptr<const views::GraphModel> model;
  views::PreparedView view;
  QString warning;  // e.g. type inference failed: edges then show declared types only
  double load_ms = 0, infer_ms = 0, model_ms = 0, layout_ms = 0;
};

// MODEL: an .onnx path, a zoo template "zoo:NAME?k=v", or "generated:N" (a synthetic N-node network with name scopes, for
// benchmarks and tests).
Expected<OpenedModel> open_model(const QString& source, views::JobContext& ctx);

// A synthetic graph: `blocks` residual blocks of `per_block` ops each, scoped "/stage<s>/block<b>/…".
ir::Graph generated_graph(int nodes);

struct RunRequest {
  std::string mode = "pynative";  // pynative | graph
  std::string device = "cpu";
  std::string jit_level = "O1";
  int threads = 0;
  int iterations = 10;
  int warmup = 2;
  int batch = 1;  // value for a symbolic leading dim
  std::vector<std::string> disabled_passes;  // Graph mode: pipeline arguments left out
};

struct PassOutcome {
  std::string pass, description;
  bool ran = true, changed = false;
  int nodes_after = 0, added = 0, removed = 0, fused = 0;
  double ms = 0;
  std::shared_ptr<const ir::Graph> graph;  // snapshot after the pass
};

struct RunOutcome {
  std::string mode;
  std::string backend;
  std::string note;
  double median_ms = 0, min_ms = 0, mean_ms = 0, compile_ms = 0;
  size_t peak_bytes = 0;
  int64_t kernels = 0;
  std::vector<std::string> outputs;  // "name = tensor summary"
  // Graph mode: the input graph (as pass "input") and the graph after each compiler pass.
  std::vector<PassOutcome> passes;
  // The timed iterations as recorded by the profiler (timeline, heatmap, comparison), and in Graph
  // mode the compiler's memory plan (the heatmap's "planned" panel).
  prof::TracePtr trace;
  std::shared_ptr<const runtime::MemoryPlan> plan;
};

Expected<RunOutcome> run_model(const ir::Graph& g, const RunRequest& req, views::JobContext& ctx);

// "Graph mode failed at node 'conv1' (Conv #12): …" -> a sentence for the status bar and log.
QString human_error(const Status& s, const QString& what);

}  // namespace ms::app
