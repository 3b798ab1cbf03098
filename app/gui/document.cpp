#include "app/gui/document.h"

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"

#include <QFileInfo>
#include <QObject>

#include <chrono>

#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"

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

namespace {

class JobCallbacks final : public session::RunCallbacks {
 public:
  explicit JobCallbacks(views::JobContext& ctx) : ctx_(ctx) {}
  bool cancelled() const override { return ctx_.cancelled(); }
  void progress(double fraction, const std::string& what) override {
    ctx_.progress(fraction, QString::fromStdString(what));
  }

 private:
  views::JobContext& ctx_;
};

}  // namespace

Expected<RunOutcome> run_model(const ir::Graph& g, const RunRequest& req, views::JobContext& ctx,
                               session::CompileCache* cache) {
  JobCallbacks callbacks(ctx);
  return session::run_mode(g, req, callbacks, cache);
}

Expected<session::NumericsOutcome> run_numerics(const ir::Graph& g, const session::NumericsJob& job,
                                                views::JobContext& ctx, session::CompileCache* cache) {
  JobCallbacks callbacks(ctx);
  return session::run_numerics(g, job, callbacks, cache);
}

Expected<session::PassEffects> run_pass_effects(const ir::Graph& g, const RunRequest& req,
                                                const std::vector<std::string>& passes, views::JobContext& ctx,
                                                session::CompileCache* cache) {
  JobCallbacks callbacks(ctx);
  return session::measure_pass_effects(g, req, passes, callbacks, cache);
}

QString human_error(const Status& s, const QString& what) {
  QString msg = QString::fromStdString(s.message());
  if (s.code() == ErrorCode::Cancelled) return QObject::tr("%1 was cancelled.").arg(what);
  if (!msg.isEmpty()) msg[0] = msg[0].toUpper();
  if (!msg.endsWith('.')) msg += '.';
  return QObject::tr("%1 failed: %2").arg(what, msg);
}

}  // namespace ms::app
