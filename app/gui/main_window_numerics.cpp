// Numerics (the Numerics menu): both modes' values captured and compared, the graph coloured by
// each value's error, the Values dock listing every value's error (a row selects its node) and the
// inspector showing the selected node's values; the pass bisection (the pass stepper opened at the
// guilty pass, the rewrite's nodes outlined); the NaN/inf trap (the node that made the first
// non-finite value selected). The work is app/session/numerics.h's, in a job.
#include <QDockWidget>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "views/common/palette.h"
#include "views/compare/value_diff_view.h"
#include "views/graph/inspector.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

namespace {

QString g3(double v) { return QString::number(v, 'g', 3); }

// Expands the groups that hide the node (NodeId value), selects it and centres the view on it;
// false when the graph shown lacks it.
bool reveal_value_node(views::GraphView* g, uint64_t node) {
  const int i = g->model() && node ? g->model()->index_of(ir::NodeId{node}) : -1;
  if (i < 0) return false;
  g->reveal_node(i);
  return true;
}

}  // namespace

QDockWidget* MainWindow::build_values_dock() {
  value_diff_ = new views::ValueDiffView(this);
  auto* d = new QDockWidget(tr("Values"), this);
  d->setObjectName(QStringLiteral("ValuesDock"));
  d->setWidget(value_diff_);
  addDockWidget(Qt::BottomDockWidgetArea, d);
  values_dock_ = d;
  connect(value_diff_, &views::ValueDiffView::node_selected, this, [this](uint64_t node) {
    // A Graph node the shown snapshot lacks (a fused node over the input graph): the PyNative node
    // it stands for.
    const auto* m = graph_->model();
    if (m && m->index_of(ir::NodeId{node}) < 0 && numerics_)
      for (const auto& v : numerics_->diff.values)
        if (v.node_id.value == node && m->index_of(v.ref_node_id) >= 0) {
          node = v.ref_node_id.value;
          break;
        }
    select_node_everywhere(node);
    reveal_value_node(graph_, node);
  });
  connect(value_diff_, &views::ValueDiffView::show_in_pynative, this, &MainWindow::show_pynative_node);
  return d;
}

void MainWindow::show_pynative_node(uint64_t node) {
  if (!node) return;
  auto select = [this, node] {
    if (!reveal_value_node(graph_, node)) log(tr("PyNative node #%1 is not in the graph shown").arg(node), true);
  };
  // Row 0 of the passes is the input graph; without a Graph-mode compile the view shows it already.
  if (passes_->rowCount() > 0 && pass_table_->currentIndex().row() != 0) {
    connect(graph_, &views::GraphView::layout_finished, this, select, Qt::SingleShotConnection);
    show_pass(0);
    return;
  }
  select();
}

bool MainWindow::start_numerics(session::NumericsJob::Kind kind) {
  if (!doc_ || numerics_job_) return false;
  session::NumericsJob job;
  job.kind = kind;
  job.run = run_panel_->request("graph");
  job.run.disabled_passes = passes_->disabled();
  job.tol = numerics_tol_;
  const QString what = kind == session::NumericsJob::Kind::Diff     ? tr("Comparing the values of both modes")
                       : kind == session::NumericsJob::Kind::Bisect ? tr("Bisecting the passes")
                                                                    : tr("Looking for the first NaN or infinity");
  log(tr("%1 (Graph mode at %2, tolerance %3)").arg(what, QString::fromStdString(job.run.jit_level), g3(job.tol)));
  auto graph = doc_->graph;
  numerics_job_ = jobs_->start(
      QStringLiteral("numerics"), what, this,
      [graph, job, cache = compiled_](views::JobContext& ctx) { return run_numerics(*graph, job, ctx, cache.get()); },
      [this, what](Expected<session::NumericsOutcome> r) {
        numerics_job_ = 0;
        set_numerics_actions_enabled(true);
        if (!r) {
          fail(r.status(), what);
          Q_EMIT numerics_finished(false);
          return;
        }
        if (!r->note.empty()) log(QString::fromStdString(r->note));
        // Its Graph-mode graphs from the window's compile cache, counted as the run report counts them.
        if (r->graphs)
          log(tr("%1: %2 compiled graph(s), %3 cache hit(s)")
                  .arg(what)
                  .arg(r->graphs->compiles)
                  .arg(r->graphs->cache_hits));
        if (r->diff) take_diff(std::make_shared<const session::DiffResult>(std::move(*r->diff)));
        if (r->bisect) take_bisect(*r->bisect);
        if (!r->traps.empty()) take_traps(r->traps);
        dirty_ = dirty_ || r->diff || r->bisect;  // kept in the session: autosaved after the job
        Q_EMIT numerics_finished(true);
      });
  set_numerics_actions_enabled(false);
  return true;
}

void MainWindow::set_numerics_actions_enabled(bool on) {
  for (QAction* a : numerics_actions_) a->setEnabled(on && doc_);
}

void MainWindow::numerics_dropped() {
  numerics_job_ = 0;
  set_numerics_actions_enabled(true);
  Q_EMIT numerics_finished(false);
}

void MainWindow::take_diff(std::shared_ptr<const session::DiffResult> d) {
  numerics_ = std::move(d);
  const runtime::ModeDiff& diff = numerics_->diff;
  log(tr("Values: %1 (aligned in %2 ms)")
          .arg(QString::fromStdString(diff.summary()))
          .arg(numerics_->diff_ms, 0, 'f', 1));
  // Each node takes the colour of its worst value; a Graph node and the PyNative node it stands for alike.
  std::unordered_map<uint64_t, double> worst;
  for (const auto& v : diff.values) {
    if (!v.compared) continue;
    const double e = v.nonfinite_mismatches ? std::numeric_limits<double>::infinity() : v.max_rel;
    for (uint64_t id : {v.node_id.value, v.ref_node_id.value}) {
      auto [it, fresh] = worst.emplace(id, e);
      if (!fresh) it->second = std::max(it->second, e);
    }
  }
  std::unordered_map<uint64_t, QColor> fills;
  for (const auto& [id, e] : worst) fills[id] = views::error_color(e, diff.tol);
  graph_->set_heat(std::move(fills), views::error_legend_html(diff.tol));
  if (diff.first_divergence >= 0) {
    const auto& first = diff.values[static_cast<size_t>(diff.first_divergence)];
    log(tr("First value past the tolerance: '%1' of %2 (PyNative: %3), max rel %4")
            .arg(QString::fromStdString(first.value), QString::fromStdString(first.node),
                 QString::fromStdString(first.ref_node), g3(first.max_rel)),
        true);
    const bool shown = graph_->model() && graph_->model()->index_of(first.node_id) >= 0;
    select_node_everywhere(shown ? first.node_id.value : first.ref_node_id.value);
  }
  value_diff_->set_diff(std::shared_ptr<const runtime::ModeDiff>(numerics_, &numerics_->diff));
  values_dock_->raise();
  resizeDocks({values_dock_}, {std::max(values_dock_->height(), 240)}, Qt::Vertical);
  value_diff_->select_first_divergence();
  const int node = graph_->selected_node();
  const auto* m = graph_->model();
  show_node_values(m && node >= 0 && m->nodes[static_cast<size_t>(node)].node
                       ? m->nodes[static_cast<size_t>(node)].node->id.value
                       : 0);
}

void MainWindow::show_node_values(uint64_t node) {
  if (!numerics_) {
    // numerics_ reset (a model opened or closed): the Values dock empties with it.
    if (value_diff_->model()->diff()) value_diff_->set_diff(nullptr);
    inspector_->show_values({}, {},
                            node ? tr("Numerics › Compare Values of Both Modes captures every activation") : QString());
    return;
  }
  std::vector<views::ShownValue> shown;
  QStringList lines;
  std::set<std::string> pynative_names;
  for (const auto& v : numerics_->diff.values) {
    if (v.node_id.value != node && v.ref_node_id.value != node) continue;
    if (v.compared)
      lines << tr("'%1': Graph against PyNative max abs %2, max rel %3 (%4)")
                   .arg(QString::fromStdString(v.value), g3(v.max_abs), g3(v.max_rel), QString::fromStdString(v.match));
    else
      lines << tr("'%1': %2").arg(QString::fromStdString(v.value), QString::fromStdString(v.note));
    if (!v.ref_value.empty()) pynative_names.insert(v.ref_value);
  }
  for (const auto& v : numerics_->pynative.values)
    if (v.producer.value == node || pynative_names.count(v.name)) shown.push_back({tr("PyNative"), v});
  for (const auto& v : numerics_->graph.values)
    if (v.producer.value == node) shown.push_back({tr("Graph"), v});
  // A PyNative node fused away in Graph mode: the fused value that stands for it.
  for (const auto& d : numerics_->diff.values)
    if (d.ref_node_id.value == node && d.node_id.value != node)
      for (const auto& v : numerics_->graph.values)
        if (v.name == d.value && v.producer == d.node_id)
          shown.push_back({tr("Graph (%1)").arg(QString::fromStdString(d.node)), v});
  inspector_->show_values(std::move(shown), lines.join('\n'),
                          node ? tr("This node made no value in either run (folded away, or not reached)") : QString());
}

void MainWindow::restore_numerics(const session::SessionNumerics& n) {
  if (!n.bisect.empty()) {
    bisect_summary_ = n.bisect;
    log(tr("Bisection: %1").arg(QString::fromStdString(n.bisect)));
  }
  if (n.diff.values.empty()) return;
  // The comparison without the captured tensors: the Values dock, the error colours and the errors
  // in the inspector come back; the values' statistics need the comparison run again.
  auto d = std::make_shared<session::DiffResult>();
  d->diff = n.diff;
  d->diff_ms = n.diff_ms;
  take_diff(std::move(d));
}

void MainWindow::take_bisect(const session::BisectResult& b) {
  bisect_summary_ = b.summary();
  log(tr("Bisection: %1").arg(QString::fromStdString(b.summary())), !b.clean);
  if (b.pass_index < 0) return;
  if (!show_pass(b.pass_index + 1)) {
    log(tr("Run Graph mode to step through the passes; the guilty pass is '%1'").arg(QString::fromStdString(b.pass)));
    return;
  }
  std::vector<uint64_t> ids;
  for (const auto& id : b.nodes) ids.push_back(id.value);
  graph_->set_linked(ids);
  if (!ids.empty()) graph_->focus_linked();
}

void MainWindow::take_traps(const std::vector<session::CaptureResult>& traps) {
  bool any = false;
  for (const auto& t : traps) {
    const QString mode = t.mode == runtime::ExecMode::Graph ? tr("Graph mode") : tr("PyNative");
    if (!t.trap) {
      log(tr("%1: no NaN or infinity in any value").arg(mode));
      continue;
    }
    log(tr("%1: %2").arg(mode, QString::fromStdString(t.trap->message())), true);
    if (any) continue;
    any = true;
    const auto* m = graph_->model();
    if (m && m->index_of(t.trap->producer) >= 0) {
      select_node_everywhere(t.trap->producer.value);
    } else {
      std::vector<uint64_t> ids;
      for (const auto& o : t.trap->origins) ids.push_back(o.value);
      graph_->set_linked(ids);
      graph_->focus_linked();
    }
  }
}

}  // namespace ms::app
