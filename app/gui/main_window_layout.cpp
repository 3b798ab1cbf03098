// Window and dock sizes: the window stays on its screen, the Passes dock shows whole names.
#include <QActionGroup>
#include <QDockWidget>
#include <QHeaderView>
#include <QMenu>
#include <QScreen>
#include <QScrollBar>
#include <QShowEvent>
#include <QStyle>
#include <QTableView>
#include <QTimer>
#include <QTreeView>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/theme.h"
#include "views/graph/inspector.h"
#include "views/models/pass_list_model.h"

namespace ms::app {

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (!e->spontaneous()) QTimer::singleShot(0, this, &MainWindow::fit_to_screen);
}

void MainWindow::fit_to_screen() {
  const QScreen* s = screen();
  if (!s || isMaximized() || isFullScreen()) return;
  const QRect avail = s->availableGeometry();
  // The frame a window manager adds (nothing without one).
  const QSize frame = frameGeometry().size() - geometry().size();
  const QSize room = avail.size() - frame;
  const QSize fitted = size().boundedTo(room).expandedTo(minimumSizeHint().boundedTo(room));
  if (fitted != size()) resize(fitted);
  if (dock_sizes_pending_) {
    // The first sizes: the inspector a quarter of the width (280 to 380 px), the passes' placeholder
    // 220 px, the run form its natural height under the inspector, the log about eight lines.
    dock_sizes_pending_ = false;
    auto* inspector = findChild<QDockWidget*>(QStringLiteral("InspectorDock"));
    auto* run = findChild<QDockWidget*>(QStringLiteral("RunDock"));
    auto* log = findChild<QDockWidget*>(QStringLiteral("LogDock"));
    resizeDocks({inspector, passes_dock_}, {std::clamp(width() / 4, 280, 380), 220}, Qt::Horizontal);
    const int run_h = std::min(run->widget()->sizeHint().height() + 44, height() / 2);
    resizeDocks({inspector, run}, {height() - run_h, run_h}, Qt::Vertical);
    resizeDocks({log}, {130}, Qt::Vertical);
  }
  QRect g = frameGeometry();
  if (!avail.contains(g)) {
    g.moveLeft(std::clamp(g.left(), avail.left(), std::max(avail.left(), avail.right() + 1 - g.width())));
    g.moveTop(std::clamp(g.top(), avail.top(), std::max(avail.top(), avail.bottom() + 1 - g.height())));
    move(g.topLeft());
  }
}

void MainWindow::build_theme_menu(QMenu* menu) {
  auto* group = new QActionGroup(this);
  const views::Theme now = saved_theme();
  for (auto [theme, text] :
       {std::pair{views::Theme::System, tr("&System")}, std::pair{views::Theme::Light, tr("&Light")},
        std::pair{views::Theme::Dark, tr("&Dark")}}) {
    QAction* a = menu->addAction(text);
    a->setCheckable(true);
    a->setChecked(theme == now);
    a->setObjectName(QStringLiteral("Theme%1").arg(static_cast<int>(theme)));
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, theme] {
      set_theme(theme);
      graph_->refresh_theme();
      if (before_) before_->refresh_theme();
      for (QWidget* w : findChildren<QWidget*>()) w->update();
    });
  }
}

void MainWindow::build_keyboard_actions(QMenu* view) {
  QMenu* go = view->addMenu(tr("&Go To"));
  for (int i = 0; i < tabs_->count(); ++i) {
    QAction* a = go->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
  }
  go->addSeparator();
  auto focus = [this](QWidget* w) {
    for (QWidget* p = w; p; p = p->parentWidget())
      if (auto* d = qobject_cast<QDockWidget*>(p)) {
        d->show();
        d->raise();
        break;
      }
    if (w) w->setFocus(Qt::ShortcutFocusReason);
  };
  go->addAction(tr("&Passes"), QKeySequence(Qt::ALT | Qt::Key_1), this, [this, focus] { focus(pass_table_); });
  go->addAction(tr("&Inspector"), QKeySequence(Qt::ALT | Qt::Key_2), this,
                [this, focus] { focus(static_cast<QWidget*>(inspector_->tree())); });
  go->addAction(tr("&Run Settings"), QKeySequence(Qt::ALT | Qt::Key_3), this,
                [this, focus] { focus(run_panel_->findChild<QWidget*>(QStringLiteral("RunMode"))); });
}

void MainWindow::size_passes_dock() {
  if (passes_dock_sized_ || !pass_table_ || !passes_dock_) return;
  passes_dock_sized_ = true;
  // Every column as wide as its widest cell or header, the name column included, plus the frame
  // and a vertical scroll bar; the graph keeps at least two thirds of the window.
  QHeaderView* header = pass_table_->horizontalHeader();
  const QFontMetrics fm(pass_table_->font());
  const int pad = 2 * (pass_table_->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, pass_table_) + 1) + 6;
  const int check = pass_table_->style()->pixelMetric(QStyle::PM_IndicatorWidth, nullptr, pass_table_) + 6;
  int want = 2 * pass_table_->frameWidth() + pass_table_->verticalScrollBar()->sizeHint().width() + 4;
  for (int c = 0; c < passes_->columnCount(); ++c) {
    if (c != views::PassListModel::kName) {  // sized to their contents already
      want += header->sectionSize(c);
      continue;
    }
    int cells = header->sectionSizeHint(c);
    for (int r = 0; r < passes_->rowCount(); ++r) {
      const QModelIndex i = passes_->index(r, c);
      const int text = fm.horizontalAdvance(i.data().toString()) + pad;
      cells = std::max(cells, text + (i.data(Qt::CheckStateRole).isValid() ? check : 0));
    }
    want += cells;
  }
  resizeDocks({passes_dock_}, {std::min(want, width() / 3)}, Qt::Horizontal);
}

}  // namespace ms::app
