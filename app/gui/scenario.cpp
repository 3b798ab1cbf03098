#include "app/gui/scenario.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTest>

#include <cstdio>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/ui_state.h"
#include "views/common/save_file.h"
#include "views/compare/compare_model.h"
#include "views/compare/compare_view.h"
#include "views/layout/graph_model.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

namespace {

// The steps' record: each step's state and picture, and every check that failed.
class Walk {
 public:
  Walk(MainWindow& w, QString dir) : w_(w), dir_(std::move(dir)) {}
  QJsonObject step(const QString& name) {
    settle();
    ++n_;
    const QString stem = dir_ + QStringLiteral("/%1-%2").arg(n_, 2, 10, QLatin1Char('0')).arg(name);
    const QJsonObject st = ui_state(w_);
    views::save_bytes(stem + QStringLiteral(".json"), QJsonDocument(st).toJson());
    views::save_image(stem + QStringLiteral(".png"), w_.grab().toImage());
    for (const QString& p : layout_problems(st)) fail(name, p);
    std::fprintf(stderr, "scenario: %s\n", qPrintable(name));
    return st;
  }
  void check(const QString& step, bool ok, const QString& what) {
    if (!ok) fail(step, what);
  }
  void fail(const QString& step, const QString& what) {
    failures_ << step + QStringLiteral(": ") + what;
    std::fprintf(stderr, "scenario: FAILED %s: %s\n", qPrintable(step), qPrintable(what));
  }
  // Until no job runs and no layout is pending (or 60 s), then a few paints.
  void settle() {
    if (!QTest::qWaitFor([this] { return !w_.busy() && !w_.graph_view()->layout_busy(); }, 60000))
      fail(QStringLiteral("settle"), QStringLiteral("a job or a layout still ran after 60 s"));
    QTest::qWait(60);
  }
  int exit_code() const { return failures_.isEmpty() ? 0 : 1; }

 private:
  MainWindow& w_;
  QString dir_;
  int n_ = 0;
  QStringList failures_;
};

void click_tab(MainWindow& w, const QString& text) {
  QTabBar* bar = w.tabs()->tabBar();
  for (int i = 0; i < bar->count(); ++i)
    if (bar->tabText(i) == text) QTest::mouseClick(bar, Qt::LeftButton, {}, bar->tabRect(i).center());
}

// Clicks drawn nodes in model order until one becomes the selection; -1 when none did.
int click_some_node(MainWindow& w) {
  views::GraphView* g = w.graph_view();
  const auto* m = g->model();
  if (!m) return -1;
  QWidget* vp = g->canvas()->viewport();
  const QRect seen(vp->mapTo(g, QPoint(0, 0)), vp->size());
  int tries = 0;
  for (int i = 0; i < static_cast<int>(m->nodes.size()) && tries < 12; ++i) {
    if (!m->nodes[static_cast<size_t>(i)].node) continue;
    const QRect r = g->node_rect(i);
    if (r.isEmpty() || !seen.contains(r)) continue;
    ++tries;
    QTest::mouseClick(vp, Qt::LeftButton, {}, vp->mapFrom(g, r.center()));
    if (g->selected_node() == i) return i;
  }
  return -1;
}

}  // namespace

int run_scenario(MainWindow& w, const QString& model, const QString& dir) {
  QDir().mkpath(dir);
  Walk walk(w, dir);
  // Shortcuts reach the active window only.
  w.activateWindow();
  const bool active = QTest::qWaitForWindowActive(&w, 5000);
  QJsonObject st = walk.step(QStringLiteral("start"));
  const QJsonObject start = st[QStringLiteral("start_page")].toObject();
  walk.check(QStringLiteral("start"),
             start[QStringLiteral("visible")].toBool() && start[QStringLiteral("samples")].toInt() > 0,
             QStringLiteral("an empty window shows no start page with the bundled samples"));
  walk.check(QStringLiteral("start"), st[QStringLiteral("jit_level")].toString() == QLatin1String("O2"),
             QStringLiteral("the run panel opens at %1, not O2").arg(st[QStringLiteral("jit_level")].toString()));

  bool opened = false, ran = false, ok = false;
  QObject::connect(&w, &MainWindow::model_opened, &w, [&](bool good) { opened = true, ok = good; });
  w.open(model);
  (void)QTest::qWaitFor([&] { return opened; }, 60000);  // `opened` is checked below
  st = walk.step(QStringLiteral("open"));
  walk.check(QStringLiteral("open"), ok && st[QStringLiteral("graph")].toObject()[QStringLiteral("nodes")].toInt() > 0,
             QStringLiteral("the model did not open into a drawn graph"));

  QObject::connect(&w, &MainWindow::runs_finished, &w, [&](bool good) { ran = true, ok = good; });
  w.run_panel()->set_modes(QStringLiteral("both"));
  w.run_panel()->set_iterations(3);
  w.run();
  (void)QTest::qWaitFor([&] { return ran; }, 60000);  // `ran` is checked below
  st = walk.step(QStringLiteral("run-both"));
  walk.check(QStringLiteral("run-both"),
             ok && st[QStringLiteral("timeline")].toObject()[QStringLiteral("runs")].toInt() == 2,
             QStringLiteral("both runs did not reach the timeline"));
  walk.check(QStringLiteral("run-both"), st[QStringLiteral("passes")].toObject()[QStringLiteral("rows")].toInt() > 1,
             QStringLiteral("no passes listed after the Graph-mode run"));
  // The runs were autosaved once they were done, and never while one timed its iterations (a save
  // beside them was in their figures).
  walk.check(QStringLiteral("run-both"), st[QStringLiteral("autosaves")].toInt() > 0,
             QStringLiteral("the runs were not autosaved"));
  walk.check(QStringLiteral("run-both"), st[QStringLiteral("autosaves_beside_runs")].toInt() == 0,
             QStringLiteral("an autosave ran beside a run's timed iterations"));

  // A pass that fused nodes, clicked in its Effect cell.
  auto* table = w.findChild<QTableView*>(QStringLiteral("PassTable"));
  int fused_row = -1;
  for (int r = 0; table && r < table->model()->rowCount() && fused_row < 0; ++r)
    if (table->model()->index(r, views::PassListModel::kChanged).data().toString().contains(QStringLiteral("fused")))
      fused_row = r;
  walk.check(QStringLiteral("click-pass"), fused_row > 0, QStringLiteral("no pass fused nodes"));
  if (fused_row > 0) {
    const QModelIndex cell = table->model()->index(fused_row, views::PassListModel::kChanged);
    table->scrollTo(cell);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(cell).center());
  }
  st = walk.step(QStringLiteral("click-pass"));
  const QJsonObject passes = st[QStringLiteral("passes")].toObject();
  walk.check(QStringLiteral("click-pass"), passes[QStringLiteral("current")].toInt() == fused_row,
             QStringLiteral("the clicked pass is not the current row"));
  walk.check(QStringLiteral("click-pass"),
             !st[QStringLiteral("graph")].toObject()[QStringLiteral("legends")].toArray().isEmpty(),
             QStringLiteral("the graph shows no diff legend for the pass"));

  // The input graph (Ctrl+Home in the pass list: the stepper takes keys), then a node clicked in it.
  table->setFocus();
  QTest::keyClick(table, Qt::Key_Home, Qt::ControlModifier);
  walk.settle();
  const int node = click_some_node(w);
  st = walk.step(QStringLiteral("select-node"));
  const QJsonObject graph = st[QStringLiteral("graph")].toObject();
  walk.check(QStringLiteral("select-node"), node >= 0 && graph[QStringLiteral("selected")].toInt() == node,
             QStringLiteral("clicking a node did not select it"));
  walk.check(QStringLiteral("select-node"),
             st[QStringLiteral("inspector")].toObject()[QStringLiteral("rows")].toInt() > 0,
             QStringLiteral("the inspector shows nothing for the selected node"));

  click_tab(w, QStringLiteral("Timeline"));
  st = walk.step(QStringLiteral("timeline"));
  const QJsonObject tl = st[QStringLiteral("timeline")].toObject();
  walk.check(QStringLiteral("timeline"), st[QStringLiteral("tab")].toString() == QLatin1String("Timeline"),
             QStringLiteral("the Timeline tab is not shown"));
  walk.check(QStringLiteral("timeline"),
             tl[QStringLiteral("selected_node")].toInteger() == graph[QStringLiteral("selected_id")].toInteger(),
             QStringLiteral("the timeline's selection is not the graph's node"));
  walk.check(QStringLiteral("timeline"), tl[QStringLiteral("highlighted_items")].toInt() > 0,
             QStringLiteral("no event of the selected node is outlined"));

  // Largest loss first: the Saving column (sorted largest saving first) clicked once.
  click_tab(w, QStringLiteral("Compare"));
  QHeaderView* header = w.compare_view()->table()->horizontalHeader();
  const int col = views::CompareModel::SavingMs;
  QTest::mouseClick(header->viewport(), Qt::LeftButton, {},
                    QPoint(header->sectionViewportPosition(col) + header->sectionSize(col) / 2, header->height() / 2));
  st = walk.step(QStringLiteral("compare-by-loss"));
  const QJsonObject cmp = st[QStringLiteral("compare")].toObject();
  const QJsonArray savings = cmp[QStringLiteral("first_savings_ms")].toArray();
  walk.check(QStringLiteral("compare-by-loss"),
             cmp[QStringLiteral("sort_column")].toString() == QLatin1String("Saving ms") &&
                 cmp[QStringLiteral("sort_ascending")].toBool(),
             QStringLiteral("the comparison is not sorted by saving, smallest (largest loss) first"));
  walk.check(QStringLiteral("compare-by-loss"), savings.size() >= 2 && savings[0].toDouble() <= savings[1].toDouble(),
             QStringLiteral("the first rows are not in loss order"));

  // Keyboard: Ctrl+F on the Compare tab puts the keyboard in its filter; Ctrl+1 shows the graph,
  // Alt+1 focuses the pass list.
  walk.check(QStringLiteral("keyboard"), active, QStringLiteral("the window never became active"));
  auto focused = [&w]() -> QWidget* { return QApplication::focusWidget() ? QApplication::focusWidget() : &w; };
  QTest::keyClick(focused(), Qt::Key_F, Qt::ControlModifier);
  walk.check(QStringLiteral("keyboard"),
             QApplication::focusWidget() && QApplication::focusWidget()->objectName() == QLatin1String("CompareFilter"),
             QStringLiteral("Ctrl+F on the Compare tab did not focus its filter"));
  QTest::keyClick(focused(), Qt::Key_1, Qt::ControlModifier);
  QTest::keyClick(focused(), Qt::Key_1, Qt::AltModifier);
  st = walk.step(QStringLiteral("keyboard"));
  walk.check(QStringLiteral("keyboard"), st[QStringLiteral("tab")].toString() == QLatin1String("Graph"),
             QStringLiteral("Ctrl+1 did not show the graph"));
  walk.check(QStringLiteral("keyboard"), QApplication::focusWidget() == table,
             QStringLiteral("Alt+1 did not put the focus in the pass list"));

  // View > Theme > Dark, then back to Light: the window and the graph take each palette.
  for (const auto& [name, dark] :
       {std::pair{QStringLiteral("Theme2"), true}, std::pair{QStringLiteral("Theme1"), false}}) {
    if (auto* a = w.findChild<QAction*>(name)) a->trigger();
    click_tab(w, QStringLiteral("Graph"));
    st = walk.step(dark ? QStringLiteral("theme-dark") : QStringLiteral("theme-light"));
    const bool window_dark = st[QStringLiteral("window_lightness")].toInt() < 128;
    const bool graph_dark = st[QStringLiteral("graph_background_lightness")].toInt() < 128;
    walk.check(QStringLiteral("theme"), window_dark == dark && graph_dark == dark,
               QStringLiteral("the %1 theme did not reach the window and the graph").arg(dark ? "dark" : "light"));
  }

  const QString base = dir + QStringLiteral("/trace");
  const bool exported = w.export_traces_to(base);
  for (const char* mode : {"pynative", "graph"}) {
    QFile f(base + QLatin1Char('-') + QLatin1String(mode) + QStringLiteral(".json"));
    const bool read = f.open(QIODevice::ReadOnly);
    walk.check(QStringLiteral("export-trace"), exported && read && f.readAll().contains("\"traceEvents\""),
               QStringLiteral("%1 is not a Chrome trace").arg(f.fileName()));
  }
  walk.step(QStringLiteral("export-trace"));
  return walk.exit_code();
}

}  // namespace ms::app
