// MainWindow: "what did this pass buy me". The Pass Effect dock measures the Graph-mode pipeline
// with every pass and without each chosen pass (the unchecked ones; with none unchecked, every
// pass that changed the graph), re-compiling and re-running in one job off the UI thread.
#include <QDockWidget>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "views/compare/pass_delta_view.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

namespace {

using Measured = std::pair<views::PipelineFigures, std::vector<views::PassDelta>>;

views::PipelineFigures figures_of(const Expected<RunOutcome>& r) {
  views::PipelineFigures f;
  if (!r) {
    f.error = QString::fromStdString(r.status().message());
    return f;
  }
  f.latency_ms = r->median_ms;
  f.compile_ms = r->compile_ms;
  f.peak_bytes = r->peak_bytes;
  f.arena_bytes = r->plan ? r->plan->arena_bytes : 0;
  f.kernels = r->kernels;
  f.nodes = r->passes.empty() ? 0 : r->passes.back().nodes_after;
  return f;
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
      [graph, req, chosen](views::JobContext& ctx) -> Expected<Measured> {
        ctx.progress(0, QObject::tr("Full pipeline"));
        auto full = run_model(*graph, req, ctx);
        if (!full && full.status().code() == ErrorCode::Cancelled) return std::move(full).take_status();
        Measured m;
        m.first = figures_of(full);
        const double total = static_cast<double>(chosen.size() + 2);
        for (size_t i = 0; i < chosen.size(); ++i) {
          if (ctx.cancelled()) return Status::error(ErrorCode::Cancelled, "cancelled");
          ctx.progress(static_cast<double>(i + 1) / total,
                       QObject::tr("Without %1").arg(QString::fromStdString(chosen[i])));
          RunRequest without = req;
          without.disabled_passes = {chosen[i]};
          auto r = run_model(*graph, without, ctx);
          if (!r && r.status().code() == ErrorCode::Cancelled) return std::move(r).take_status();
          m.second.push_back({QString::fromStdString(chosen[i]), figures_of(r)});
        }
        // The full pipeline once more at the end, the faster of the two kept: a machine that got
        // busier (or warmer) during the runs does not pass for an effect of the first pass.
        ctx.progress(1.0 - 1.0 / total, QObject::tr("Full pipeline again"));
        auto again = run_model(*graph, req, ctx);
        if (!again && again.status().code() == ErrorCode::Cancelled) return std::move(again).take_status();
        if (again && (!m.first.error.isEmpty() || again->median_ms < m.first.latency_ms)) m.first = figures_of(again);
        return m;
      },
      [this](Expected<Measured> r) {
        pass_effect_job_ = 0;
        pass_delta_->set_busy(false);
        if (!r) {
          pass_delta_->set_note(human_error(r.status(), tr("Measuring pass effects")));
          fail(r.status(), tr("Measuring pass effects"));
          Q_EMIT pass_effects_measured(false);
          return;
        }
        const int n = static_cast<int>(r->second.size());
        pass_delta_->model()->set_results(std::move(r->first), std::move(r->second));
        pass_delta_->set_note(
            tr("%n pass(es) measured, each left out alone; sort by a column to rank them.", nullptr, n));
        log(tr("Pass effects measured for %n pass(es); see the Pass Effect dock", nullptr, n));
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
