// MainWindow: the result views (timeline, memory heatmap, PyNative-vs-Graph comparison) as tabs
// beside the graph, filled from the runs' recorded traces, and the linked selection across them.
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QPainter>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>

#include <QTableView>
#include "app/gui/train_panel.h"

#include "app/gui/main_window.h"
#include "app/gui/session_trace_source.h"
#include "app/gui/start_page.h"
#include "engine/compiler/diff.h"
#include "profiler/analysis/compare.h"
#include "profiler/io/chrome_trace.h"
#include "views/common/axis.h"
#include "views/common/save_file.h"
#include "views/compare/compare_view.h"
#include "views/compare/pass_delta_view.h"
#include "views/memory/memory_view.h"
#include "views/models/pass_list_model.h"
#include "views/timeline/ranks_view.h"
#include "views/timeline/timeline_view.h"

namespace ms::app {

void MainWindow::build_result_views() {
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("ResultTabs"));
  tabs_->setDocumentMode(true);
  timeline_ = new views::TimelineView(tabs_);
  memory_ = new views::MemoryView(tabs_);
  compare_ = new views::CompareView(tabs_);
  auto* split = new QSplitter(Qt::Horizontal, tabs_);
  before_ = new views::GraphView(jobs_, split);
  before_->hide();
  split->addWidget(before_);
  split->addWidget(graph_);
  tabs_->addTab(split, tr("Graph"));
  connect(graph_->canvas(), &views::GraphCanvas::viewport_changed, this, [this] { sync_views(graph_, before_); });
  connect(before_->canvas(), &views::GraphCanvas::viewport_changed, this, [this] { sync_views(before_, graph_); });
  tabs_->addTab(timeline_, tr("Timeline"));
  tabs_->addTab(memory_, tr("Memory"));
  tabs_->addTab(compare_, tr("Compare"));
  train_panel_ = new TrainPanel(tabs_);
  tabs_->addTab(train_panel_, tr("Training"));
  ranks_ = new views::RanksView(tabs_);
  tabs_->addTab(ranks_, tr("Ranks"));
  connect(train_panel_, &TrainPanel::train_requested, this, [this] { train(); });
  // The centre: the start page until a model, a session or a trace opens, then the tabs.
  start_page_ = new StartPage(this);
  centre_ = new QStackedWidget(this);
  centre_->addWidget(start_page_);
  centre_->addWidget(tabs_);
  setCentralWidget(centre_);
  connect(start_page_, &StartPage::open_requested, this, &MainWindow::open);
  connect(start_page_, &StartPage::open_dialog_requested, this, &MainWindow::open_dialog);
  connect(start_page_, &StartPage::template_requested, this, &MainWindow::new_from_template);
  connect(timeline_, &views::TimelineView::node_selected, this, &MainWindow::select_node_everywhere);
  connect(memory_, &views::MemoryView::node_selected, this, &MainWindow::select_node_everywhere);
  connect(compare_, &views::CompareView::node_selected, this, &MainWindow::select_node_everywhere);
}

void MainWindow::show_start_page(bool on) {
  if (on) start_page_->refresh();
  centre_->setCurrentWidget(on ? static_cast<QWidget*>(start_page_) : tabs_);
}

void MainWindow::set_side_by_side(bool on) { side_by_side_->setChecked(on); }

void MainWindow::sync_views(views::GraphView* from, views::GraphView* to) {
  // Same scale and the same scene point in the centre: both layouts run top-down from the input.
  if (syncing_ || !before_->isVisible()) return;
  syncing_ = true;
  to->canvas()->setTransform(from->canvas()->transform());
  to->canvas()->centerOn(from->canvas()->mapToScene(from->canvas()->viewport()->rect().center()));
  syncing_ = false;
}

void MainWindow::show_before(std::shared_ptr<const ir::Graph> before, std::shared_ptr<const compiler::GraphDiff> diff) {
  if (!side_by_side_ || !side_by_side_->isChecked() || !before) {
    before_->hide();
    return;
  }
  jobs_->start(
      QStringLiteral("before"), tr("Showing the graph before the pass"), this,
      [before](views::JobContext& ctx)
          -> Expected<std::pair<std::shared_ptr<const views::GraphModel>, views::PreparedView>> {
        ctx.progress(-1, QObject::tr("Laying out the graph"));
        auto model = views::GraphModel::build(before);
        auto view = views::prepare_view(*model, views::default_collapsed(*model));
        if (!view) return std::move(view).take_status();
        return std::make_pair(model, std::move(*view));
      },
      [this, diff](Expected<std::pair<std::shared_ptr<const views::GraphModel>, views::PreparedView>> r) {
        if (!r) return;
        before_->show();
        before_->show_prepared(r->first, std::move(r->second));
        // The before side: what goes away red, what gets rewritten orange.
        std::unordered_map<uint64_t, views::GraphView::DiffMark> marks;
        for (auto id : diff->removed) marks[id.value] = views::GraphView::DiffMark::Removed;
        for (const auto& f : diff->fused)
          for (auto id : f.from) marks[id.value] = views::GraphView::DiffMark::Removed;
        for (auto id : diff->rewritten) marks[id.value] = views::GraphView::DiffMark::Rewritten;
        before_->set_diff(std::move(marks), {});
        // A fused node already selected on the after side: its origins light up here too.
        if (!graph_->linked().empty()) before_->set_linked(graph_->linked());
        sync_views(graph_, before_);
      });
}

QWidget* MainWindow::pass_list_widget() const { return pass_table_ ? static_cast<QWidget*>(pass_table_) : nullptr; }

void MainWindow::select_node_everywhere(uint64_t node) {
  if (linking_) return;
  linking_ = true;
  timeline_->set_selected_node(node);
  memory_->set_selected_node(node);
  compare_->set_selected_node(node);
  if (node && graph_->model()) {
    const int i = graph_->model()->index_of(ir::NodeId{node});
    if (i >= 0 && i != graph_->selected_node()) graph_->select_node(i);
  }
  linking_ = false;
}

void MainWindow::update_fallback_marks() {
  views::FallbackMarks graph_marks;
  std::unordered_map<uint64_t, std::string> timeline_nodes;
  whole_run_fallback_.clear();
  for (const session::SessionRun& r : runs_) {
    // The graph the run ran when not its input graph (Graph mode: the last snapshot, the compiled
    // graph), where a node that fell back may stand for several of the input graph's.
    const ir::Graph* ran = nullptr;
    for (auto p = r.outcome.passes.rbegin(); p != r.outcome.passes.rend() && !ran; ++p) ran = p->graph.get();
    for (const runtime::Fallback& f : r.outcome.fallbacks) {
      const QString why = QString::fromStdString(f.reason) + tr(" (%1 run)").arg(QString::fromStdString(r.label));
      if (f.op == "*") {
        whole_run_fallback_ = why;
      } else if (f.nodes.empty()) {
        graph_marks.add_op(f.op, why);  // a session written before fallbacks named their nodes
      } else {
        graph_marks.add_nodes(f.nodes, why, ran);
        for (uint64_t id : f.nodes) {  // the events of those nodes themselves, in the runs' traces
          std::string& t = timeline_nodes[id];
          t += (t.empty() ? "" : "; ") + why.toStdString();
        }
      }
    }
  }
  std::map<std::string, std::string> timeline_ops;
  for (const auto& [op, why] : graph_marks.ops) timeline_ops[op] = why.toStdString();
  graph_->set_fallbacks(std::move(graph_marks));
  timeline_->set_fallbacks(std::move(timeline_ops), std::move(timeline_nodes));
}

void MainWindow::clear_results() {
  runs_.clear();
  update_fallback_marks();
  eager_trace_.reset();
  graph_trace_.reset();
  eager_source_.reset();
  graph_source_.reset();
  stored_comparison_.reset();
  plan_.reset();
  update_result_views();
}

void MainWindow::take_result(const RunOutcome& r) {
  stored_comparison_.reset();
  if (r.mode == "graph") {
    graph_trace_ = r.trace;
    graph_source_.reset();
    plan_ = r.plan;
  } else {
    eager_trace_ = r.trace;
    eager_source_.reset();
  }
  update_result_views();
}

void MainWindow::update_result_views() {
  std::vector<std::pair<std::string, prof::TracePtr>> runs;
  if (eager_trace_) runs.emplace_back("PyNative", eager_trace_);
  if (graph_trace_) runs.emplace_back("Graph", graph_trace_);
  timeline_->set_runs(runs);
  // Traces kept in the session file: read window by window.
  if (!eager_trace_ && eager_source_) timeline_->add_windowed_run("PyNative", eager_source_);
  if (!graph_trace_ && graph_source_) timeline_->add_windowed_run("Graph", graph_source_);
  // A trace kept in the file: the memory views read its first iterations' ops (and its blocks).
  const prof::TracePtr eager = eager_trace_    ? eager_trace_
                               : eager_source_ ? eager_source_->first_iterations()
                                               : nullptr;
  const prof::TracePtr graph = graph_trace_    ? graph_trace_
                               : graph_source_ ? graph_source_->first_iterations()
                                               : nullptr;
  std::vector<views::MemPanel> panels;
  if (eager) panels.push_back(views::memory_panel_from_trace(*eager, "PyNative · recorded (pool)"));
  if (graph) panels.push_back(views::memory_panel_from_trace(*graph, "Graph · recorded (arena)"));
  if (plan_) panels.push_back(views::memory_panel_from_plan(*plan_, graph.get(), "Graph · planned (arena)"));
  memory_->set_panels(std::move(panels));
  // The comparison needs both traces whole; with one kept in the file, the one the session stored.
  comparison_.reset();
  if (eager_trace_ && graph_trace_)
    comparison_ = std::make_shared<const prof::Comparison>(prof::compare_runs(*eager_trace_, *graph_trace_));
  else if (eager && graph)
    comparison_ = stored_comparison_;
  if (comparison_)
    compare_->set_comparison(*comparison_);
  else
    compare_->clear();
}

bool MainWindow::export_result_views(const QString& dir) {
  bool ok = true;
  // Views in hidden tabs have no size of their own: give them the graph view's.
  // (The graph tab's size, not the graph view's: side by side, that is half of it.)
  QWidget* graph_tab = tabs_->widget(0);
  const QSize size = graph_tab && graph_tab->width() > 100 ? graph_tab->size() : QSize(1400, 800);
  for (QWidget* w :
       {static_cast<QWidget*>(timeline_), static_cast<QWidget*>(memory_), static_cast<QWidget*>(compare_)}) {
    w->resize(size);
    w->ensurePolished();
  }
  // The whole span selected: the statistics line shows time and share per op type.
  if (!timeline_->model().runs().empty()) timeline_->select_range(0, timeline_->model().span_ns());
  ok &= timeline_->export_png(dir + QStringLiteral("/timeline.png"));
  ok &= memory_->export_png(dir + QStringLiteral("/memory.png"));
  // The same heatmap over recorded time, coloured by producing node.
  if (!memory_->panels().empty()) {
    const auto axis = memory_->x_axis();
    const auto colour = memory_->color_by();
    memory_->set_x_axis(views::MemoryView::XAxis::Time);
    memory_->set_color_by(views::MemoryView::ColorBy::Node);
    ok &= memory_->export_png(dir + QStringLiteral("/memory_time.png"));
    memory_->set_x_axis(axis);
    memory_->set_color_by(colour);
  }
  ok &= compare_->export_png(dir + QStringLiteral("/compare.png"));
  ok &= compare_->export_csv(dir + QStringLiteral("/compare.csv"));
  // pass_delta.png: what each pass buys, once measured (--pass-effect).
  if (pass_delta_->model()->rowCount() > 0) {
    pass_delta_->resize(std::max(900, size.width() * 3 / 4),
                        150 + pass_delta_->model()->rowCount() * (fontMetrics().height() + 8));
    ok &= pass_delta_->export_png(dir + QStringLiteral("/pass_delta.png"));
    ok &= pass_delta_->export_csv(dir + QStringLiteral("/pass_delta.csv"));
  }
  // passes.png: the pass list beside the graph as it stands (after --show-pass: coloured by its diff).
  if (QWidget* p = pass_list_widget(); p && !passes_->passes().empty()) {
    const QPixmap list = p->grab(), graph = graph_->grab();
    QImage img(list.width() + graph.width() + 6, std::max(list.height(), graph.height()), QImage::Format_RGB32);
    img.fill(Qt::white);
    QPainter painter(&img);
    painter.drawPixmap(0, 0, list);
    painter.fillRect(QRect(list.width(), 0, 6, img.height()), QColor(220, 220, 225));
    painter.drawPixmap(list.width() + 6, 0, graph);
    painter.end();
    ok &= views::save_image(dir + QStringLiteral("/passes.png"), img);
  }
  return ok;
}

void MainWindow::export_current_view() {
  QWidget* w = tabs_->currentWidget();
  if (w == graph_) {
    export_graph(QStringLiteral("png"));
    return;
  }
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export View as PNG"), QString(), tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  if (QString error; !views::save_image(path, w->grab().toImage(), nullptr, &error))
    log(error, true);
  else
    log(tr("Wrote %1").arg(path));
}

void MainWindow::export_compare_csv() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export Comparison as CSV"), QString(), tr("CSV files (*.csv)"));
  if (path.isEmpty()) return;
  if (!compare_->export_csv(path))
    log(tr("Could not write %1").arg(path), true);
  else
    log(tr("Wrote %1").arg(path));
}

void MainWindow::report_pass_effect(const RunOutcome& r) {
  if (disabled_.empty()) {
    full_pipeline_ = r;
    return;
  }
  QStringList names;
  for (const auto& d : disabled_) names << QString::fromStdString(d);
  if (!full_pipeline_) {
    log(tr("Ran without %1; run once with every pass checked to see what they buy")
            .arg(names.join(QStringLiteral(", "))));
    return;
  }
  const RunOutcome& f = *full_pipeline_;
  auto pct = [](double a, double b) { return b > 0 ? (a - b) / b * 100 : 0.0; };
  const QString line =
      tr("Without %1: median %2 ms (%3% against %4 ms with every pass), peak %5 vs %6, %7 vs %8 kernels per iteration")
          .arg(names.join(QStringLiteral(", ")))
          .arg(r.median_ms, 0, 'f', 3)
          .arg(pct(r.median_ms, f.median_ms), 0, 'f', 1)
          .arg(f.median_ms, 0, 'f', 3)
          .arg(QString::fromStdString(views::format_bytes(static_cast<double>(r.peak_bytes))),
               QString::fromStdString(views::format_bytes(static_cast<double>(f.peak_bytes))))
          .arg(r.kernels)
          .arg(f.kernels);
  log(line);
  status_text_->setText(line);
}

void MainWindow::export_traces() {
  if (!eager_trace_ && !graph_trace_) {
    log(tr("No traces yet: run the model first"), true);
    return;
  }
  const QString base = QFileDialog::getSaveFileName(this, tr("Export Traces (one file per mode)"),
                                                    QStringLiteral("trace.json"), tr("Chrome traces (*.json)"));
  if (!base.isEmpty()) export_traces_to(base);
}

bool MainWindow::export_traces_to(const QString& base) {
  bool ok = eager_trace_ || graph_trace_;
  QString stem = base;
  if (stem.endsWith(QStringLiteral(".json"))) stem.chop(5);
  for (const auto& [trace, mode] :
       {std::pair{eager_trace_, QStringLiteral("pynative")}, std::pair{graph_trace_, QStringLiteral("graph")}}) {
    if (!trace) continue;
    const QString path = stem + QLatin1Char('-') + mode + QStringLiteral(".json");
    const Status st = prof::export_chrome_trace_file(*trace, path.toStdString());
    if (!st)
      log(human_error(st, tr("Writing %1").arg(path)), true);
    else
      log(tr("Wrote %1 (open it in chrome://tracing or Perfetto)").arg(path));
    ok = ok && st.is_ok();
  }
  return ok;
}

void MainWindow::open_trace(const QString& path) {
  show_start_page(false);
  log(tr("Opening trace %1").arg(path));
  jobs_->start(
      QStringLiteral("open-trace"), tr("Opening trace %1").arg(QFileInfo(path).fileName()), this,
      [path](views::JobContext& ctx) {
        ctx.progress(-1, QObject::tr("Reading the trace"));
        return prof::import_chrome_trace_file(path.toStdString());
      },
      [this, path](Expected<prof::ImportResult> r) {
        if (!r) {
          fail(r.status(), tr("Opening trace %1").arg(QFileInfo(path).fileName()));
          return;
        }
        for (const auto& w : r->warnings) log(QString::fromStdString(w));
        if (r->trace->meta("mode") == "graph")
          graph_trace_ = r->trace;
        else
          eager_trace_ = r->trace;
        update_result_views();
        tabs_->setCurrentWidget(timeline_);
        log(tr("Trace %1: %2 events on %3 tracks")
                .arg(QFileInfo(path).fileName())
                .arg(r->trace->events.size())
                .arg(r->trace->tracks.size()));
      });
}

}  // namespace ms::app
