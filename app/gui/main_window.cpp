#include "app/gui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSlider>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QTime>
#include <QToolBar>
#include <QVBoxLayout>

#include <cstdio>

#include "app/gui/run_panel.h"
#include "app/gui/template_dialog.h"
#include "views/common/save_file.h"
#include "views/compare/compare_view.h"
#include "views/graph/inspector.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

namespace {
constexpr int kMaxRecent = 10;
// The Passes dock's narrowest: the placeholder reads as sentences, a pass name as a word or two.
constexpr int kPassesMinWidth = 200;
// A dock's content in a vertical scroll area that takes the dock's width.
QScrollArea* scrolled(QWidget* content) {
  auto* area = new QScrollArea;
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  area->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  area->setWidget(content);
  return area;
}
QIcon icon(const char* name) { return QIcon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(name))); }
}  // namespace

MainWindow::MainWindow() {
  setObjectName(QStringLiteral("MainWindow"));
  setWindowIcon(QIcon(QStringLiteral(":/modescope.svg")));
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  jobs_ = new views::JobTracker(this);
  graph_ = new views::GraphView(jobs_, this);
  build_result_views();  // the graph and the result views share the centre as tabs
  build_docks();
  build_status_bar();
  build_actions();
  connect(jobs_, &views::JobTracker::started, this, &MainWindow::on_job_started);
  connect(jobs_, &views::JobTracker::progressed, this, &MainWindow::on_job_progress);
  connect(jobs_, &views::JobTracker::finished, this, &MainWindow::on_job_finished);
  connect(jobs_, &views::JobTracker::failed, this, &MainWindow::on_job_failed);
  connect(graph_, &views::GraphView::node_selected, this, [this](int node) {
    inspector_->show_node(graph_->model(), node);
    if (node >= 0) {
      const QString why = graph_->fallback_reason(node);
      inspector_->show_fallback(
          !why.isEmpty() || whole_run_fallback_.isEmpty() ? why : tr("the whole run (%1)").arg(whole_run_fallback_));
    }
    const auto* gm = graph_->model();
    show_node_values(gm && node >= 0 && node < static_cast<int>(gm->nodes.size()) &&
                             gm->nodes[static_cast<size_t>(node)].node
                         ? gm->nodes[static_cast<size_t>(node)].node->id.value
                         : 0);
    const auto* m = graph_->model();
    show_fused_origins(m && node >= 0 && node < static_cast<int>(m->nodes.size()) &&
                               m->nodes[static_cast<size_t>(node)].node
                           ? m->nodes[static_cast<size_t>(node)].node->id.value
                           : 0);
    if (!linking_ && m && node >= 0 && node < static_cast<int>(m->nodes.size()) &&
        m->nodes[static_cast<size_t>(node)].node)
      select_node_everywhere(m->nodes[static_cast<size_t>(node)].node->id.value);
  });
  connect(graph_, &views::GraphView::layout_finished, this, [this](int items, double ms) {
    status_text_->setText(tr("%1 items laid out in %2 ms").arg(items).arg(ms, 0, 'f', 0));
  });
  connect(graph_, &views::GraphView::layout_failed, this,
          [this](const QString& m) { log(tr("Layout failed: %1").arg(m), true); });
  QSettings s;
  // The first start opens at 1600x1000; a saved size comes back. Either is fitted to the screen
  // when the window shows (fit_to_screen).
  if (!restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray())) resize(1600, 1000);
  // Without a saved state the docks get their first sizes when the window shows (fit_to_screen).
  dock_sizes_pending_ = !restoreState(s.value(QStringLiteral("window/state")).toByteArray());
  run_panel_->load_settings();
  set_up_autosave();
  update_recent_menu();
  set_title();
  for (QAction* a : needs_model_) a->setEnabled(false);
}

MainWindow::~MainWindow() { jobs_->cancel_all(); }

void MainWindow::build_docks() {
  auto dock = [this](const QString& title, const char* name, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(QLatin1String(name));
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  inspector_ = new views::Inspector(this);
  connect(inspector_, &views::Inspector::origins_requested, this, [this] {
    graph_->focus_linked();
    if (before_ && before_->isVisible()) before_->focus_linked();
  });
  // Both scroll when their content is taller than the dock: what a node or a run shows never sets
  // the window's minimum size (a short screen keeps the window on it).
  auto* inspector_dock = dock(tr("Inspector"), "InspectorDock", scrolled(inspector_), Qt::RightDockWidgetArea);
  run_panel_ = new RunPanel(this);
  // The run form keeps its natural height; the inspector above takes the rest.
  auto* run_scroll = scrolled(run_panel_);
  run_scroll->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
  auto* run_dock = dock(tr("Run"), "RunDock", run_scroll, Qt::RightDockWidgetArea);
  // The inspector and the run form take the whole height; the log and the tables under the graph
  // take the rest of the width, so neither column's minimum sets the other's height.
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  splitDockWidget(inspector_dock, run_dock, Qt::Vertical);

  passes_ = new views::PassListModel(this);
  connect(passes_, &views::PassListModel::enabled_changed, this, [this] {
    const auto off = passes_->disabled();
    status_text_->setText(off.empty()
                              ? tr("Every pass runs in the next Graph-mode run")
                              : tr("The next Graph-mode run leaves out %n pass(es); run it to see what they buy",
                                   nullptr, static_cast<int>(off.size())));
  });
  auto* table = pass_table_ = new QTableView(this);
  table->setModel(passes_);
  table->horizontalHeader()->setSectionResizeMode(views::PassListModel::kName, QHeaderView::Stretch);
  table->horizontalHeader()->setSectionResizeMode(views::PassListModel::kChanged, QHeaderView::ResizeToContents);
  table->horizontalHeader()->setSectionResizeMode(views::PassListModel::kNodes, QHeaderView::ResizeToContents);
  table->horizontalHeader()->setSectionResizeMode(views::PassListModel::kTime, QHeaderView::ResizeToContents);
  table->setWordWrap(false);
  table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
  table->verticalHeader()->hide();
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);  // a stepper: the current pass is the selected one
  table->setObjectName(QStringLiteral("PassTable"));
  table->setTextElideMode(Qt::ElideMiddle);  // only when the dock is narrower than the longest name
  auto* empty = new QLabel(tr("Compiler passes appear here after a Graph-mode compile: each pass, what it "
                              "changed, and the graph after it."),
                           this);
  empty->setWordWrap(true);
  empty->setAlignment(Qt::AlignCenter);
  empty->setMargin(12);
  empty->setEnabled(false);
  pass_stack_ = new QStackedWidget(this);
  pass_stack_->addWidget(empty);
  // The stepper: the table (arrow keys step) and a slider under it, kept in step with each other.
  auto* stepper = new QWidget(this);
  auto* stepper_layout = new QVBoxLayout(stepper);
  stepper_layout->setContentsMargins(0, 0, 0, 0);
  stepper_layout->addWidget(table, 1);
  auto* slider = new QSlider(Qt::Horizontal, stepper);
  slider->setObjectName(QStringLiteral("PassSlider"));
  slider->setToolTip(tr("Step through the passes: the graph after each, coloured against the one before"));
  slider->setTickPosition(QSlider::TicksBelow);
  slider->setPageStep(1);
  stepper_layout->addWidget(slider);
  pass_stack_->addWidget(stepper);
  connect(passes_, &QAbstractItemModel::modelReset, this, [this, slider] {
    pass_stack_->setCurrentIndex(passes_->rowCount() ? 1 : 0);
    if (passes_->rowCount()) size_passes_dock();
    const QSignalBlocker block(slider);
    slider->setRange(0, std::max(0, passes_->rowCount() - 1));
    slider->setValue(0);
  });
  connect(slider, &QSlider::valueChanged, this, [table](int v) { table->selectRow(v); });
  connect(table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this, slider](const QModelIndex& current) {
            const QSignalBlocker block(slider);
            slider->setValue(current.row());
            show_snapshot(current.row());
          });
  pass_stack_->setMinimumWidth(kPassesMinWidth);
  passes_dock_ = dock(tr("Passes"), "PassesDock", pass_stack_, Qt::LeftDockWidgetArea);

  log_ = new QPlainTextEdit(this);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* log_dock = dock(tr("Log"), "LogDock", log_, Qt::BottomDockWidgetArea);
  // What each pass buys: a tab beside the log, raised when a measurement starts.
  tabifyDockWidget(log_dock, build_pass_effect_dock());
  // Every value's error: a tab beside the log, raised when a comparison of both modes arrives.
  tabifyDockWidget(log_dock, build_values_dock());
  log_dock->raise();
}

void MainWindow::build_status_bar() {
  status_text_ = new QLabel(tr("Open a model (Ctrl+O) or drop an .onnx file here"), this);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(false);
  progress_->hide();
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName(QStringLiteral("CancelJobs"));
  cancel_->setToolTip(tr("Cancel the running jobs (Esc)"));
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel_jobs);
  statusBar()->addWidget(status_text_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
}

void MainWindow::build_actions() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* tools = addToolBar(tr("Main"));
  tools->setObjectName(QStringLiteral("MainToolBar"));
  tools->setIconSize(QSize(20, 20));
  tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);

  auto* open = file->addAction(icon("open"), tr("&Open…"), QKeySequence::Open, this, &MainWindow::open_dialog);
  file->addAction(icon("template"), tr("&New from Template…"), QKeySequence::New, this, &MainWindow::new_from_template);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  file->addAction(tr("Open &Session…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), this,
                  &MainWindow::open_session_dialog);
  save_actions_ << file->addAction(tr("&Save Session"), QKeySequence::Save, this, &MainWindow::save_session);
  save_actions_ << file->addAction(tr("Save Session &As…"), QKeySequence::SaveAs, this, &MainWindow::save_session_as);
  needs_model_ << save_actions_;
  file->addSeparator();
  file->addSeparator();
  auto* export_menu = file->addMenu(icon("export"), tr("&Export Graph"));
  needs_model_ << export_menu->addAction(tr("As &SVG…"), this, [this] { export_graph(QStringLiteral("svg")); });
  needs_model_ << export_menu->addAction(tr("As &PNG…"), this, [this] { export_graph(QStringLiteral("png")); });
  needs_model_ << export_menu->addAction(tr("As &DOT…"), this, [this] { export_graph(QStringLiteral("dot")); });
  file->addAction(tr("Export Current &View as PNG…"), this, &MainWindow::export_current_view);
  file->addAction(tr("Export Comparison Table as &CSV…"), this, &MainWindow::export_compare_csv);
  file->addAction(tr("Export &Traces as Chrome JSON…"), this, &MainWindow::export_traces);
  file->addAction(tr("Open &Trace…"), this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open Trace"), QString(), tr("Chrome traces (*.json);;All files (*)"));
    if (!path.isEmpty()) open_trace(path);
  });
  file->addAction(tr("Open &Ranks…"), this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open Ranks (one training trace per rank)"),
                                                            QString(), tr("Chrome traces (*.json);;All files (*)"));
    if (!paths.isEmpty()) open_ranks(paths);
  });
  file->addSeparator();
  close_action_ = file->addAction(tr("&Close"), QKeySequence::Close, this, &MainWindow::close_model);
  needs_model_ << close_action_;
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  auto* view = menuBar()->addMenu(tr("&View"));
  side_by_side_ = view->addAction(tr("Passes Side by Side (Before | After)"));
  side_by_side_->setCheckable(true);
  connect(side_by_side_, &QAction::toggled, this, [this](bool on) {
    if (!on) before_->hide();
    const QModelIndex cur = pass_table_ ? pass_table_->currentIndex() : QModelIndex();
    if (on && cur.isValid()) show_snapshot(cur.row());
  });
  // Find searches what the centre shows: the comparison's rows on the Compare tab, else the graph.
  auto* find = view->addAction(icon("search"), tr("&Find…"), QKeySequence::Find, this, [this] {
    if (tabs_->currentWidget() == static_cast<QWidget*>(compare_)) {
      compare_->focus_filter();
      return;
    }
    tabs_->setCurrentIndex(0);
    graph_->show_search();
  });
  auto* fit = view->addAction(icon("fit"), tr("&Fit to Window"), QKeySequence(Qt::CTRL | Qt::Key_0), graph_,
                              &views::GraphView::fit);
  auto* zin = view->addAction(icon("zoom-in"), tr("Zoom &In"), graph_, &views::GraphView::zoom_in);
  zin->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::Key_Plus), QKeySequence(Qt::Key_Equal)});
  auto* zout = view->addAction(icon("zoom-out"), tr("Zoom &Out"), graph_, &views::GraphView::zoom_out);
  zout->setShortcuts({QKeySequence::ZoomOut, QKeySequence(Qt::Key_Minus)});
  needs_model_ << find << fit << zin << zout;
  view->addSeparator();
  auto* colour = view->addMenu(tr("&Colour Nodes By"));
  auto* group = new QActionGroup(this);
  auto add_mode = [&](const QString& text, views::ColorMode m, bool enabled) {
    QAction* a = colour->addAction(text);
    a->setCheckable(true);
    a->setEnabled(enabled);
    a->setChecked(m == views::ColorMode::Category && enabled);
    group->addAction(a);
    if (enabled) connect(a, &QAction::triggered, this, [this, m] { graph_->set_color_mode(m); });
    return a;
  };
  add_mode(tr("Op Category"), views::ColorMode::Category, true);
  add_mode(tr("Op Type"), views::ColorMode::OpType, true);
  // Overlays from a profiled run; enabled once runs record per-op traces.
  add_mode(tr("Time (needs a profiled run)"), views::ColorMode::Category, false);
  add_mode(tr("Memory (needs a profiled run)"), views::ColorMode::Category, false);
  add_mode(tr("Stream (needs a profiled run)"), views::ColorMode::Category, false);
  view->addSeparator();
  auto* expand = view->addAction(tr("&Expand All Groups"), this, [this] {
    if (!graph_->model()) return;
    // Past a few thousand boxes dot takes minutes and the picture is a grey smear: open as much as
    // stays readable and say so.
    constexpr int kMaxExpanded = 2000;
    if (graph_->model()->drawn_nodes > kMaxExpanded) {
      graph_->set_collapsed(views::default_collapsed(*graph_->model(), kMaxExpanded));
      log(tr("The graph has %1 nodes: opened groups up to about %2 boxes; double-click a group to open it")
              .arg(graph_->model()->drawn_nodes)
              .arg(kMaxExpanded));
      return;
    }
    graph_->set_collapsed({});
  });
  auto* collapse = view->addAction(tr("&Collapse Groups"), this, [this] {
    if (graph_->model()) graph_->set_collapsed(views::default_collapsed(*graph_->model(), 60));
  });
  needs_model_ << expand << collapse;
  view->addSeparator();
  build_keyboard_actions(view);
  view->addSeparator();
  build_theme_menu(view->addMenu(tr("&Theme")));
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());

  auto* runm = menuBar()->addMenu(tr("&Run"));
  run_action_ = runm->addAction(icon("run"), tr("&Run"), QKeySequence(Qt::Key_F5), this, [this] { run(); });
  needs_model_ << run_action_;
  auto* cancel =
      runm->addAction(icon("stop"), tr("&Cancel"), QKeySequence(Qt::Key_Escape), this, &MainWindow::cancel_jobs);
  cancel->setShortcutContext(Qt::WindowShortcut);
  connect(run_panel_, &RunPanel::run_requested, this, [this] { run(); });

  auto* numerics = menuBar()->addMenu(tr("&Numerics"));
  numerics_actions_ << numerics->addAction(tr("&Compare Values of Both Modes"), QKeySequence(Qt::Key_F6), this,
                                           [this] { start_numerics(session::NumericsJob::Kind::Diff); });
  numerics_actions_ << numerics->addAction(tr("&Bisect Passes"), this,
                                           [this] { start_numerics(session::NumericsJob::Kind::Bisect); });
  numerics_actions_ << numerics->addAction(tr("Find the First &NaN or Infinity"), this,
                                           [this] { start_numerics(session::NumericsJob::Kind::Trap); });
  needs_model_ << numerics_actions_;
  auto* tol = numerics->addMenu(tr("&Tolerance"));
  auto* tol_group = new QActionGroup(this);
  for (double t : {1e-6, 1e-5, 1e-4, 1e-3, 1e-2}) {
    QAction* a = tol->addAction(QString::number(t, 'g', 1));
    a->setCheckable(true);
    a->setChecked(t == numerics_tol_);
    tol_group->addAction(a);
    connect(a, &QAction::triggered, this, [this, t] { numerics_tol_ = t; });
  }

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Modescope"), this, [this] {
    QMessageBox::about(this, tr("About Modescope"),
                       tr("<b>Modescope %1</b><p>Runs a model in PyNative and Graph mode and shows what the "
                          "compiler and the runtime do with it.</p>")
                           .arg(QApplication::applicationVersion()));
  });

  tools->addAction(open);
  tools->addAction(run_action_);
  tools->addSeparator();
  tools->addAction(fit);
  tools->addAction(zin);
  tools->addAction(zout);
  tools->addAction(find);
  auto* exp = tools->addAction(icon("export"), tr("Export"), this, [this] { export_graph(QStringLiteral("svg")); });
  needs_model_ << exp;
}

void MainWindow::update_recent_menu() {
  recent_menu_->clear();
  const QStringList files = QSettings().value(QStringLiteral("recent")).toStringList();
  for (const QString& f : files) {
    QAction* a = recent_menu_->addAction(QFileInfo(f).fileName(), this, [this, f] { open(f); });
    a->setToolTip(f);
    a->setStatusTip(f);
  }
  recent_menu_->setEnabled(!files.isEmpty());
  if (!files.isEmpty()) {
    recent_menu_->addSeparator();
    recent_menu_->addAction(tr("Clear List"), this, [this] {
      QSettings().remove(QStringLiteral("recent"));
      update_recent_menu();
    });
  }
}

void MainWindow::add_recent(const QString& path) {
  if (!QFileInfo::exists(path)) return;  // zoo: and generated: models are rebuilt, not reopened
  QSettings s;
  QStringList files = s.value(QStringLiteral("recent")).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  files.removeAll(abs);
  files.prepend(abs);
  while (files.size() > kMaxRecent) files.removeLast();
  s.setValue(QStringLiteral("recent"), files);
  update_recent_menu();
}

void MainWindow::open_dialog() {
  QSettings s;
  const QString dir = s.value(QStringLiteral("last_dir")).toString();
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open Model"), dir, tr("ONNX models (*.onnx);;All files (*)"));
  if (path.isEmpty()) return;
  s.setValue(QStringLiteral("last_dir"), QFileInfo(path).absolutePath());
  open(path);
}

void MainWindow::new_from_template() {
  TemplateDialog dlg(this);
  if (dlg.exec() == QDialog::Accepted && !dlg.source().isEmpty()) open(dlg.source());
}

void MainWindow::export_graph(const QString& format) {
  if (!doc_) return;
  const QString base = QFileInfo(doc_->source).completeBaseName();
  const QString filter = format == QLatin1String("svg")   ? tr("SVG images (*.svg)")
                         : format == QLatin1String("png") ? tr("PNG images (*.png)")
                                                          : tr("Graphviz DOT (*.dot *.gv)");
  const QString path = QFileDialog::getSaveFileName(this, tr("Export Graph"), base + "." + format, filter);
  if (path.isEmpty()) return;
  bool ok = false;
  QString error = tr("Could not write %1").arg(path);
  if (format == QLatin1String("svg"))
    ok = graph_->export_svg(path);
  else if (format == QLatin1String("png"))
    ok = graph_->export_png(path);
  else
    ok = views::save_bytes(path, graph_->dot_text().toUtf8(), &error);
  if (ok)
    log(tr("Exported the graph to %1").arg(path));
  else
    log(error, true);
}

bool MainWindow::show_pass(int row) {
  if (row < 0 || row >= passes_->rowCount()) return false;
  pass_table_->selectRow(row);
  return true;
}

void MainWindow::log(const QString& line, bool error) {
  const QString stamp = QTime::currentTime().toString(QStringLiteral("HH:mm:ss"));
  log_->appendPlainText(stamp + (error ? QStringLiteral("  error: ") : QStringLiteral("  ")) + line);
  if (echo_log_) std::fprintf(stderr, "%s%s\n", error ? "error: " : "", qPrintable(line));
  if (error) status_text_->setText(line);
}

void MainWindow::set_title() {
  setWindowTitle(doc_ ? tr("%1 — Modescope").arg(QFileInfo(doc_->source).fileName()) : tr("Modescope"));
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/state"), saveState());
  run_panel_->save_settings();
  jobs_->cancel_all();
  QFile::remove(running_marker_path());  // a clean exit: the next start offers no restore
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) {
      open(u.toLocalFile());
      e->acceptProposedAction();
      return;
    }
}

}  // namespace ms::app
