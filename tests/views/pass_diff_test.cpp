// The pass stepper's diff colouring: marked nodes take the diff colours, unchanged ones grey, the
// legend with the removed nodes shows over the view, and a new model clears it.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QGraphicsItem>
#include <QLabel>

#include "tests/views/test_graphs.h"
#include "views/graph/graph_view.h"
#include "views/models/pass_list_model.h"

namespace ms::views {
namespace {

TEST(PassDiff, ColoursMarkedNodesAndListsRemovedOnes) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(900, 700);
  view.show();
  auto model = GraphModel::build(test::scoped_graph());
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  view.show_prepared(model, std::move(*prepared));
  ASSERT_GE(model->nodes.size(), 2u);
  const uint64_t first = model->nodes[0].node->id.value;
  view.set_diff({{first, GraphView::DiffMark::Fused}}, {QStringLiteral("bn (BatchNormalization)")});
  EXPECT_EQ(view.diff().size(), 1u);
  QLabel* legend = nullptr;
  for (QLabel* l : view.findChildren<QLabel*>())
    if (l->text().contains(QStringLiteral("removed"))) legend = l;
  ASSERT_NE(legend, nullptr);
  EXPECT_TRUE(legend->text().contains(QStringLiteral("bn (BatchNormalization)")));
  // Collapsing or expanding rebuilds the scene; a new model clears the diff.
  auto again = prepare_view(*model, {});
  ASSERT_TRUE(again);
  view.show_prepared(model, std::move(*again));
  EXPECT_TRUE(view.diff().empty());
}

TEST(PassDiff, UnchangedPassesAreDimmed) {
  test::qt_app();
  PassListModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  PassRow input, changed, idle;
  input.name = QStringLiteral("input");
  changed.name = QStringLiteral("fuse-ops");
  changed.changed = true;
  changed.fused = 3;
  idle.name = QStringLiteral("cse");
  m.set_passes({input, changed, idle});
  EXPECT_FALSE(m.data(m.index(1, 0), Qt::ForegroundRole).isValid());
  EXPECT_TRUE(m.data(m.index(2, 0), Qt::ForegroundRole).isValid());
}

TEST(PassDiff, PassesCanBeUncheckedForTheNextRun) {
  test::qt_app();
  PassListModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  PassRow input, fuse;
  input.name = QStringLiteral("input");
  fuse.name = fuse.description = QStringLiteral("fuse-ops");
  fuse.pass = "fuse-ops";
  m.set_passes({input, fuse});
  EXPECT_FALSE(m.flags(m.index(0, 0)) & Qt::ItemIsUserCheckable);  // the input graph is no pass
  ASSERT_TRUE(m.flags(m.index(1, 0)) & Qt::ItemIsUserCheckable);
  EXPECT_EQ(m.data(m.index(1, 0), Qt::CheckStateRole).toInt(), Qt::Checked);
  EXPECT_TRUE(m.disabled().empty());
  EXPECT_TRUE(m.setData(m.index(1, 0), Qt::Unchecked, Qt::CheckStateRole));
  ASSERT_EQ(m.disabled().size(), 1u);
  EXPECT_EQ(m.disabled()[0], "fuse-ops");
  EXPECT_FALSE(m.setData(m.index(0, 0), Qt::Unchecked, Qt::CheckStateRole));
}

}  // namespace
}  // namespace ms::views
