// MainWindow: "what did this pass buy me". The Pass Effect dock measures the Graph-mode pipeline
// with every pass and without each chosen pass (the unchecked ones; with none unchecked, every
// pass that changed the graph), running each pipeline in one job off the UI thread. The graphs come
// from the window's compile cache: measuring again, or after a Run with the same options, compiles
// only what changed (session/pass_effect.h).
#include <QDockWidget>

#include <algorithm>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "views/compare/pass_delta_view.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

namespace {

views::PipelineFigures figures_of(const session::PipelineRun& r) {
  return {r.latency_ms, r.compile_ms, r.peak_bytes, r.arena_bytes, r.kernels, r.nodes, QString::fromStdString(r.error)};
}

}  // namespace

QDockWidget* MainWindow::build_pass_effect_dock() {
  pass_delta_ = new views::PassDeltaView(this);
  auto* d = new QDockWidget(tr("Pass Effect"), this);
  d->setObjectName(QStringLiteral("PassEffectDock"));
  d->setWidget(pass_delta_);
  addDockWidget(Qt::BottomDockWidgetArea, d);
  pass_dock_ = d;
  connect(pass_delta_, &views::PassDeltaView::measure_requested, this, [this] { measure_pass_effects(); });
  return d;
}

std::vector<std::string> MainWindow::passes_to_measure() const {
  std::vector<std::string> chosen = passes_->disabled();
  if (!chosen.empty()) return chosen;
  for (const auto& p : passes_->passes())
    if (!p.pass.empty() && p.changed) chosen.push_back(p.pass);
  return chosen;
}

bool MainWindow::measure_pass_effects() {
  if (!doc_) return false;
  const std::vector<std::string> chosen = passes_to_measure();
  if (chosen.empty()) {
    pass_delta_->set_note(passes_->passes().empty()
                              ? tr("Run the model in Graph mode first: its passes are what can be left out.")
                              : tr("No pass changed the graph: nothing to measure."));
    Q_EMIT pass_effects_measured(false);
    return false;
  }
  RunRequest req = run_panel_->request("graph");
  req.disabled_passes.clear();
  // Each pipeline's median over at least 10 iterations: at the Run panel's 3, two identical graphs
  // (the full pipeline and one without a pass that changed nothing) measured up to 20% apart.
  req.iterations = std::max(req.iterations, kPassEffectMinIterations);
  auto graph = doc_->graph;
  if (pass_dock_) {
    pass_dock_->raise();
    resizeDocks({pass_dock_}, {std::max(pass_dock_->height(), 240)}, Qt::Vertical);
  }
  pass_delta_->set_busy(true,
                        tr("the full pipeline and %n pass(es) left out", nullptr, static_cast<int>(chosen.size())));
  log(tr("Measuring what %n pass(es) buy: %1 Graph-mode runs of %2 iterations", nullptr,
         static_cast<int>(chosen.size()))
          .arg(chosen.size() + 2)
          .arg(req.iterations));
  pass_effect_job_ = jobs_->start(
      QStringLiteral("pass-effect"), tr("Measuring pass effects"), this,
      [graph, req, chosen, cache = compiled_](views::JobContext& ctx) {
        return run_pass_effects(*graph, req, chosen, ctx, cache.get());
      },
      [this](Expected<session::PassEffects> r) {
        pass_effect_job_ = 0;
        pass_delta_->set_busy(false);
        if (!r) {
          pass_delta_->set_note(human_error(r.status(), tr("Measuring pass effects")));
          fail(r.status(), tr("Measuring pass effects"));
          Q_EMIT pass_effects_measured(false);
          return;
        }
        const int n = static_cast<int>(r->without.size());
        std::vector<views::PassDelta> rows;
        for (const auto& [pass, run] : r->without) rows.push_back({QString::fromStdString(pass), figures_of(run)});
        pass_delta_->model()->set_results(figures_of(r->full), std::move(rows));
        pass_delta_->set_note(
            tr("%n pass(es) measured, each left out alone; sort by a column to rank them.", nullptr, n));
        // Counted as the run report counts them: compiled graphs made, iterations that found theirs.
        log(tr("Pass effects measured for %n pass(es); see the Pass Effect dock", nullptr, n) +
            tr("; %1 compiled graph(s), %2 cache hit(s)").arg(r->counts.compiles).arg(r->counts.cache_hits));
        Q_EMIT pass_effects_measured(true);
      });
  return true;
}

void MainWindow::pass_effect_dropped() {
  // Cancelled (Esc, a new model): the dock takes measurements again.
  pass_effect_job_ = 0;
  pass_delta_->set_busy(false);
  pass_delta_->set_note(tr("Measurement cancelled."));
  Q_EMIT pass_effects_measured(false);
}

}  // namespace ms::app
