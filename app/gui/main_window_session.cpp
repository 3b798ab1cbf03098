// MainWindow: opening, running, cancelling; the status bar follows the job tracker.
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTimer>

#include <unordered_set>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/train_panel.h"
#include "app/session/precision.h"
#include "app/session/run_loop.h"
#include "engine/compiler/diff.h"
#include "views/compare/pass_delta_view.h"
#include "views/graph/inspector.h"
#include "views/layout/ghost_graph.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

bool is_session_file(const QString& path);

void MainWindow::open(const QString& source) {
  show_start_page(false);
  if (is_session_file(source)) {
    open_session(source);
    return;
  }
  if (open_job_) jobs_->cancel(open_job_);
  log(tr("Opening %1").arg(source));
  auto timer = std::make_shared<QElapsedTimer>();
  timer->start();
  open_job_ = jobs_->start(
      QStringLiteral("open"), tr("Opening %1").arg(QFileInfo(source).fileName()), this,
      [source](views::JobContext& ctx) { return open_model(source, ctx); },
      [this, source, timer](Expected<OpenedModel> r) {
        open_job_ = 0;
        if (!r) {
          fail(r.status(), tr("Opening %1").arg(QFileInfo(source).fileName()));
          Q_EMIT model_opened(false);
          return;
        }
        on_opened(std::move(*r), static_cast<double>(timer->elapsed()));
      });
}

void MainWindow::on_opened(OpenedModel m, double total_ms) {
  doc_ = std::make_unique<OpenedModel>(std::move(m));
  compiled_->set_model(doc_->graph);
  shown_diff_.reset();
  shown_before_.reset();
  pass_delta_->model()->clear();
  inspector_->show_node(nullptr, -1);
  passes_->set_passes({});
  run_panel_->clear_results();
  clear_results();
  numerics_.reset();
  graph_->set_heat({}, {});
  show_node_values(0);
  graph_->show_prepared(doc_->model, doc_->view);
  add_recent(doc_->source);
  set_title();
  for (QAction* a : needs_model_) a->setEnabled(true);
  const auto& model = *doc_->model;
  log(tr("Opened %1: %2 nodes, %3 groups; load %4 ms, shapes %5 ms, layout %6 ms (%7 items), %8 ms in all")
          .arg(QFileInfo(doc_->source).fileName())
          .arg(model.drawn_nodes)
          .arg(model.groups.size() - 1)
          .arg(doc_->load_ms, 0, 'f', 0)
          .arg(doc_->infer_ms, 0, 'f', 0)
          .arg(doc_->layout_ms, 0, 'f', 0)
          .arg(doc_->view.visible.items.size())
          .arg(total_ms, 0, 'f', 0));
  if (!doc_->view.collapsed.empty())
    log(tr("Large graph: %1 groups start collapsed; double-click a group to open it").arg(doc_->view.collapsed.size()));
  if (!doc_->warning.isEmpty()) log(doc_->warning, true);
  training_.clear();
  bisect_summary_.clear();
  session_reader_.reset();
  restore_selection_ = 0;
  restoring_session_ = false;
  if (pending_session_) {
    apply_session(*pending_session_);
    pending_session_.reset();
  } else {
    session_model_.reset();
    session_path_.clear();
  }
  Q_EMIT model_opened(true);
}

void MainWindow::close_model() {
  cancel_jobs();
  show_start_page(true);
  doc_.reset();
  compiled_->set_model(nullptr);
  shown_diff_.reset();
  shown_before_.reset();
  pass_delta_->model()->clear();
  graph_->clear();
  inspector_->show_node(nullptr, -1);
  passes_->set_passes({});
  run_panel_->clear_results();
  clear_results();
  numerics_.reset();
  show_node_values(0);
  for (QAction* a : needs_model_) a->setEnabled(false);
  set_title();
}

void MainWindow::run(std::vector<std::string> modes) {
  if (!doc_) return;
  if (modes.empty()) modes = run_panel_->modes();
  run_panel_->save_settings();
  run_panel_->clear_results();
  clear_results();
  run_next(std::move(modes), true);
}

void MainWindow::run_next(std::vector<std::string> modes, bool ok_so_far) {
  if (modes.empty() || !doc_) {
    timing_runs_ = false;
    run_panel_->set_busy(false);
    Q_EMIT runs_finished(ok_so_far);
    return;
  }
  timing_runs_ = true;
  if (autosave_job_) {
    // An autosave hashes, compresses and writes the session on a thread of its own: timed
    // iterations beside it measured it too (Run both on MobileNetV2, 2 cores: Graph mode 5.5 ms
    // against 2.9, its threads waiting for a core 17-33% of the time). The run starts after it.
    run_panel_->set_busy(true);
    QTimer::singleShot(
        10, this, [this, modes = std::move(modes), ok_so_far]() mutable { run_next(std::move(modes), ok_so_far); });
    return;
  }
  const std::string mode = modes.front();
  modes.erase(modes.begin());
  RunRequest req = run_panel_->request(mode);
  if (mode == "graph") disabled_ = req.disabled_passes = passes_->disabled();
  const QString what = mode == "graph" ? tr("Graph-mode run") : tr("PyNative run");
  run_panel_->set_busy(true);
  auto graph = doc_->graph;
  log(tr("%1: %2 iterations on %3").arg(what).arg(req.iterations).arg(QString::fromStdString(req.device)));
  jobs_->start(
      QStringLiteral("run-") + QString::fromStdString(mode), what, this,
      [graph, req, cache = compiled_](views::JobContext& ctx) { return run_model(*graph, req, ctx, cache.get()); },
      [this, what, modes, ok_so_far, req, mode](Expected<RunOutcome> r) mutable {
        if (!r) {
          fail(r.status(), what);
          run_next(std::move(modes), false);
          return;
        }
        if (!r->note.empty()) log(QString::fromStdString(r->note));
        if (!r->gpu_note.empty())
          log(tr("GPU kernels missing from the timeline: %1").arg(QString::fromStdString(r->gpu_note)), true);
        if (!r->passes.empty()) show_passes(r->passes);
        if (r->mode == "graph") report_pass_effect(*r);
        run_panel_->show_result(*r);
        take_result(*r);
        RunRequest kept = req;
        kept.make_backend = nullptr;
        kept.gpu_collector = nullptr;
        kept.observer = nullptr;
        runs_.push_back({mode, std::move(kept), *r, {}, -1});
        update_fallback_marks();
        if (!r->fallbacks.empty())
          log(tr("Ran on a fallback: %1 (marked in the graph and the timeline)")
                  .arg(QString::fromStdString(runtime::describe_fallbacks(r->fallbacks))),
              true);
        dirty_ = true;
        QString line = tr("%1 on %2: median %3 ms, min %4 ms")
                           .arg(what, QString::fromStdString(r->backend))
                           .arg(r->median_ms, 0, 'f', 3)
                           .arg(r->min_ms, 0, 'f', 3);
        if (r->mode == "graph")
          line += r->cached ? tr(", compile cached") : tr(", compile %1 ms").arg(r->compile_ms, 0, 'f', 1);
        if (r->compiles > 0) {
          line += tr("; %1 compiled graph(s) for %2, %3 cache hit(s)")
                      .arg(r->compiles)
                      .arg(QString::fromStdString(r->bucket))
                      .arg(r->cache_hits);
          QStringList kept;
          for (const auto& b : r->buckets) kept << QString::fromStdString(b);
          if (kept.size() > 1) line += tr("; compiled so far, latest first: %1").arg(kept.join(QStringLiteral("; ")));
        }
        if (session::is_low_precision(r->precision))
          line += tr("; in %1, from f32 max %2, mean %3 (relative), top-1 %4")
                      .arg(QString::fromStdString(r->precision))
                      .arg(r->deviation.max_rel, 0, 'g', 3)
                      .arg(r->deviation.mean_rel, 0, 'g', 3)
                      .arg(r->deviation.argmax_equal ? tr("the same") : tr("differs"));
        log(line);
        if (const std::string busy = session::cpu_wait_note(r->cpu_wait_share); !busy.empty())
          log(tr("Note: %1 was slowed by the machine: %2").arg(what, QString::fromStdString(busy)));
        for (const auto& o : r->outputs) log(QStringLiteral("  ") + QString::fromStdString(o));
        run_next(std::move(modes), ok_so_far);
      });
}

void MainWindow::fail(const Status& s, const QString& what) {
  log(human_error(s, what), s.code() != ErrorCode::Cancelled);
  if (s.node_id() != 0 && graph_->model()) {
    const int node = graph_->model()->index_of(ir::NodeId{s.node_id()});
    if (node >= 0) graph_->reveal_node(node);
  }
  if (s.code() == ErrorCode::Cancelled) run_panel_->set_busy(false);
}

void MainWindow::cancel_jobs() {
  if (active_.empty()) return;
  jobs_->cancel_all();
  log(tr("Cancelled %n job(s)", nullptr, static_cast<int>(active_.size())));
  open_job_ = 0;
  // Every control a job disabled comes back now; the jobs' results are dropped when they end.
  run_panel_->set_busy(false);
  if (train_job_) training_dropped();
  if (pass_effect_job_) pass_effect_dropped();
  if (numerics_job_) numerics_dropped();  // the Numerics menu starts a new one at once
}

void MainWindow::on_job_failed(views::JobId id, const QString& title, const QString& message) {
  log(tr("%1 failed: %2").arg(title, message), true);
  if (id == open_job_) {
    open_job_ = 0;
    Q_EMIT model_opened(false);
  }
  if (id == train_job_) {
    training_dropped();
    train_panel_->set_text(tr("Training failed: %1").arg(message));
  }
  if (id == pass_effect_job_) pass_effect_dropped();
  if (id == numerics_job_) numerics_dropped();
}

void MainWindow::show_passes(const std::vector<PassOutcome>& passes) {
  // Weights a session file did not keep (zeros in their place): the inspector says so.
  std::vector<Tensor> not_kept;
  for (const auto& p : passes) {
    std::vector<Tensor> t = session::not_kept_tensors(p);
    not_kept.insert(not_kept.end(), t.begin(), t.end());
  }
  not_kept_constants_ = not_kept;
  inspector_->set_constants_not_kept(std::move(not_kept), constants_not_kept_why_.isEmpty()
                                                              ? tr("over the snapshot budget")
                                                              : constants_not_kept_why_);
  std::vector<views::PassRow> rows;
  for (const auto& p : passes) {
    views::PassRow row;
    row.name = QString::fromStdString(p.pass) + (p.ran ? QString() : tr(" (skipped)"));
    row.description = QString::fromStdString(p.description);
    row.changed = p.changed;
    row.nodes_after = p.nodes_after;
    row.ms = p.ms;
    row.added = p.added;
    row.removed = p.removed;
    row.fused = p.fused;
    row.graph = p.graph;
    if (&p != &passes.front()) row.pass = p.pass;
    row.enabled = std::find(disabled_.begin(), disabled_.end(), p.pass) == disabled_.end();
    rows.push_back(std::move(row));
  }
  passes_->set_passes(std::move(rows));
  log(tr("Graph mode ran %n compiler pass(es); pick one in the Passes list to see the graph after it", nullptr,
         static_cast<int>(passes.size()) - 1));
}

void MainWindow::show_snapshot(int row) {
  if (row < 0 || row >= static_cast<int>(passes_->passes().size())) return;
  auto graph = passes_->passes()[static_cast<size_t>(row)].graph;
  if (!graph) return;
  const QString name = passes_->passes()[static_cast<size_t>(row)].name;
  // The graph before this pass (the previous snapshot that exists): the diff colours the view.
  std::shared_ptr<const ir::Graph> before;
  for (int r = row - 1; r >= 0 && !before; --r) before = passes_->passes()[static_cast<size_t>(r)].graph;
  auto diff = std::make_shared<compiler::GraphDiff>();
  auto ghosts = std::make_shared<std::unordered_set<uint64_t>>();
  snapshot_job_ = jobs_->start(
      QStringLiteral("open"), tr("Showing the graph after %1").arg(name), this,
      [graph, before, diff, ghosts, not_kept = not_kept_constants_](views::JobContext& ctx)
          -> Expected<std::pair<std::shared_ptr<const views::GraphModel>, views::PreparedView>> {
        ctx.progress(-1, QObject::tr("Laying out the graph"));
        std::shared_ptr<const ir::Graph> shown = graph;
        std::vector<std::pair<ir::NodeId, ir::NodeId>> links;
        if (before) {
          *diff = compiler::diff_graphs(*before, *graph);
          // What the pass removed (fused origins included) is laid out with the graph after it,
          // so each ghost sits where it stood.
          std::vector<ir::NodeId> gone = diff->removed;
          for (const auto& f : diff->fused) gone.insert(gone.end(), f.from.begin(), f.from.end());
          auto g = views::ghost_graph(*before, *graph, gone);
          shown = g.graph;
          *ghosts = std::move(g.ghosts);
          links = std::move(g.links);
        }
        auto model = views::GraphModel::build(shown, links, not_kept);
        auto view = views::prepare_view(*model, views::default_collapsed(*model));
        if (!view) return std::move(view).take_status();
        return std::make_pair(model, std::move(*view));
      },
      [this, name, diff, before, ghosts,
       row](Expected<std::pair<std::shared_ptr<const views::GraphModel>, views::PreparedView>> r) {
        if (!r) {
          fail(r.status(), tr("Showing the graph after %1").arg(name));
          if (restoring_session_) restore_selection();
          return;
        }
        inspector_->show_node(nullptr, -1);
        graph_->show_prepared(r->first, std::move(r->second));
        std::unordered_map<uint64_t, views::GraphView::DiffMark> marks;
        for (auto id : diff->added) marks[id.value] = views::GraphView::DiffMark::Added;
        for (auto id : diff->rewritten) marks[id.value] = views::GraphView::DiffMark::Rewritten;
        for (const auto& f : diff->fused) marks[f.node.value] = views::GraphView::DiffMark::Fused;
        for (uint64_t id : *ghosts) marks[id] = views::GraphView::DiffMark::Ghost;
        const QString pass = row > 0 ? QString::fromStdString(passes_->passes()[static_cast<size_t>(row)].pass) : name;
        graph_->set_diff(std::move(marks), {}, pass.isEmpty() ? name : pass);
        shown_diff_ = diff;
        shown_before_ = before;
        show_before(before, diff);
        status_text_->setText(
            tr("The graph after %1: %2 nodes; %3 added, %4 fused, %5 rewritten, %6 gone (%7 removed, the rest "
               "fused; dashed red, in place)")
                .arg(name)
                .arg(r->first->drawn_nodes - static_cast<int>(ghosts->size()))
                .arg(diff->added.size())
                .arg(diff->fused.size())
                .arg(diff->rewritten.size())
                .arg(ghosts->size())
                .arg(diff->removed.size()));
        if (restoring_session_) restore_selection();  // a session's node, now that its graph is laid out
      });
}

void MainWindow::show_fused_origins(uint64_t node) {
  const compiler::FusedFrom* fused = nullptr;
  if (shown_diff_ && node)
    for (const auto& f : shown_diff_->fused)
      if (f.node.value == node) fused = &f;
  if (!fused) {
    if (!graph_->linked().empty()) graph_->set_linked({});
    if (before_ && !before_->linked().empty()) before_->set_linked({});
    return;
  }
  std::vector<uint64_t> ids{node};
  QStringList names;
  for (auto id : fused->from) {
    ids.push_back(id.value);
    const ir::Node* n = shown_before_ ? shown_before_->find_node(id) : nullptr;
    names << (n ? QStringLiteral("%1 '%2'").arg(QString::fromStdString(n->op_type), QString::fromStdString(n->name))
                : QStringLiteral("#%1").arg(id.value));
  }
  // The fused node and its origins share the link colour: ghosts in place here, the live nodes in
  // the "before" view beside it.
  graph_->set_linked(ids);
  if (before_) before_->set_linked(ids);
  inspector_->show_fused_origins(names);
}

bool MainWindow::select_first_fused_node() {
  if (!shown_diff_ || shown_diff_->fused.empty() || !graph_->model()) return false;
  const int i = graph_->model()->index_of(shown_diff_->fused.front().node);
  if (i < 0) return false;
  graph_->reveal_node(i);
  return true;
}

bool MainWindow::busy() const { return !active_.empty(); }

void MainWindow::on_job_started(views::JobId id, const QString& title) {
  active_[id] = title;
  status_text_->setText(title + QStringLiteral("…"));
  progress_->setRange(0, 0);
  progress_->show();
  cancel_->show();
}

void MainWindow::on_job_progress(views::JobId id, double fraction, const QString& text) {
  if (!active_.count(id)) return;
  if (fraction < 0)
    progress_->setRange(0, 0);
  else {
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(fraction * 1000));
  }
  if (!text.isEmpty()) status_text_->setText(text + QStringLiteral("…"));
}

void MainWindow::on_job_finished(views::JobId id, bool delivered) {
  active_.erase(id);
  if (id == pass_effect_job_ && !delivered) pass_effect_dropped();
  if (id == train_job_ && !delivered) training_dropped();
  if (id == numerics_job_ && !delivered) numerics_dropped();
  if (id == snapshot_job_ && !delivered && restoring_session_) restore_selection();  // its layout cancelled
  if (!active_.empty()) {
    status_text_->setText(active_.rbegin()->second + QStringLiteral("…"));
    return;
  }
  progress_->hide();
  cancel_->hide();
  if (status_text_->text().endsWith(QStringLiteral("…"))) status_text_->setText(tr("Ready"));
}

}  // namespace ms::app
