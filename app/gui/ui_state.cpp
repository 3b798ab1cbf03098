#include "app/gui/ui_state.h"

#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QListWidget>
#include <QScreen>
#include <QSortFilterProxyModel>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/start_page.h"
#include "views/compare/compare_model.h"
#include "views/compare/compare_view.h"
#include "views/layout/graph_model.h"
#include "views/models/pass_list_model.h"
#include "views/timeline/timeline_view.h"

namespace ms::app {

namespace {

QJsonArray rect_json(const QRect& r) { return {r.x(), r.y(), r.width(), r.height()}; }

QJsonObject passes_state(const MainWindow& w) {
  QJsonObject o;
  const auto* table = w.findChild<QTableView*>(QStringLiteral("PassTable"));
  if (!table || !table->model()) return o;
  const QAbstractItemModel* m = table->model();
  o[QStringLiteral("rows")] = m->rowCount();
  o[QStringLiteral("current")] = table->currentIndex().row();
  o[QStringLiteral("visible")] = table->isVisible();
  // The name column's cells hold a check box before the text.
  const QFontMetrics fm(table->font());
  const int check = table->style()->pixelMetric(QStyle::PM_IndicatorWidth, nullptr, table) + 4;
  int longest = 0;
  QString longest_name;
  for (int r = 0; r < m->rowCount(); ++r) {
    const QModelIndex i = m->index(r, views::PassListModel::kName);
    const int text = fm.horizontalAdvance(i.data().toString()) + (i.data(Qt::CheckStateRole).isValid() ? check : 0);
    if (text > longest) {
      longest = text;
      longest_name = i.data().toString();
    }
  }
  o[QStringLiteral("name_column_width")] = table->columnWidth(views::PassListModel::kName);
  o[QStringLiteral("longest_name")] = longest_name;
  o[QStringLiteral("longest_name_width")] = longest;
  if (table->currentIndex().isValid())
    o[QStringLiteral("current_name")] =
        m->index(table->currentIndex().row(), views::PassListModel::kName).data().toString();
  return o;
}

QJsonObject inspector_state(const MainWindow& w) {
  QJsonObject o;
  const auto* tree = w.findChild<QTreeView*>(QStringLiteral("InspectorTree"));
  if (!tree) return o;
  o[QStringLiteral("visible")] = tree->isVisible();
  o[QStringLiteral("rows")] = tree->model() ? tree->model()->rowCount() : 0;
  o[QStringLiteral("viewport_width")] = tree->viewport()->width();
  o[QStringLiteral("viewport_height")] = tree->viewport()->height();
  o[QStringLiteral("name_column_width")] = tree->columnWidth(0);
  // The value column's visible width: the part of the viewport a dock or a scroll area does not cut
  // off, after the names.
  const QRect seen = tree->viewport()->visibleRegion().boundingRect();
  o[QStringLiteral("value_column_visible")] = seen.right() + 1 - std::max(seen.left(), tree->columnWidth(0));
  o[QStringLiteral("visible_height")] = seen.height();
  o[QStringLiteral("row_height")] = tree->model() && tree->model()->rowCount()
                                        ? tree->visualRect(tree->model()->index(0, 0)).height()
                                        : tree->fontMetrics().height();
  return o;
}

QJsonObject graph_state(const MainWindow& w) {
  QJsonObject o;
  const views::GraphView* g = w.graph_view();
  const int sel = g->selected_node();
  o[QStringLiteral("selected")] = sel;
  if (const auto* m = g->model(); m && sel >= 0 && sel < static_cast<int>(m->nodes.size()) && m->nodes[sel].node) {
    o[QStringLiteral("selected_name")] = QString::fromStdString(m->nodes[sel].node->name);
    o[QStringLiteral("selected_id")] = static_cast<qint64>(m->nodes[sel].node->id.value);
  }
  o[QStringLiteral("nodes")] = g->model() ? g->model()->drawn_nodes : 0;
  const QList<QRect> nodes = g->visible_node_rects();
  const QList<QRect> legends = g->legend_rects();
  o[QStringLiteral("visible_nodes")] = static_cast<int>(nodes.size());
  QJsonArray legend_json;
  int overlaps = 0;
  for (const QRect& l : legends) {
    legend_json.append(rect_json(l));
    for (const QRect& n : nodes) overlaps += l.intersects(n);
  }
  o[QStringLiteral("legends")] = legend_json;
  o[QStringLiteral("legend_node_overlaps")] = overlaps;
  o[QStringLiteral("layout_busy")] = g->layout_busy();
  return o;
}

QJsonObject compare_state(const MainWindow& w) {
  QJsonObject o;
  const views::CompareView* c = w.compare_view();
  if (!c) return o;
  const QHeaderView* h = c->table()->horizontalHeader();
  const int col = h->sortIndicatorSection();
  o[QStringLiteral("rows")] = c->proxy()->rowCount();
  o[QStringLiteral("sort_column")] = c->model()->headerData(col, Qt::Horizontal).toString();
  o[QStringLiteral("sort_ascending")] = h->sortIndicatorOrder() == Qt::AscendingOrder;
  QJsonArray savings;
  for (int r = 0; r < std::min(5, c->proxy()->rowCount()); ++r)
    savings.append(c->proxy()->index(r, views::CompareModel::SavingMs).data(Qt::UserRole).toDouble());
  o[QStringLiteral("first_savings_ms")] = savings;
  o[QStringLiteral("verdict")] = c->summary_text();
  return o;
}

}  // namespace

QJsonObject ui_state(const MainWindow& w) {
  QJsonObject o;
  const QScreen* s = w.screen();
  o[QStringLiteral("screen")] = rect_json(s ? s->availableGeometry() : QRect());
  o[QStringLiteral("window")] = rect_json(w.frameGeometry());
  o[QStringLiteral("window_within_screen")] = s && s->availableGeometry().contains(w.frameGeometry());
  QJsonObject docks;
  for (const QDockWidget* d : w.findChildren<QDockWidget*>()) {
    QJsonObject dj;
    dj[QStringLiteral("visible")] = d->isVisible();
    dj[QStringLiteral("geometry")] = rect_json(d->geometry());
    docks[d->objectName()] = dj;
  }
  o[QStringLiteral("docks")] = docks;
  o[QStringLiteral("passes")] = passes_state(w);
  o[QStringLiteral("inspector")] = inspector_state(w);
  o[QStringLiteral("graph")] = graph_state(w);
  o[QStringLiteral("tab")] = w.tabs()->tabText(w.tabs()->currentIndex());
  o[QStringLiteral("autosaves")] = w.autosaves();
  o[QStringLiteral("autosaves_beside_runs")] = w.autosaves_beside_runs();
  QJsonObject tl;
  tl[QStringLiteral("runs")] = static_cast<int>(w.timeline_view()->model().runs().size());
  tl[QStringLiteral("selected_node")] = static_cast<qint64>(w.timeline_view()->canvas()->selected_node);
  tl[QStringLiteral("highlighted_items")] = w.timeline_view()->canvas()->highlighted_items();
  o[QStringLiteral("timeline")] = tl;
  o[QStringLiteral("compare")] = compare_state(w);
  o[QStringLiteral("jit_level")] =
      w.run_panel()->findChild<QComboBox*>(QStringLiteral("JitLevel"))
          ? w.run_panel()->findChild<QComboBox*>(QStringLiteral("JitLevel"))->currentData().toString()
          : QString();
  o[QStringLiteral("busy")] = w.busy();
  o[QStringLiteral("window_lightness")] = w.palette().color(QPalette::Window).lightness();
  o[QStringLiteral("graph_background_lightness")] = w.graph_view()->canvas()->backgroundBrush().color().lightness();
  QJsonObject start;
  start[QStringLiteral("visible")] = w.start_page()->isVisible();
  start[QStringLiteral("samples")] = w.start_page()->samples()->count();
  start[QStringLiteral("recent")] = w.start_page()->recent()->count();
  o[QStringLiteral("start_page")] = start;
  return o;
}

QStringList layout_problems(const QJsonObject& st) {
  QStringList out;
  if (!st[QStringLiteral("window_within_screen")].toBool())
    out << QStringLiteral("the window (%1) is not within the screen (%2)")
               .arg(QString::fromUtf8(
                        QJsonDocument(st[QStringLiteral("window")].toArray()).toJson(QJsonDocument::Compact)),
                    QString::fromUtf8(
                        QJsonDocument(st[QStringLiteral("screen")].toArray()).toJson(QJsonDocument::Compact)));
  const QJsonObject p = st[QStringLiteral("passes")].toObject();
  if (p[QStringLiteral("visible")].toBool() && p[QStringLiteral("rows")].toInt() > 0 &&
      p[QStringLiteral("name_column_width")].toInt() < p[QStringLiteral("longest_name_width")].toInt())
    out << QStringLiteral("the pass name column (%1 px) is narrower than '%2' (%3 px)")
               .arg(p[QStringLiteral("name_column_width")].toInt())
               .arg(p[QStringLiteral("longest_name")].toString())
               .arg(p[QStringLiteral("longest_name_width")].toInt());
  const QJsonObject i = st[QStringLiteral("inspector")].toObject();
  if (i[QStringLiteral("visible")].toBool() && i[QStringLiteral("rows")].toInt() > 0) {
    if (i[QStringLiteral("value_column_visible")].toInt() < 80)
      out << QStringLiteral("the inspector's value column shows %1 px")
                 .arg(i[QStringLiteral("value_column_visible")].toInt());
    if (i[QStringLiteral("visible_height")].toInt() < 6 * i[QStringLiteral("row_height")].toInt())
      out << QStringLiteral("the inspector's property tree shows %1 px (under six rows)")
                 .arg(i[QStringLiteral("visible_height")].toInt());
  }
  const int overlaps = st[QStringLiteral("graph")].toObject()[QStringLiteral("legend_node_overlaps")].toInt();
  if (overlaps > 0) out << QStringLiteral("a legend covers %1 node(s) of the graph").arg(overlaps);
  return out;
}

}  // namespace ms::app
