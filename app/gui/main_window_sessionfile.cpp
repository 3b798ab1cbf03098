// MainWindow: session files (.modescope, app/session/session_file.h). Open, Save, Save As, recent
// sessions and drops go through open(); saving takes a snapshot of the session on the UI thread
// (shared, immutable traces and graphs: cheap) and describes the model and writes the file in a
// job. Autosave every N seconds (setting autosave/seconds, 0 = off) and after each finished job to
// an autosave file under the app's data folder; a marker file says the app is running, so the next
// start knows when the last one did not exit cleanly.
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>

#include <algorithm>
#include <set>
#include <utility>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/session_trace_source.h"
#include "app/gui/train_panel.h"
#include "app/session/environment.h"
#include "engine/core/atomic_file.h"
#include "profiler/analysis/report.h"
#include "views/models/pass_list_model.h"
#include "views/timeline/ranks_view.h"
#include "views/train/loss_curve.h"

namespace ms::app {

namespace {

QString data_folder() {
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  QDir().mkpath(dir);
  return dir;
}

// Where a model embedded in a session goes when its original file is gone or changed.
Expected<std::string> materialize(const session::SessionModel& m, const std::string& folder) {
  if (m.kind != "embedded") return m.source;
  QFileInfo original(QString::fromStdString(m.source));
  if (original.isFile() && static_cast<uint64_t>(original.size()) == m.size) {
    QFile f(original.absoluteFilePath());
    if (f.open(QIODevice::ReadOnly)) {
      const QByteArray b = f.readAll();
      if (session::content_hash(std::string_view(b.constData(), static_cast<size_t>(b.size()))) == m.hash)
        return m.source;
    }
  }
  const std::string path = folder + "/" + m.hash + ".onnx";
  MS_RETURN_IF_ERROR(write_file_atomic(path, m.bytes));
  return path;
}

}  // namespace

bool is_session_file(const QString& path) { return path.endsWith(QLatin1String(".modescope"), Qt::CaseInsensitive); }

QString MainWindow::autosave_path() { return data_folder() + QStringLiteral("/autosave.modescope"); }
QString MainWindow::running_marker_path() { return data_folder() + QStringLiteral("/running"); }

void MainWindow::open_session(const QString& path) {
  show_start_page(false);
  log(tr("Opening session %1").arg(path));
  const std::string folder = data_folder().toStdString();
  struct Loaded {
    session::SessionData data;
    std::string model;                                     // what to open
    std::shared_ptr<const session::SessionReader> reader;  // when a trace stays in the file
    session::CompletedComparison comparison;               // made again where the file stored none
  };
  // A trace of more events than this stays in the file; the timeline queries its windows. A big
  // file's trace events are not read to check them either: a damaged page fails the query reading it.
  const int64_t max_events = QSettings().value(QStringLiteral("session/max_loaded_trace_events"), 1000000).toLongLong();
  const bool big = QFileInfo(path).size() > (int64_t{64} << 20);
  // The comparison a file did not store is made again from traces of up to this many events together.
  const int64_t max_compared =
      QSettings().value(QStringLiteral("session/max_compared_trace_events"), 4000000).toLongLong();
  jobs_->start(
      QStringLiteral("open"), tr("Opening session %1").arg(QFileInfo(path).fileName()), this,
      [path, folder, max_events, big, max_compared](views::JobContext& ctx) -> Expected<Loaded> {
        ctx.progress(-1, QObject::tr("Reading the session"));
        MS_ASSIGN_OR_RETURN(session::SessionReader reader,
                            session::SessionReader::open(path.toStdString(),
                                                         big ? session::Verify::AllButEvents : session::Verify::All));
        MS_ASSIGN_OR_RETURN(session::SessionData data, reader.load(max_events));
        MS_RETURN_IF_ERROR(session::check_openable(path.toStdString(), data));
        std::string model;  // none: a session of rank traces alone
        if (!data.model.kind.empty()) {
          MS_ASSIGN_OR_RETURN(model, materialize(data.model, folder));
        }
        const bool kept = std::any_of(data.runs.begin(), data.runs.end(),
                                      [](const session::SessionRun& r) { return !r.trace_file.empty(); });
        session::CompletedComparison comparison;
        if (kept) {
          ctx.progress(-1, QObject::tr("Comparing the session's runs"));
          comparison = session::complete_comparison(reader, data, max_compared);
        }
        Loaded out{std::move(data), std::move(model), nullptr, std::move(comparison)};
        if (kept) out.reader = std::make_shared<const session::SessionReader>(std::move(reader));
        return out;
      },
      [this, path](Expected<Loaded> r) {
        if (!r) {
          log(QString::fromStdString(r.status().message()), true);
          Q_EMIT model_opened(false);
          return;
        }
        if (r->data.model.kind == "path" && !QFileInfo::exists(QString::fromStdString(r->model)))
          log(tr("The session's model %1 is gone").arg(QString::fromStdString(r->model)), true);
        const bool has_model = !r->model.empty();
        comparison_note_ = QString::fromStdString(r->comparison.note);
        comparison_note_warns_ = !r->comparison.compared;
        if (has_model) {
          pending_session_ = std::make_shared<session::SessionData>(std::move(r->data));
          pending_reader_ = std::move(r->reader);
        } else {
          apply_session_without_model(r->data);
        }
        if (path != autosave_path()) {
          session_path_ = path;
          add_recent(path);
        }
        if (has_model)
          open(QString::fromStdString(r->model));
        else
          Q_EMIT model_opened(true);
      });
}

session::SessionData MainWindow::session_snapshot() const {
  session::SessionData d;
  if (doc_) d.model.source = session_model_ ? session_model_->source : doc_->source.toStdString();
  if (session_model_) d.model = *session_model_;
  d.runs = runs_;
  int eager = -1, graph = -1;
  for (size_t i = 0; i < runs_.size(); ++i) (runs_[i].outcome.mode == "graph" ? graph : eager) = static_cast<int>(i);
  if (eager >= 0 && graph >= 0)
    d.comparisons.push_back({"pynative vs graph", eager, graph, comparison_ ? prof::to_json(*comparison_).dump() : ""});
  if (pass_table_ && pass_table_->currentIndex().isValid())
    d.ui_state["pass"] = std::to_string(pass_table_->currentIndex().row());
  const auto* gm = graph_->model();
  const int sel = graph_->selected_node();
  if (gm && sel >= 0 && sel < static_cast<int>(gm->nodes.size()) && gm->nodes[static_cast<size_t>(sel)].node)
    d.ui_state["selection"] = std::to_string(gm->nodes[static_cast<size_t>(sel)].node->id.value);
  d.ui_state["tab"] = std::to_string(tabs_->currentIndex());
  d.training = training_;
  d.ranks = ranks_->data().lanes;
  if (numerics_)
    d.numerics = session::SessionNumerics{numerics_->diff, numerics_->diff_ms, bisect_summary_};
  else if (!bisect_summary_.empty())
    d.numerics = session::SessionNumerics{{}, 0, bisect_summary_};
  d.environment = session::environment_record();
  d.environment["producer"] = "modescope";
  d.environment["qt"] = qVersion();
  return d;
}

bool MainWindow::has_session() const { return doc_ || !ranks_->data().lanes.empty() || !training_.empty(); }

void MainWindow::save_session_to(const QString& path, bool autosave) {
  if (!has_session()) return;
  auto data = std::make_shared<session::SessionData>(session_snapshot());
  // Without a model (rank traces alone) the file's model table stays empty.
  const bool describe = !session_model_ && !data->model.source.empty();
  // Bytes of pass-made constants the file keeps (the snapshots' weights past it are marked not kept).
  const auto budget = static_cast<uint64_t>(QSettings()
                                                .value(QStringLiteral("session/snapshot_constants_mb"),
                                                       static_cast<qulonglong>(session::kSnapshotConstantBudget >> 20))
                                                .toULongLong()
                                            << 20);
  if (autosave) {
    ++autosaves_;
    if (timing_runs_ || pass_effect_job_ || train_job_) ++autosaves_beside_runs_;
  }
  const QString what = autosave ? tr("Autosaving") : tr("Saving session %1").arg(QFileInfo(path).fileName());
  const views::JobId id = jobs_->start(
      autosave ? QStringLiteral("autosave") : QStringLiteral("save-session"), what, this,
      [path, data, describe, budget](views::JobContext&) -> Expected<bool> {
        if (describe) {
          MS_ASSIGN_OR_RETURN(data->model, session::describe_model(data->model.source));
        }
        MS_RETURN_IF_ERROR(session::save_session(path.toStdString(), *data, budget));
        return true;
      },
      [this, path, autosave](Expected<bool> r) {
        if (!r) {
          log(QString::fromStdString(r.status().message()), true);
          return;
        }
        // Traces kept in a session file are now in this one too, under the runs' indices here.
        for (size_t i = 0; i < runs_.size(); ++i)
          if (!runs_[i].outcome.trace && !runs_[i].trace_file.empty()) {
            runs_[i].trace_file = path.toStdString();
            runs_[i].trace_run = static_cast<int>(i);
          }
        if (!autosave) {
          session_path_ = path;
          add_recent(path);
          log(tr("Saved the session to %1").arg(path));
        }
      });
  if (autosave) autosave_job_ = id;
}

void MainWindow::save_session() {
  if (session_path_.isEmpty())
    save_session_as();
  else
    save_session_to(session_path_, false);
}

void MainWindow::save_session_as() {
  if (!has_session()) return;
  QSettings s;
  const QString base = doc_ ? QFileInfo(doc_->source).completeBaseName() : QStringLiteral("ranks");
  const QString dir = s.value(QStringLiteral("last_dir")).toString();
  QString path = QFileDialog::getSaveFileName(this, tr("Save Session"), QDir(dir).filePath(base + ".modescope"),
                                              tr("Modescope sessions (*.modescope)"));
  if (path.isEmpty()) return;
  if (!is_session_file(path)) path += QStringLiteral(".modescope");
  save_session_to(path, false);
}

void MainWindow::open_session_dialog() {
  QSettings s;
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open Session"), s.value(QStringLiteral("last_dir")).toString(),
                                   tr("Modescope sessions (*.modescope);;All files (*)"));
  if (!path.isEmpty()) open_session(path);
}

// The weights of pass snapshots a session file did not keep hold zeros (the inspector says they were
// not kept): say which in the log too.
void MainWindow::log_constants_not_kept(const std::vector<session::SessionRun>& runs,
                                        const session::SnapshotConstantBudget& budget) {
  constants_not_kept_why_ =
      budget.recorded ? tr("over the snapshot budget") : tr("the file predates session schema 6; not in the model");
  std::set<std::string> names;
  for (const session::SessionRun& r : runs)
    for (const session::PassOutcome& p : r.outcome.passes) {
      names.insert(p.constants_not_kept.begin(), p.constants_not_kept.end());
      names.insert(p.nested_constants_not_kept.begin(), p.nested_constants_not_kept.end());
      for (const auto& [value, from] : p.constants_from_model) names.insert(value);  // no model filled it in
    }
  if (names.empty()) return;
  QStringList shown;
  for (const std::string& n : names) {
    if (shown.size() == 5) {
      shown << tr("...");
      break;
    }
    shown << QString::fromStdString(n);
  }
  const QString why = budget.recorded ? tr("over the file's %1 MB budget for constants, or not in the model")
                                            .arg(static_cast<qulonglong>(budget.budget >> 20))
                                      : tr("the file predates session schema 6, and the model has no weight "
                                           "of that name, dtype and shape");
  log(tr("%n weight(s) of the pass snapshots were not kept in the session (%1); their statistics are not "
         "real: %2",
         nullptr, static_cast<int>(names.size()))
          .arg(why, shown.join(QStringLiteral(", "))),
      budget.recorded);
}

void MainWindow::apply_session(const session::SessionData& d) {
  session_model_ = d.model;
  session_reader_ = std::move(pending_reader_);
  // The snapshots' weights the file left to the model come from the model just opened.
  std::vector<session::SessionRun> runs = d.runs;
  if (doc_ && doc_->graph) session::restore_model_constants(runs, *doc_->graph);
  log_constants_not_kept(runs, d.constants);
  for (const session::SessionRun& r : runs) {
    if (r.outcome.mode == "graph") disabled_ = r.request.disabled_passes;
    if (!r.outcome.passes.empty()) show_passes(r.outcome.passes);
    run_panel_->show_result(r.outcome);
    take_result(r.outcome);
    if (r.outcome.trace || r.trace_file.empty() || !session_reader_) continue;
    // A trace left in the file: the timeline reads the windows it shows.
    auto source = SessionTraceSource::make(session_reader_, r.trace_run);
    if (!source) {
      log(QString::fromStdString(source.status().message()), true);
      continue;
    }
    (r.outcome.mode == "graph" ? graph_source_ : eager_source_) = *source;
    log(tr("The %1 trace (%2 events) stays in the session file; the timeline reads the windows it shows")
            .arg(QString::fromStdString(r.label))
            .arg((*source)->event_count()));
    update_result_views();
  }
  runs_ = std::move(runs);
  restore_comparison(d);
  update_fallback_marks();
  if (!d.training.empty()) show_training(d.training);  // counted in the "Restored from the session" line
  if (d.numerics) restore_numerics(*d.numerics);
  if (!d.ranks.empty()) ranks_->set_data(views::ranks_data(d.ranks));
  auto number = [&d](const char* key, int64_t fallback) {
    auto it = d.ui_state.find(key);
    return it == d.ui_state.end() ? fallback : std::atoll(it->second.c_str());
  };
  const int tab = static_cast<int>(number("tab", 0));
  if (tab >= 0 && tab < tabs_->count()) tabs_->setCurrentIndex(tab);
  // The selection waits for the graph it was made in: a pass's snapshot is laid out in a job.
  restoring_session_ = true;
  restore_selection_ = static_cast<uint64_t>(std::max<int64_t>(0, number("selection", 0)));
  const views::JobId before = snapshot_job_;
  if (const int64_t pass = number("pass", -1); pass >= 0) show_pass(static_cast<int>(pass));
  log(tr("Restored from the session: %1").arg(QString::fromStdString(session::describe_contents(d))));
  if (snapshot_job_ == before) restore_selection();  // no snapshot to lay out: the graph is shown
}

void MainWindow::restore_selection() {
  const uint64_t node = std::exchange(restore_selection_, 0);
  const bool restoring = std::exchange(restoring_session_, false);
  const views::GraphModel* m = graph_->model();
  if (node) {
    const int i = m ? m->index_of(ir::NodeId{node}) : -1;
    if (i >= 0)
      graph_->reveal_node(i);  // opens the groups that hide it; the inspector and the other views follow
    else
      log(tr("The session's selected node #%1 is not in the graph shown").arg(node), true);
  }
  if (restoring) Q_EMIT session_restored();
}

void MainWindow::apply_session_without_model(const session::SessionData& d) {
  if (doc_) close_model();  // the session replaces the model open
  show_start_page(false);
  training_.clear();
  bisect_summary_.clear();
  session_reader_.reset();
  pending_reader_.reset();
  train_panel_->curve()->clear();
  ranks_->set_data(views::ranks_data({}));
  apply_session(d);
  for (QAction* a : save_actions_) a->setEnabled(true);
  set_title();
}

void MainWindow::restore_comparison(const session::SessionData& d) {
  // What opening did about a comparison the file did not store (made it again, or why not).
  const QString note = std::exchange(comparison_note_, QString());
  if (!note.isEmpty()) log(note, std::exchange(comparison_note_warns_, false));
  if (!eager_source_ && !graph_source_) return;  // both traces loaded: compared anew
  int eager = -1, graph = -1;
  for (size_t i = 0; i < d.runs.size(); ++i) (d.runs[i].outcome.mode == "graph" ? graph : eager) = static_cast<int>(i);
  for (const session::SessionComparison& c : d.comparisons) {
    if (c.run_a != eager || c.run_b != graph || c.report.empty()) continue;
    const auto j = nlohmann::json::parse(c.report, nullptr, false);
    auto cmp = prof::comparison_from_json(j);
    if (!cmp) {
      log(QString::fromStdString(session_reader_->path() + ": " + cmp.status().message()), true);
      return;
    }
    stored_comparison_ = std::make_shared<const prof::Comparison>(std::move(*cmp));
    update_result_views();
    return;
  }
  if (eager >= 0 && graph >= 0 && note.isEmpty())
    log(tr("The session stores no comparison of its runs; the Compare tab needs both traces loaded"), true);
}

void MainWindow::set_up_autosave() {
  autosave_timer_ = new QTimer(this);
  const int seconds = QSettings().value(QStringLiteral("autosave/seconds"), 60).toInt();
  connect(autosave_timer_, &QTimer::timeout, this, &MainWindow::autosave);
  if (seconds > 0) autosave_timer_->start(seconds * 1000);
  // After every finished job but the autosave itself (and the window's own opens and layouts).
  connect(jobs_, &views::JobTracker::finished, this, [this](views::JobId id, bool delivered) {
    if (id == autosave_job_) {
      autosave_job_ = 0;
      return;
    }
    if (delivered && dirty_ && autosave_timer_->isActive()) QTimer::singleShot(0, this, &MainWindow::autosave);
  });
}

// Whatever a crash would lose: runs, training curves, rank traces (with or without a model open) or
// the numerics. A model alone is not saved: its file holds it.
void MainWindow::autosave() {
  // Never beside timed iterations (a Run's, the pass effects', training's): the save would be in
  // their figures. The job that ends them autosaves after it (set_up_autosave).
  if (autosave_job_ || timing_runs_ || pass_effect_job_ || train_job_ || !has_session()) return;
  if (runs_.empty() && training_.empty() && ranks_->data().lanes.empty() && !numerics_) return;
  dirty_ = false;
  save_session_to(autosave_path(), true);
}

}  // namespace ms::app
