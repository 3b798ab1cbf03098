// MainWindow::models_text: the item models behind the views, one row a line, every column's display
// text and sort value (so a figure rounded for display still has to match in full), and the memory
// heatmap's panels block by block, the selected node with the inspector's rows for it. A session's
// round trip compares the text of the app that saved it with the text of the app that reopened it.
#include <QAbstractItemModel>
#include <QTextStream>

#include "app/gui/main_window.h"
#include "app/gui/train_panel.h"
#include "views/compare/compare_model.h"
#include "views/compare/compare_view.h"
#include "views/compare/value_diff_view.h"
#include "views/graph/graph_view.h"
#include "views/graph/inspector.h"
#include "views/memory/memory_view.h"
#include "views/models/node_info_model.h"
#include "views/models/pass_list_model.h"
#include "views/models/value_diff_model.h"
#include "views/timeline/ranks_view.h"
#include "views/train/loss_curve.h"

namespace ms::app {

namespace {

QString cell_text(const QVariant& v) {
  if (v.typeId() == QMetaType::Double) return QString::number(v.toDouble(), 'g', 17);
  return v.toString();
}

void dump_model(QTextStream& out, const QString& title, const QAbstractItemModel& m) {
  out << "## " << title << " (" << m.rowCount() << " rows)\n";
  for (int c = 0; c < m.columnCount(); ++c) out << (c ? "\t" : "") << m.headerData(c, Qt::Horizontal).toString();
  out << "\n";
  for (int r = 0; r < m.rowCount(); ++r) {
    for (int c = 0; c < m.columnCount(); ++c) {
      const QModelIndex i = m.index(r, c);
      out << (c ? "\t" : "") << cell_text(m.data(i, Qt::DisplayRole));
      const QVariant raw = m.data(i, Qt::UserRole);
      if (raw.isValid()) out << " [" << cell_text(raw) << "]";
    }
    out << "\n";
  }
}

QString g17(double v) { return QString::number(v, 'g', 17); }

// The heatmap's panels: each one's figures, then its blocks, one a line.
void dump_memory(QTextStream& out, const std::vector<views::MemPanel>& panels) {
  out << "## memory (" << panels.size() << " panels)\n";
  for (const views::MemPanel& p : panels) {
    out << QString::fromStdString(p.title) << ": " << p.blocks.size() << " blocks, x " << g17(p.x_max) << ", size "
        << p.size_bytes << ", peak " << p.peak_bytes << " at " << g17(p.peak_x) << ", lower bound " << p.lower_bound
        << ", timed " << p.timed << " " << g17(p.t_max) << ", fragmentation " << g17(p.fragmentation) << ", reuse "
        << g17(p.mean_reuse) << "\n";
    for (const views::MemBlock& b : p.blocks)
      out << "  " << g17(b.x0) << "\t" << g17(b.x1) << "\t" << g17(b.t0) << "\t" << g17(b.t1) << "\t" << b.y << "\t"
          << b.bytes << "\t" << b.node << "\t" << QString::fromStdString(b.value) << "\t"
          << QString::fromStdString(b.op) << "\t" << b.reuse << "\n";
  }
}

// A tree model (the inspector's): each row's first column, its children indented under it.
void dump_tree(QTextStream& out, const QAbstractItemModel& m, const QModelIndex& parent, int depth) {
  for (int r = 0; r < m.rowCount(parent); ++r) {
    out << QString(depth * 2, QLatin1Char(' '));
    for (int c = 0; c < m.columnCount(parent); ++c) out << (c ? "\t" : "") << cell_text(m.data(m.index(r, c, parent)));
    out << "\n";
    dump_tree(out, m, m.index(r, 0, parent), depth + 1);
  }
}

}  // namespace

QString MainWindow::models_text() const {
  QString text;
  QTextStream out(&text);
  dump_model(out, QStringLiteral("compare"), *compare_->model());
  dump_memory(out, memory_->panels());
  dump_model(out, QStringLiteral("passes"), *passes_);
  dump_model(out, QStringLiteral("values"), *value_diff_->model());
  // The selected node: in the graph view (drawn or not) and in the inspector.
  const auto* gm = graph_->model();
  const int sel = graph_->selected_node();
  out << "## selection\n";
  if (gm && sel >= 0 && sel < static_cast<int>(gm->nodes.size()) && gm->nodes[static_cast<size_t>(sel)].node) {
    const ir::Node& n = *gm->nodes[static_cast<size_t>(sel)].node;
    out << "node " << n.id.value << "\t" << QString::fromStdString(n.op_type) << "\t" << QString::fromStdString(n.name)
        << "\t" << (graph_->node_rect(sel).isEmpty() ? "not drawn" : "drawn") << "\n";
  }
  dump_tree(out, *inspector_->info(), {}, 0);
  const views::LossCurveView* curve = train_panel_->curve();
  const QStringList names = curve->names();
  out << "## training (" << names.size() << " series)\n";
  for (const QString& name : names) {
    out << name << ": " << curve->summary(name) << "\n";
    for (const auto& [step, loss] : curve->points(name))
      out << "  " << step << "\t" << QString::number(loss, 'g', 17) << "\n";
  }
  // The Ranks tab: its summary, then each lane's compile and steps as drawn (ns from the aligned step).
  const views::RanksData& ranks = ranks_->data();
  out << "## ranks (" << ranks.lanes.size() << " lanes)\n";
  if (!ranks.lanes.empty()) out << ranks_->summary_text() << "\n";
  for (const views::RankLane& l : ranks.lanes) {
    out << QString::fromStdString(l.label) << ": compile " << l.compile.t0 << "\t" << l.compile.t1 << "\n";
    for (const views::RankSpan& s : l.steps) out << "  step " << s.step << "\t" << s.t0 << "\t" << s.t1 << "\n";
  }
  return text;
}

}  // namespace ms::app
