#include "app/gui/document.h"

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "profiler/record/recorder.h"

#include <QFileInfo>
#include <QObject>

#include <chrono>

#include "app/cli/session.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "engine/compiler/pipeline.h"

#if __has_include("engine/frontend/zoo/zoo.h")
#include "engine/frontend/zoo/zoo.h"
#define MODESCOPE_HAVE_ZOO 1
#endif

namespace ms::app {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Status cancelled() { return Status::error(ErrorCode::Cancelled, "cancelled"); }

}  // namespace

ir::Graph generated_graph(int nodes) {
  ir::Graph g;
  g.name = "generated";
  g.opsets[""] = 17;
  const int64_t c = 64;
  ir::Value in{"x", {DType::F32, std::vector<int64_t>{1, c, 32, 32}, {"", "", "", ""}}, {}, {}};
  g.add_value(in);
  g.inputs.push_back("x");
  std::string cur = "x";
  int made = 0, block = 0;
  // One weight tensor shared by every Conv (Tensor copies share their buffer): a 10,000-node graph
  // stays a few MB.
  const Tensor conv_w = Tensor::zeros(DType::F32, {c, c, 3, 3});
  const Tensor channel = Tensor::zeros(DType::F32, {c});
  const char* ops[] = {"Conv", "BatchNormalization", "Relu", "Conv", "BatchNormalization", "Add", "Relu"};
  while (made < nodes) {
    const std::string scope = "/stage" + std::to_string(block / 16) + "/block" + std::to_string(block % 16) + "/";
    const std::string skip = cur;
    for (int i = 0; i < 7 && made < nodes; ++i, ++made) {
      ir::Node n;
      n.op_type = ops[i];
      n.name = scope + n.op_type + "_" + std::to_string(i);
      n.inputs = {cur};
      if (n.op_type == "Add") n.inputs.push_back(skip);
      const std::string out = n.name + ":0";
      n.outputs = {out};
      if (n.op_type == "Conv") {
        const std::string w = n.name + ".weight";
        g.add_initializer(w, conv_w);
        n.inputs.push_back(w);
        n.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
        n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
      }
      if (n.op_type == "BatchNormalization") {
        for (const char* p : {".scale", ".bias", ".mean", ".var"}) {
          g.add_initializer(n.name + p, channel);
          n.inputs.push_back(n.name + p);
        }
      }
      g.add_node(std::move(n));
      ir::Value v{out, {DType::F32, std::vector<int64_t>{1, c, 32, 32}, {"", "", "", ""}}, {}, {}};
      v.producer = g.nodes().back().id;
      g.add_value(v);
      cur = out;
    }
    ++block;
  }
  g.outputs.push_back(cur);
  return g;
}

Expected<OpenedModel> open_model(const QString& source, views::JobContext& ctx) {
  using clock = std::chrono::steady_clock;
  OpenedModel out;
  out.source = source;
  auto t0 = clock::now();
  ctx.progress(0.05, QObject::tr("Reading %1").arg(QFileInfo(source).fileName()));
  ir::Graph g;
  if (source.startsWith(QStringLiteral("generated:"))) {
    bool ok = false;
    const int n = source.mid(10).toInt(&ok);
    if (!ok || n <= 0 || n > 1'000'000) return invalid_argument("generated:N needs N in 1..1000000");
    g = generated_graph(n);
  } else if (source.startsWith(QStringLiteral("zoo:"))) {
#ifdef MODESCOPE_HAVE_ZOO
    auto built = zoo::build_graph(source.toStdString());
    if (!built) return std::move(built).take_status();
    g = std::move(*built);
#else
    return unsupported("this build has no model zoo");
#endif
  } else {
    if (!QFileInfo::exists(source)) return io_error(source.toStdString() + ": no such file");
    onnx_io::LoadOptions opts;
    opts.require_supported_ops = false;  // show any graph; running it reports what is missing
    auto loaded = onnx_io::load_model(source.toStdString(), opts);
    if (!loaded) return std::move(loaded).take_status();
    g = std::move(*loaded);
  }
  out.load_ms = ms_since(t0);
  if (ctx.cancelled()) return cancelled();

  t0 = clock::now();
  ctx.progress(0.35, QObject::tr("Inferring shapes"));
  auto typed = std::make_shared<ir::Graph>(g.deep_copy());
  {
    auto fold = backends::create_cpu_backend(1);
    Status st = compiler::infer_graph_types(*typed, fold.get());
    if (!st) {
      out.warning = QObject::tr("Shapes could not be inferred everywhere (%1); edges show declared types.")
                        .arg(QString::fromStdString(st.message()));
      typed = std::make_shared<ir::Graph>(g.deep_copy());
    }
  }
  out.infer_ms = ms_since(t0);
  out.graph = std::make_shared<const ir::Graph>(std::move(g));
  out.typed = typed;
  if (ctx.cancelled()) return cancelled();

  t0 = clock::now();
  ctx.progress(0.55, QObject::tr("Grouping %1 nodes").arg(out.typed->node_count_recursive()));
  out.model = views::GraphModel::build(out.typed);
  out.model_ms = ms_since(t0);
  if (ctx.cancelled()) return cancelled();

  t0 = clock::now();
  ctx.progress(0.7, QObject::tr("Laying out the graph"));
  auto view = views::prepare_view(*out.model, views::default_collapsed(*out.model));
  if (!view) return std::move(view).take_status();
  out.view = std::move(*view);
  out.layout_ms = ms_since(t0);
  ctx.progress(1.0, QObject::tr("Drawing"));
  return out;
}

Expected<RunOutcome> run_model(const ir::Graph& g, const RunRequest& req, views::JobContext& ctx) {
  RunOutcome out;
  out.mode = req.mode;
  std::map<std::string, int64_t> dims;
  for (const auto& name : g.inputs) {
    const ir::Value* v = g.value(name);
    if (v && v->type.dims && !v->type.dims->empty() && (*v->type.dims)[0] < 0 && !v->type.dim_params.empty() &&
        !v->type.dim_params[0].empty())
      dims[v->type.dim_params[0]] = req.batch;
  }
  auto inputs = cli::make_inputs(g, {}, dims, 0);
  if (!inputs) return std::move(inputs).take_status();
  auto be = backends::create_backend(req.device, req.threads);
  if (!be) return std::move(be).take_status();
  out.backend = be->backend->description();
  out.note = be->note;
  runtime::Backend& backend = *be->backend;

  // Timed iterations run under the profiler's recorder (cheap: a few records per op). Declared
  // before the executors: buffers they still hold report their free to it when they go.
  prof::Recorder recorder;
  std::unique_ptr<runtime::EagerExecutor> eager;
  std::unique_ptr<compiler::CompiledExecutor> graph;
  ir::Graph typed;  // PyNative: types inferred from the inputs, so the trace names shapes and cost
  if (req.mode == "graph") {
    ctx.progress(0.02, QObject::tr("Compiling"));
    std::map<std::string, ir::ValueType> sig;
    for (const auto& [name, t] : *inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
    compiler::CompileOptions co;
    co.disabled_passes = req.disabled_passes;
    co.jit_level = req.jit_level == "O0" ? compiler::JitLevel::O0 : req.jit_level == "O2" ? compiler::JitLevel::O2 : compiler::JitLevel::O1;
    auto c = compiler::compile_executor(g, backend, sig, co);
    if (!c) return std::move(c).take_status();
    graph = std::move(*c);
    out.compile_ms = graph->compile_ms();
    const compiler::CompileResult& cr = graph->compile_result();
    std::map<std::string, std::string> about;
    for (const auto& e : compiler::describe_pipeline(co.jit_level)) about[e.argument] = e.description;
    if (!cr.snapshots.empty()) {
      PassOutcome input;
      input.pass = "input";
      input.description = "The graph as opened, before any pass";
      input.graph = cr.snapshots[0].graph;
      input.nodes_after = input.graph ? static_cast<int>(input.graph->nodes().size()) : 0;
      out.passes.push_back(std::move(input));
    }
    for (size_t i = 0; i < cr.reports.size(); ++i) {
      const compiler::PassReport& r = cr.reports[i];
      PassOutcome p;
      p.pass = r.pass;
      p.description = about.count(r.pass) ? about[r.pass] : "";
      p.ran = r.ran;
      p.changed = r.changed;
      p.nodes_after = static_cast<int>(r.nodes_after);
      p.added = static_cast<int>(r.added);
      p.removed = static_cast<int>(r.removed);
      p.fused = static_cast<int>(r.fused);
      p.ms = r.ms;
      if (i + 1 < cr.snapshots.size()) p.graph = cr.snapshots[i + 1].graph;
      out.passes.push_back(std::move(p));
    }
  } else {
    eager = std::make_unique<runtime::EagerExecutor>(g, backend);
    typed = g.deep_copy();
    for (const auto& name : typed.inputs)
      if (ir::Value* v = typed.value(name); v && inputs->count(name))
        v->type = ir::ValueType{inputs->at(name).dtype(), inputs->at(name).shape(), {}};
    if (!compiler::infer_graph_types(typed, &backend).is_ok()) typed = g.deep_copy();
  }

  const int total = std::max(0, req.warmup) + std::max(1, req.iterations);
  std::vector<double> times;
  for (int i = 0; i < total; ++i) {
    if (ctx.cancelled()) return cancelled();
    ctx.progress(0.05 + 0.95 * i / total, QObject::tr("%1 iteration %2 of %3").arg(QString::fromStdString(req.mode)).arg(i + 1).arg(total));
    runtime::RunOptions opts;
    opts.iteration = i;
    opts.cancelled = ctx.cancel_predicate();
    if (i >= req.warmup) opts.observer = &recorder;
    const auto t0 = std::chrono::steady_clock::now();
    auto outs = eager ? eager->run(*inputs, opts) : graph->run(*inputs, opts);
    const double ms = ms_since(t0);
    if (!outs) return std::move(outs).take_status();
    if (i >= req.warmup) times.push_back(ms);
    if (i == total - 1)
      for (size_t k = 0; k < outs->size(); ++k)
        out.outputs.push_back((k < g.outputs.size() ? g.outputs[k] : "?") + " = " + (*outs)[k].to_string(4));
  }
  const auto summary = cli::summarize(times);
  out.median_ms = summary.median;
  out.min_ms = summary.min;
  out.mean_ms = summary.mean;
  const runtime::RunStats st = eager ? eager->last_stats() : graph->last_stats();
  out.peak_bytes = st.peak_bytes;
  out.kernels = st.kernels;
  prof::BuildContext bc;
  bc.graph = eager ? &typed : &graph->graph();
  bc.plan = graph ? &graph->memory_plan() : nullptr;
  bc.metadata["mode"] = req.mode == "graph" ? "graph" : "pynative";
  bc.metadata["device"] = out.backend;
  if (graph) {
    bc.metadata["compile_ms"] = std::to_string(out.compile_ms);
    bc.metadata["kernel_steps"] = std::to_string(graph->num_steps());
    out.plan = std::make_shared<const runtime::MemoryPlan>(graph->memory_plan());
  }
  out.trace = recorder.build(bc);
  return out;
}

QString human_error(const Status& s, const QString& what) {
  QString msg = QString::fromStdString(s.message());
  if (s.code() == ErrorCode::Cancelled) return QObject::tr("%1 was cancelled.").arg(what);
  if (!msg.isEmpty()) msg[0] = msg[0].toUpper();
  if (!msg.endsWith('.')) msg += '.';
  return QObject::tr("%1 failed: %2").arg(what, msg);
}

}  // namespace ms::app
