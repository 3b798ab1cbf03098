// The Values table of the mode diff: a hand-built ModeDiff (a clean value, one past the tolerance,
// a fused value against its last origin, one not compared, one with non-finite mismatches) through
// the model (roles, marks) and the view (worst first, filters, the ids its signals carry).
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QCheckBox>
#include <QFont>
#include <QLineEdit>
#include <QMenu>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>

#include <cmath>
#include <limits>
#include <memory>

#include "tests/views/test_graphs.h"
#include "views/common/palette.h"
#include "views/compare/value_diff_view.h"
#include "views/models/value_diff_model.h"

namespace ms::views {
namespace {

constexpr double kTol = 1e-4;

runtime::ValueDiff compared(std::string value, std::string op, uint64_t id, uint64_t ref_id, double rel, size_t order) {
  runtime::ValueDiff v;
  v.value = value;
  v.op = op;
  v.node = "node '" + value.substr(0, value.find(':')) + "' (" + op + " #" + std::to_string(id) + ")";
  v.node_id = ir::NodeId{id};
  v.ref_value = value;
  v.ref_node = v.node;
  v.ref_node_id = ir::NodeId{ref_id};
  v.match = "same node";
  v.compared = true;
  v.max_rel = rel;
  v.max_abs = rel * 10;
  v.diverged = rel > kTol;
  v.order = order;
  return v;
}

// Rows (source order): conv1 clean, relu1 past the tolerance (the first), fused against the Add it
// stands for, reshape not compared, softmax with NaN where PyNative is finite.
std::shared_ptr<const runtime::ModeDiff> sample_diff() {
  auto d = std::make_shared<runtime::ModeDiff>();
  d->tol = kTol;
  d->values.push_back(compared("conv1:0", "Conv", 1, 1, 1e-7, 0));
  d->values.push_back(compared("relu1:0", "Relu", 2, 2, 5e-3, 1));
  runtime::ValueDiff fused = compared("fused:0", "FusedConv", 10, 4, 2e-5, 2);
  fused.ref_value = "add:0";
  fused.ref_node = "node 'add' (Add #4)";
  fused.match = "last origin";
  d->values.push_back(fused);
  runtime::ValueDiff reshape;
  reshape.value = "reshape:0";
  reshape.node = "node 'reshape' (Reshape #5)";
  reshape.op = "Reshape";
  reshape.node_id = ir::NodeId{5};
  reshape.note = "no PyNative counterpart";
  reshape.order = 3;
  d->values.push_back(reshape);
  runtime::ValueDiff softmax = compared("softmax:0", "Softmax", 6, 6, 1e-6, 4);
  softmax.nonfinite_mismatches = 3;
  softmax.diverged = true;
  d->values.push_back(softmax);
  d->first_divergence = 1;
  d->compared = 4;
  d->diverged = 2;
  d->max_rel = 5e-3;
  return d;
}

// The source row shown at proxy row `row`.
int source_row(const ValueDiffView& v, int row) { return v.proxy()->mapToSource(v.proxy()->index(row, 0)).row(); }

// Where proxy row `row` is drawn, in the table's viewport.
QPoint row_point(const ValueDiffView& v, int row) {
  return v.table()->visualRect(v.proxy()->index(row, ValueDiffModel::kValue)).center();
}

int proxy_row_of(const ValueDiffView& v, int source) {
  return v.proxy()->mapFromSource(v.model()->index(source, 0)).row();
}

class ValueDiffTable : public ::testing::Test {
 protected:
  void SetUp() override { test::qt_app(); }
};

TEST_F(ValueDiffTable, ModelMarksTheFirstDivergenceAndColoursRowsPastTheTolerance) {
  ValueDiffModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(m.rowCount(), 0);
  EXPECT_EQ(m.first_divergence_row(), -1);
  EXPECT_EQ(m.row_at(0), nullptr);
  m.set_diff(sample_diff());
  ASSERT_EQ(m.rowCount(), 5);
  EXPECT_EQ(m.columnCount(), ValueDiffModel::kColumns);
  ASSERT_NE(m.row_at(1), nullptr);
  EXPECT_EQ(m.row_at(1)->value, "relu1:0");
  EXPECT_EQ(m.row_at(5), nullptr);
  EXPECT_EQ(m.row_at(-1), nullptr);
  EXPECT_EQ(m.first_divergence_row(), 1);

  auto at = [&](int row, int col, int role) { return m.data(m.index(row, col), role); };
  // The first divergence: bold, with its tooltip, on every column.
  for (int col = 0; col < ValueDiffModel::kColumns; ++col) {
    EXPECT_TRUE(at(1, col, Qt::FontRole).value<QFont>().bold()) << col;
    EXPECT_EQ(at(1, col, Qt::ToolTipRole).toString(), QStringLiteral("first value past the tolerance"));
  }
  EXPECT_FALSE(at(0, ValueDiffModel::kValue, Qt::FontRole).isValid());
  // Past the tolerance: error_color behind; a non-finite mismatch takes the NaN/inf colour.
  EXPECT_EQ(at(1, ValueDiffModel::kMaxRel, Qt::BackgroundRole).value<QColor>(), error_color(5e-3, kTol));
  EXPECT_EQ(at(4, ValueDiffModel::kValue, Qt::BackgroundRole).value<QColor>(), error_color(std::nan(""), kTol));
  EXPECT_FALSE(at(0, ValueDiffModel::kMaxRel, Qt::BackgroundRole).isValid());
  EXPECT_FALSE(at(2, ValueDiffModel::kMaxRel, Qt::BackgroundRole).isValid());
  // Not compared: grey, the reason as tooltip, "—" for the errors, below every compared row.
  EXPECT_TRUE(at(3, ValueDiffModel::kValue, Qt::ForegroundRole).isValid());
  EXPECT_EQ(at(3, ValueDiffModel::kNode, Qt::ToolTipRole).toString(), QStringLiteral("no PyNative counterpart"));
  EXPECT_EQ(at(3, ValueDiffModel::kMaxRel, Qt::DisplayRole).toString(), QStringLiteral("—"));
  EXPECT_EQ(at(3, ValueDiffModel::kMaxRel, Qt::UserRole).toDouble(), -1.0);
  EXPECT_EQ(at(3, ValueDiffModel::kMatch, Qt::DisplayRole).toString(), QStringLiteral("no PyNative counterpart"));
  // Sort roles: the raw figures; a non-finite mismatch is the worst error.
  EXPECT_DOUBLE_EQ(at(1, ValueDiffModel::kMaxRel, Qt::UserRole).toDouble(), 5e-3);
  EXPECT_DOUBLE_EQ(at(1, ValueDiffModel::kMaxAbs, Qt::UserRole).toDouble(), 5e-2);
  EXPECT_TRUE(std::isinf(at(4, ValueDiffModel::kMaxRel, Qt::UserRole).toDouble()));
  EXPECT_EQ(at(4, ValueDiffModel::kMaxRel, Qt::DisplayRole).toString(), QStringLiteral("NaN/inf"));
  EXPECT_TRUE(at(4, ValueDiffModel::kMatch, Qt::DisplayRole).toString().contains(QStringLiteral("3 element")));
  EXPECT_EQ(at(2, ValueDiffModel::kOrder, Qt::UserRole).toULongLong(), 2u);
  EXPECT_EQ(at(2, ValueDiffModel::kRefNode, Qt::DisplayRole).toString(), QStringLiteral("node 'add' (Add #4)"));
  EXPECT_EQ(at(2, ValueDiffModel::kMatch, Qt::DisplayRole).toString(), QStringLiteral("last origin"));
  EXPECT_TRUE(at(4, ValueDiffModel::kValue, ValueDiffModel::kDivergedRole).toBool());
  EXPECT_FALSE(at(2, ValueDiffModel::kValue, ValueDiffModel::kDivergedRole).toBool());
  EXPECT_EQ(m.headerData(ValueDiffModel::kMaxRel, Qt::Horizontal).toString(), QStringLiteral("max rel"));

  m.set_diff(nullptr);
  EXPECT_EQ(m.rowCount(), 0);
  EXPECT_EQ(m.first_divergence_row(), -1);
}

TEST_F(ValueDiffTable, ViewSortsTheWorstFirstAndFilters) {
  ValueDiffView view;
  EXPECT_EQ(view.rows(), 0);
  view.set_diff(sample_diff());
  ASSERT_EQ(view.rows(), 5);
  // Max rel descending: the non-finite mismatch, then the value past the tolerance, ..., the value
  // not compared last.
  EXPECT_EQ(source_row(view, 0), 4);
  EXPECT_EQ(source_row(view, 1), 1);
  EXPECT_EQ(source_row(view, 2), 2);
  EXPECT_EQ(source_row(view, 3), 0);
  EXPECT_EQ(source_row(view, 4), 3);
  EXPECT_EQ(view.summary_text(), QString::fromStdString(sample_diff()->summary()));
  // Another sort column through the proxy, then back.
  view.table()->sortByColumn(ValueDiffModel::kOrder, Qt::AscendingOrder);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(source_row(view, r), r);
  view.table()->sortByColumn(ValueDiffModel::kMaxRel, Qt::DescendingOrder);
  EXPECT_EQ(source_row(view, 0), 4);

  // The filter matches Graph and PyNative names, case-insensitively.
  view.filter_edit()->setText(QStringLiteral("RELU"));
  ASSERT_EQ(view.rows(), 1);
  EXPECT_EQ(source_row(view, 0), 1);
  EXPECT_TRUE(view.summary_text().startsWith(QStringLiteral("1 of 5 rows shown")));
  view.filter_edit()->setText(QStringLiteral("'add'"));
  ASSERT_EQ(view.rows(), 1);
  EXPECT_EQ(source_row(view, 0), 2);
  view.filter_edit()->clear();
  EXPECT_EQ(view.rows(), 5);

  view.only_past_tolerance()->setChecked(true);
  ASSERT_EQ(view.rows(), 2);
  EXPECT_EQ(source_row(view, 0), 4);
  EXPECT_EQ(source_row(view, 1), 1);
  EXPECT_TRUE(view.select_first_divergence());
  EXPECT_EQ(view.proxy()->mapToSource(view.table()->currentIndex()).row(), 1);
  // The first divergence filtered out: nothing to select.
  view.filter_edit()->setText(QStringLiteral("conv1"));
  EXPECT_EQ(view.rows(), 0);
  EXPECT_FALSE(view.select_first_divergence());
  view.only_past_tolerance()->setChecked(false);
  EXPECT_EQ(view.rows(), 1);
  view.filter_edit()->clear();

  // A new diff keeps the filters; none empties the table.
  view.only_past_tolerance()->setChecked(true);
  view.set_diff(sample_diff());
  EXPECT_EQ(view.rows(), 2);
  view.set_diff(nullptr);
  EXPECT_EQ(view.rows(), 0);
  EXPECT_FALSE(view.select_first_divergence());
}

TEST_F(ValueDiffTable, SignalsCarryTheGraphAndPyNativeNodeIds) {
  ValueDiffView view;
  view.resize(1000, 300);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  view.set_diff(sample_diff());
  QSignalSpy selected(&view, &ValueDiffView::node_selected);
  QSignalSpy pynative(&view, &ValueDiffView::show_in_pynative);

  // Selecting the first divergence by code names no node.
  ASSERT_TRUE(view.select_first_divergence());
  EXPECT_EQ(view.table()->currentIndex().row(), proxy_row_of(view, 1));
  EXPECT_EQ(selected.count(), 0);

  // A click names the row's Graph node, once; clicking it again names it again.
  const int fused = proxy_row_of(view, 2);
  QTest::mouseClick(view.table()->viewport(), Qt::LeftButton, {}, row_point(view, fused));
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.takeFirst().at(0).value<uint64_t>(), 10u);
  QTest::mouseClick(view.table()->viewport(), Qt::LeftButton, {}, row_point(view, fused));
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.takeFirst().at(0).value<uint64_t>(), 10u);
  EXPECT_EQ(pynative.count(), 0);

  // The keys move the current row: its node.
  view.table()->setFocus();
  QTest::keyClick(view.table(), Qt::Key_Down);
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.takeFirst().at(0).value<uint64_t>(),
            view.model()->row_at(source_row(view, fused + 1))->node_id.value);

  // A double-click names the PyNative node the fused value stands for.
  selected.clear();
  QTest::mouseDClick(view.table()->viewport(), Qt::LeftButton, {}, row_point(view, fused));
  ASSERT_EQ(pynative.count(), 1);
  EXPECT_EQ(pynative.takeFirst().at(0).value<uint64_t>(), 4u);
  for (const auto& args : selected) EXPECT_EQ(args.at(0).value<uint64_t>(), 10u);

  // The context menu: both ids; "Show in PyNative graph" off for a value without a counterpart.
  auto action = [](QMenu* menu, const QString& text) -> QAction* {
    for (QAction* a : menu->actions())
      if (a->text() == text) return a;
    return nullptr;
  };
  std::unique_ptr<QMenu> menu(view.row_menu(view.proxy()->index(fused, 0), nullptr));
  QAction* show = action(menu.get(), QStringLiteral("Show in PyNative graph"));
  QAction* select = action(menu.get(), QStringLiteral("Select Graph node"));
  ASSERT_TRUE(show && select);
  EXPECT_TRUE(show->isEnabled());
  show->trigger();
  ASSERT_EQ(pynative.count(), 1);
  EXPECT_EQ(pynative.takeFirst().at(0).value<uint64_t>(), 4u);
  selected.clear();
  select->trigger();
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.takeFirst().at(0).value<uint64_t>(), 10u);
  std::unique_ptr<QMenu> none(view.row_menu(view.proxy()->index(proxy_row_of(view, 3), 0), nullptr));
  QAction* off = action(none.get(), QStringLiteral("Show in PyNative graph"));
  ASSERT_NE(off, nullptr);
  EXPECT_FALSE(off->isEnabled());
  // Double-clicking it names nothing.
  QTest::mouseDClick(view.table()->viewport(), Qt::LeftButton, {}, row_point(view, proxy_row_of(view, 3)));
  EXPECT_EQ(pynative.count(), 0);
}

}  // namespace
}  // namespace ms::views
