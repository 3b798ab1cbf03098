// The main window: graph view in the centre; docks for the inspector, the pass list, the run panel
// and the log; a status bar with progress and Cancel for the running job. All engine work goes
// through one JobTracker.
#pragma once

#include <QMainWindow>
#include <QPointer>

#include <functional>
#include <memory>
#include <optional>

#include "app/gui/document.h"
#include "app/session/numerics.h"
#include "app/session/session_file.h"
#include "views/graph/graph_view.h"
#include "views/jobs/job_tracker.h"

namespace ms::compiler {
struct GraphDiff;
}
namespace ms::prof {
struct Comparison;
}

class QLabel;
class QProgressBar;
class QPushButton;
class QPlainTextEdit;
class QMenu;
class QTableView;
class QStackedWidget;
class QTabWidget;
class QDockWidget;
class QTimer;

namespace ms::views {
class Inspector;
class PassListModel;
class TimelineView;
class MemoryView;
class CompareView;
class PassDeltaView;
class ValueDiffView;
class RanksView;
}  // namespace ms::views

namespace ms::app {

class RunPanel;
class TrainPanel;
class StartPage;
class SessionTraceSource;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  MainWindow();
  ~MainWindow() override;

  // Opens a model in a job; the graph shows when its first layout is done. A .modescope file opens
  // as a session (open_session).
  void open(const QString& source);
  // Session files (main_window_sessionfile.cpp): opening restores the model, the runs (passes,
  // timeline, memory, comparison) and the UI state (tab, pass shown, selection); saving snapshots
  // the session here and writes it in a job.
  void open_session(const QString& path);
  void save_session_to(const QString& path, bool autosave);
  session::SessionData session_snapshot() const;
  // True from a session's model opening until its UI state is back: the pass it showed laid out
  // and its selected node selected there (session_restored then).
  bool restoring_session() const { return restoring_session_; }
  static QString autosave_path();
  static QString running_marker_path();
  // Where training on several ranks keeps each job's reports and traces (a folder per job; the
  // ranks' command lines name it).
  static QString ranks_folder();
  void close_model();
  // Runs the modes chosen in the run panel (or `modes` when given), one job each, in order.
  void run(std::vector<std::string> modes = {});
  void cancel_jobs();

  views::GraphView* graph_view() const { return graph_; }
  views::JobTracker* jobs() const { return jobs_; }
  RunPanel* run_panel() const { return run_panel_; }
  const OpenedModel* document() const { return doc_ ? doc_.get() : nullptr; }
  void log(const QString& line, bool error = false);
  // Selects row `row` of the pass list (0 = the input graph): the graph view shows that snapshot.
  bool show_pass(int row);
  // Selects the first fused node of the shown pass (its origins light up); false when none.
  bool select_first_fused_node();
  // Pass stepper: the graph before the picked pass beside the graph after it, pan and zoom in step.
  void set_side_by_side(bool on);
  // Also print log lines on stderr (headless modes: --screenshot, --bench-open).
  void set_echo_log(bool on) { echo_log_ = on; }
  bool busy() const;
  // Autosaves started, and how many of them while a run, the pass effects or training timed its
  // iterations (none should: the scenario checks).
  int autosaves() const { return autosaves_; }
  int autosaves_beside_runs() const { return autosaves_beside_runs_; }
  // The result views (tabs beside the graph), filled from the runs' recorded traces.
  views::TimelineView* timeline_view() const { return timeline_; }
  views::MemoryView* memory_view() const { return memory_; }
  views::CompareView* compare_view() const { return compare_; }
  QWidget* pass_list_widget() const;
  QTabWidget* tabs() const { return tabs_; }
  // The start page (an empty window's centre) or the tabs.
  void show_start_page(bool on);
  StartPage* start_page() const { return start_page_; }
  // Linked selection: selects the node (NodeId value, 0 for none) in every view.
  void select_node_everywhere(uint64_t node);
  // "What did this pass buy me": re-compiles and re-runs without each unchecked pass (every pass
  // that changed the graph when none is) in a job; the Pass Effect dock shows the table. False
  // when there is nothing to measure.
  bool measure_pass_effects();
  views::PassDeltaView* pass_delta_view() const { return pass_delta_; }
  // Writes timeline.png, memory.png, compare.png (and compare.csv) into dir; false if one failed.
  bool export_result_views(const QString& dir);
  // Writes each run's trace as Chrome JSON to BASE-pynative.json and BASE-graph.json (BASE without
  // its .json); false when there is none or one failed (logged).
  bool export_traces_to(const QString& base);
  // Trains the open zoo template in the Training tab's modes (one job, runs in order), the loss
  // curves growing live; false (with a message) when the open model is not a zoo template.
  bool train();
  TrainPanel* train_panel() const { return train_panel_; }
  // Numerics, each a job on the open model with the run panel's settings (false when no model is
  // open or one is running): Diff captures every value of both modes and compares them (the graph
  // coloured by error, the Values dock listing each value's error, the inspector showing a node's
  // values); Bisect names the pass and rewrite that take the outputs past the tolerance; Trap stops
  // each mode at its first NaN or infinity.
  bool start_numerics(session::NumericsJob::Kind kind);
  void set_numerics_tolerance(double tol) { numerics_tol_ = tol; }
  const session::DiffResult* numerics() const { return numerics_.get(); }
  // The Values dock: every value of the last comparison with its error, worst first.
  views::ValueDiffView* value_diff_view() const { return value_diff_; }
  // The item models behind the views as text, one row a line (main_window_models.cpp): the
  // comparison table, the pass list, the Values dock, the selected node with the inspector's rows
  // and the training curves' points. The session
  // round trip compares the saving app's with the reopening app's.
  QString models_text() const;

 Q_SIGNALS:
  void model_opened(bool ok);
  void session_restored();
  void runs_finished(bool ok);
  void pass_effects_measured(bool ok);
  void training_finished(bool ok);
  void numerics_finished(bool ok);

 protected:
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void build_actions();
  void build_docks();
  void build_status_bar();
  QDockWidget* build_pass_effect_dock();
  QDockWidget* build_values_dock();
  std::vector<std::string> passes_to_measure() const;
  // Layout (main_window_layout.cpp): the window within its screen's available area; the Passes dock
  // as wide as its columns' contents (up to a third of the window) when passes first show.
  void fit_to_screen();
  // View > Theme: System, Light, Dark (theme.h); a change repaints every view in the new palette.
  void build_theme_menu(QMenu* menu);
  // Keyboard: Ctrl+1..5 show the centre's tabs, Alt+1/2/3 put the focus in the Passes list, the
  // inspector and the run form.
  void build_keyboard_actions(QMenu* view);
  void size_passes_dock();
  QDockWidget* passes_dock_ = nullptr;
  bool passes_dock_sized_ = false;
  bool dock_sizes_pending_ = true;
  void update_recent_menu();
  void add_recent(const QString& path);
  void open_dialog();
  void new_from_template();
  void export_graph(const QString& format);
  void on_opened(OpenedModel m, double total_ms);
  void on_job_started(views::JobId id, const QString& title);
  void on_job_progress(views::JobId id, double fraction, const QString& text);
  void on_job_finished(views::JobId id, bool delivered);
  void run_next(std::vector<std::string> modes, bool ok_so_far);
  void fail(const Status& s, const QString& what);
  void show_passes(const std::vector<PassOutcome>& passes);
  void show_snapshot(int row);
  // A fused node of the shown pass (NodeId value): its origins outlined in the link colour and
  // listed in the inspector; any other node clears that.
  void show_fused_origins(uint64_t node);
  void set_title();
  void build_result_views();
  void clear_results();
  void take_result(const RunOutcome& r);
  void update_result_views();
  void export_current_view();
  void export_compare_csv();
  void export_traces();
  // After a Graph-mode run: with passes unchecked, what they bought against the last full-pipeline run.
  void report_pass_effect(const RunOutcome& r);

 public:
  // Imports a trace the profiler can read (its own or foreign Chrome-trace JSON) into the result
  // views, as the PyNative or Graph run after its "mode" metadata (PyNative when it has none).
  void open_trace(const QString& path);
  // File > Open Ranks (main_window_ranks.cpp): one training trace per rank (train --profile
  // 'DIR{rank}' under mpirun) into the Ranks tab, and (`show_losses`) each rank's loss curve from
  // its trace into the Training tab, kept by the session.
  void open_ranks(const QStringList& paths, bool show_losses = true);
  views::RanksView* ranks_view() const { return ranks_; }
  // Training with ranks > 1: modescope-cli train under mpirun, each mode in turn, in a job; each
  // rank's loss curve, the ranks' traces in the Ranks tab. False (one line saying why) without
  // mpirun or modescope-cli.
  bool train_ranks();

 Q_SIGNALS:
  void ranks_opened(bool ok);

 private:
  views::JobTracker* jobs_;
  views::GraphView* graph_;
  views::Inspector* inspector_;
  views::PassListModel* passes_;
  QStackedWidget* pass_stack_;
  QTableView* pass_table_ = nullptr;
  RunPanel* run_panel_;
  QPlainTextEdit* log_;
  QLabel* status_text_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QMenu* recent_menu_;
  QAction* run_action_;
  QAction* close_action_;
  QList<QAction*> needs_model_;
  QList<QAction*> numerics_actions_;  // off while a numerics job runs (one at a time)
  void set_numerics_actions_enabled(bool on);
  std::unique_ptr<OpenedModel> doc_;
  // The open model's compiled graphs, kept between runs (shared with the run jobs that use them).
  std::shared_ptr<session::CompileCache> compiled_ = std::make_shared<session::CompileCache>();
  std::map<views::JobId, QString> active_;  // job -> title
  views::JobId open_job_ = 0;
  bool echo_log_ = false;
  QTabWidget* tabs_ = nullptr;
  QStackedWidget* centre_ = nullptr;
  StartPage* start_page_ = nullptr;
  views::TimelineView* timeline_ = nullptr;
  views::MemoryView* memory_ = nullptr;
  views::CompareView* compare_ = nullptr;
  views::RanksView* ranks_ = nullptr;
  views::PassDeltaView* pass_delta_ = nullptr;
  TrainPanel* train_panel_ = nullptr;
  QDockWidget* pass_dock_ = nullptr;
  views::JobId pass_effect_job_ = 0;
  void pass_effect_dropped();
  views::JobId train_job_ = 0;
  // The training job ended without its result (cancelled, failed): the Train button comes back.
  void training_dropped();
  void on_job_failed(views::JobId id, const QString& title, const QString& message);
  views::JobId numerics_job_ = 0;
  double numerics_tol_ = 1e-4;
  std::shared_ptr<const session::DiffResult> numerics_;    // the last comparison of both modes' values
  std::vector<session::SessionRun> runs_;                  // the runs shown, as a session keeps them
  std::shared_ptr<session::SessionData> pending_session_;  // applied when its model has opened
  std::optional<session::SessionModel> session_model_;     // the model as the open session has it
  QString session_path_;                                   // where Save writes ("" : Save As)
  QTimer* autosave_timer_ = nullptr;
  views::JobId autosave_job_ = 0;
  static constexpr int kPassEffectMinIterations = 10;  // timed iterations of each pass-effect run, at least
  bool timing_runs_ = false;  // a Run press's runs are under way: no autosave beside their iterations
  int autosaves_ = 0, autosaves_beside_runs_ = 0;  // started; of them, while iterations were timed
  bool dirty_ = false;                             // runs changed since the last autosave
  void save_session();
  void save_session_as();
  void open_session_dialog();
  void apply_session(const session::SessionData& d);
  // A session of rank traces alone (no model): the Ranks tab and the ranks' curves, whatever was open
  // closed first.
  void apply_session_without_model(const session::SessionData& d);
  // Something to save: a model, or rank lanes or training curves without one.
  bool has_session() const;
  QList<QAction*> save_actions_;  // Save Session, Save Session As: enabled by a model or by ranks
  // The session's selected node (NodeId value; 0 none) waits for the graph it was selected in: the
  // snapshot of the pass shown is laid out in a job (show_snapshot), which would clear a selection
  // made before it. restore_selection() selects it in the graph shown, then emits session_restored.
  uint64_t restore_selection_ = 0;
  bool restoring_session_ = false;
  views::JobId snapshot_job_ = 0;  // the last snapshot layout started (show_snapshot)
  void restore_selection();
  void log_constants_not_kept(const std::vector<session::SessionRun>& runs,
                              const session::SnapshotConstantBudget& budget);
  // Why the snapshots' constants the session file did not keep are not (the inspector says it).
  QString constants_not_kept_why_;
  std::vector<Tensor> not_kept_constants_;  // snapshot weights a session file did not keep (show_passes)
  // With a trace kept in the file: the comparison the session stored for its PyNative and Graph runs.
  void restore_comparison(const session::SessionData& d);
  // The runs' fallbacks (main_window_results.cpp): the nodes that fell back badged in the graph (of
  // those op types where a fallback names no nodes), their events marked in the timeline; a whole
  // run on another backend said in the inspector.
  void update_fallback_marks();
  QString whole_run_fallback_;
  // Draws `curves` in the Training tab (one series each: a mode, or a rank of a multi-rank run)
  // and keeps them for the session (main_window_train.cpp; also a restored session's curves).
  void show_training(const std::vector<session::TrainingCurve>& curves);
  // The values' comparison of a restored session (main_window_numerics.cpp).
  void restore_numerics(const session::SessionNumerics& n);
  // Traces the open session keeps in its file (too big to load whole): the timeline reads them
  // window by window through the reader.
  std::shared_ptr<const session::SessionReader> session_reader_, pending_reader_;
  std::shared_ptr<SessionTraceSource> eager_source_, graph_source_;
  // The comparison the Compare tab shows (saved with the session), and the one a session stored
  // for its runs, shown while a trace stays in the file (the comparison needs every event).
  std::shared_ptr<const prof::Comparison> comparison_, stored_comparison_;
  QString comparison_note_;  // what opening a session did about a comparison its file did not store
  bool comparison_note_warns_ = false;
  std::vector<session::TrainingCurve> training_;  // the last training, as the session keeps it
  std::string bisect_summary_;                    // the last bisection's line
  void set_up_autosave();
  void autosave();
  void numerics_dropped();
  void take_diff(std::shared_ptr<const session::DiffResult> d);
  views::ValueDiffView* value_diff_ = nullptr;
  QDockWidget* values_dock_ = nullptr;
  // The input graph (row 0 of the passes) with the PyNative node (NodeId value) selected.
  void show_pynative_node(uint64_t node);
  void take_bisect(const session::BisectResult& b);
  void take_traps(const std::vector<session::CaptureResult>& traps);
  // The inspector's Values section for a node (NodeId value; 0 none).
  void show_node_values(uint64_t node);
  prof::TracePtr eager_trace_, graph_trace_;
  std::shared_ptr<const runtime::MemoryPlan> plan_;
  bool linking_ = false;
  views::GraphView* before_ = nullptr;  // side-by-side mode: the graph before the picked pass
  QAction* side_by_side_ = nullptr;
  bool syncing_ = false;
  void show_before(std::shared_ptr<const ir::Graph> before, std::shared_ptr<const compiler::GraphDiff> diff);
  void sync_views(views::GraphView* from, views::GraphView* to);
  std::shared_ptr<const compiler::GraphDiff> shown_diff_;  // the pass the graph view shows
  std::shared_ptr<const ir::Graph> shown_before_;
  std::vector<std::string> disabled_;        // passes the last Graph-mode run left out
  std::optional<RunOutcome> full_pipeline_;  // the last Graph-mode run with every pass  // guards
                                             // select_node_everywhere against the views' echo
};

}  // namespace ms::app
