// Captured values in the inspector (ValueView: slices, heat image, statistics, .npy), the graph's
// numerics overlay (GraphView::set_heat) and the error colour scale.
#include <gtest/gtest.h>

#include <QFile>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGroupBox>
#include <QLabel>
#include <QTemporaryDir>

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/frontend/npy.h"
#include "tests/views/test_graphs.h"
#include "views/common/palette.h"
#include "views/graph/graph_view.h"
#include "views/graph/inspector.h"
#include "views/graph/value_view.h"

namespace ms::views {
namespace {

// A captured f32 value of `shape` holding `values`, statistics from the values; `keep` false drops
// the tensor as a capture past its budget does.
runtime::CapturedValue captured(const std::string& name, Shape shape, const std::vector<float>& values,
                                bool keep = true) {
  runtime::CapturedValue v;
  v.name = name;
  v.node = "/stem/conv/Conv";
  v.op = "Conv";
  v.dtype = DType::F32;
  v.shape = shape;
  const Tensor t = Tensor::from_vector<float>(values, shape);
  v.stats = runtime::value_stats(t);
  if (keep) v.value = t;
  return v;
}

// [1,3,4,5]: element i is (i - 30) / 2, so the minimum is the first element of slice 0 and the
// maximum the last of slice 2; element 7 (slice 0, row 1, column 2) is NaN.
std::vector<float> ramp_with_nan() {
  std::vector<float> v(60);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<float>(i) - 30.0f) / 2.0f;
  v[7] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

bool reddish(QColor c) { return c.red() > 150 && c.green() < 100 && c.blue() < 100; }
bool bluish(QColor c) { return c.blue() > 150 && c.red() < 100 && c.green() < 100; }

TEST(ValueView, ShowsTheSlicesOfA4DValue) {
  test::qt_app();
  ValueView view;
  view.set_values({{QStringLiteral("PyNative"), captured("conv:0", {1, 3, 4, 5}, ramp_with_nan())}},
                  QStringLiteral("Graph against PyNative: max abs 2.4e-07, max rel 7.2e-07"));
  EXPECT_EQ(view.count(), 1);
  EXPECT_EQ(view.current(), 0);
  EXPECT_EQ(view.slices(), 3);
  EXPECT_EQ(view.slice(), 0);
  EXPECT_TRUE(view.stats_text().contains(QStringLiteral("NaN"))) << view.stats_text().toStdString();
  EXPECT_TRUE(view.stats_text().contains(QStringLiteral("[1,3,4,5]")));
  EXPECT_TRUE(view.comparison_text().contains(QStringLiteral("max rel 7.2e-07")));
  const QImage first = view.heat_image();
  ASSERT_EQ(first.size(), QSize(5, 4));
  EXPECT_TRUE(bluish(first.pixelColor(0, 0))) << first.pixelColor(0, 0).name().toStdString();  // the minimum
  EXPECT_EQ(first.pixelColor(2, 1), QColor(0xff, 0x00, 0xff));                                 // the NaN
  view.set_slice(2);
  EXPECT_EQ(view.slice(), 2);
  const QImage last = view.heat_image();
  ASSERT_EQ(last.size(), QSize(5, 4));
  EXPECT_NE(last, first);
  EXPECT_TRUE(reddish(last.pixelColor(4, 3))) << last.pixelColor(4, 3).name().toStdString();  // the maximum
  view.set_slice(3);                                                                          // out of range: ignored
  EXPECT_EQ(view.slice(), 2);
}

TEST(ValueView, SavesTheValueAsNpy) {
  test::qt_app();
  ValueView view;
  const auto values = ramp_with_nan();
  view.set_values({{QStringLiteral("Graph"), captured("conv:0", {1, 3, 4, 5}, values)}}, {});
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("conv.npy"));
  ASSERT_TRUE(view.save_npy(path));
  auto loaded = load_npy(path.toStdString());
  ASSERT_TRUE(loaded) << loaded.status().message();
  EXPECT_EQ(loaded->dtype(), DType::F32);
  EXPECT_EQ(loaded->shape(), (Shape{1, 3, 4, 5}));
  ASSERT_EQ(loaded->numel(), 60);
  EXPECT_EQ(std::memcmp(loaded->raw(), values.data(), values.size() * sizeof(float)), 0);
}

TEST(ValueView, BFloat16IsSavedAsFloat32) {
  test::qt_app();
  runtime::CapturedValue v = captured("h:0", {2, 2}, {1.0f, -2.0f, 0.5f, 3.0f});
  v.dtype = DType::BF16;
  const uint16_t bits[] = {0x3f80, 0xc000, 0x3f00, 0x4040};  // 1, -2, 0.5, 3
  v.value = Tensor::empty(DType::BF16, {2, 2});
  std::memcpy(v.value.raw(), bits, sizeof bits);
  ValueView view;
  view.set_values({{QStringLiteral("Graph"), v}}, {});
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("h.npy"));
  ASSERT_TRUE(view.save_npy(path));
  auto loaded = load_npy(path.toStdString());
  ASSERT_TRUE(loaded) << loaded.status().message();
  ASSERT_EQ(loaded->dtype(), DType::F32);
  EXPECT_EQ(loaded->data<float>()[1], -2.0f);
  EXPECT_EQ(loaded->data<float>()[3], 3.0f);
}

TEST(ValueView, AValuePastTheBudgetShowsItsStatisticsOnly) {
  test::qt_app();
  ValueView view;
  view.set_values({{QStringLiteral("PyNative"), captured("conv:0", {1, 3, 4, 5}, ramp_with_nan(), false)}}, {});
  EXPECT_EQ(view.slices(), 3);
  EXPECT_TRUE(view.heat_image().isNull());
  EXPECT_TRUE(view.stats_text().contains(QStringLiteral("NaN")));
  bool said = false;
  for (QLabel* l : view.findChildren<QLabel*>()) said |= l->text().contains(QStringLiteral("not kept"));
  EXPECT_TRUE(said);
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("none.npy"));
  EXPECT_FALSE(view.save_npy(path));
  EXPECT_FALSE(QFile::exists(path));
}

TEST(ValueView, PicksAmongValuesAndShowsOneRowFor1D) {
  test::qt_app();
  ValueView view;
  view.set_values({{QStringLiteral("PyNative"), captured("y:0", {6}, {0, 1, 2, 3, 4, 5})},
                   {QStringLiteral("Graph"), captured("y:0", {6}, {0, 1, 2, 3, 4, 6})},
                   {QStringLiteral("Graph"), captured("s:0", {}, {2.5f})}},
                  {});
  EXPECT_EQ(view.count(), 3);
  EXPECT_EQ(view.slices(), 1);
  EXPECT_EQ(view.heat_image().size(), QSize(6, 1));
  const QString first = view.stats_text();
  view.set_current(1);
  EXPECT_EQ(view.current(), 1);
  EXPECT_NE(view.stats_text(), first);
  view.set_current(2);
  EXPECT_EQ(view.heat_image().size(), QSize(1, 1));
  view.set_current(5);  // out of range: ignored
  EXPECT_EQ(view.current(), 2);
  view.set_values({}, {}, QStringLiteral("Numerics > Capture values to inspect activations"));
  EXPECT_EQ(view.count(), 0);
  EXPECT_EQ(view.current(), -1);
  EXPECT_EQ(view.slices(), 0);
  EXPECT_TRUE(view.heat_image().isNull());
  EXPECT_TRUE(view.stats_text().isEmpty());
  EXPECT_FALSE(view.save_npy(QStringLiteral("/nonexistent/x.npy")));
}

TEST(ValueView, InspectorShowsAndHidesTheValuesSection) {
  test::qt_app();
  Inspector inspector;
  inspector.resize(360, 900);
  inspector.show();
  auto* section = inspector.findChild<QGroupBox*>(QStringLiteral("ValuesSection"));
  ASSERT_NE(section, nullptr);
  EXPECT_FALSE(section->isVisible());
  inspector.show_values({{QStringLiteral("Graph"), captured("conv:0", {1, 3, 4, 5}, ramp_with_nan())}}, {}, {});
  EXPECT_TRUE(section->isVisible());
  EXPECT_EQ(inspector.values_view()->count(), 1);
  inspector.show_values({}, {}, QStringLiteral("Numerics > Capture values to inspect activations"));
  EXPECT_TRUE(section->isVisible());
  inspector.show_values({}, {}, {});
  EXPECT_FALSE(section->isVisible());
  inspector.show_values({{QStringLiteral("Graph"), captured("conv:0", {2}, {1, 2})}}, {}, {});
  inspector.show_node(nullptr, -1);  // another node: its values come after it
  EXPECT_FALSE(section->isVisible());
  EXPECT_EQ(inspector.values_view()->count(), 0);
}

TEST(ValueViewPalette, ErrorColoursRunFromGreenToRed) {
  const double tol = 1e-4;
  const QColor low = error_color(tol / 1000, tol), at_floor = error_color(tol / 100, tol);
  const QColor mid = error_color(tol / 10, tol), high = error_color(tol, tol), above = error_color(tol * 10, tol);
  EXPECT_EQ(low, at_floor);
  EXPECT_GT(low.green(), low.red());
  EXPECT_EQ(high, above);
  EXPECT_GT(above.red(), above.green());
  EXPECT_GT(mid.red(), 150);
  EXPECT_GT(mid.green(), 150);
  // Hue falls from green through yellow to red as the error grows.
  EXPECT_GT(low.hueF(), error_color(tol / 30, tol).hueF());
  EXPECT_GT(error_color(tol / 30, tol).hueF(), mid.hueF());
  EXPECT_GT(mid.hueF(), error_color(tol / 3, tol).hueF());
  EXPECT_GT(error_color(tol / 3, tol).hueF(), above.hueF());
  const QColor bad = error_color(std::numeric_limits<double>::quiet_NaN(), tol);
  EXPECT_EQ(bad, error_color(std::numeric_limits<double>::infinity(), tol));
  EXPECT_NE(bad, above);
  EXPECT_LT(bad.value(), above.value());
  EXPECT_EQ(error_color(0, tol), low);
  EXPECT_TRUE(error_legend_html(tol).contains(QStringLiteral("not compared")));
}

// The fill of each node box by NodeId value.
std::unordered_map<uint64_t, QColor> node_fills(const GraphView& view) {
  std::unordered_map<uint64_t, QColor> out;
  for (QGraphicsItem* it : view.canvas()->scene()->items())
    if (it->data(kRoleKind).toInt() == kKindNode)
      if (auto* b = dynamic_cast<BoxItem*>(it))
        out[view.model()->nodes[static_cast<size_t>(it->data(kRoleIndex).toInt())].node->id.value] = b->fill();
  return out;
}

// The scoped test graph laid out and shown in `view` (null when it could not be prepared).
std::shared_ptr<const GraphModel> show_scoped_graph(GraphView& view) {
  view.resize(900, 700);
  view.show();
  std::shared_ptr<const GraphModel> model = GraphModel::build(test::scoped_graph());
  auto prepared = prepare_view(*model, {});
  if (!prepared) return nullptr;
  view.show_prepared(model, std::move(*prepared));
  return model;
}

QLabel* heat_legend_label(const GraphView& view) {
  // In the band below the viewport: a child of the canvas, outside the viewport.
  return view.canvas()->findChild<QLabel*>(QStringLiteral("HeatLegend"));
}

TEST(NumericsHeat, ColoursExactlyTheGivenNodesAndClears) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  auto model = show_scoped_graph(view);
  ASSERT_TRUE(model);
  const auto plain = node_fills(view);
  ASSERT_GE(plain.size(), 4u);
  const uint64_t a = model->nodes[0].node->id.value, b = model->nodes[2].node->id.value;
  const QColor red(0xd6, 0x27, 0x28), green(0x2c, 0xa0, 0x2c);
  view.set_heat({{a, red}, {b, green}}, error_legend_html(1e-4));
  EXPECT_EQ(view.heat().size(), 2u);
  auto fills = node_fills(view);
  for (const auto& [id, c] : fills) {
    if (id == a) {
      EXPECT_EQ(c, red);
    } else if (id == b) {
      EXPECT_EQ(c, green);
    } else
      EXPECT_EQ(c, not_compared_color()) << id;
  }
  ASSERT_NE(heat_legend_label(view), nullptr);
  EXPECT_TRUE(heat_legend_label(view)->text().contains(QStringLiteral("not compared")));
  // A new snapshot keeps the overlay.
  auto again = prepare_view(*model, {});
  ASSERT_TRUE(again);
  view.show_prepared(model, std::move(*again));
  EXPECT_EQ(node_fills(view).at(a), red);
  ASSERT_NE(heat_legend_label(view), nullptr);
  // Empty restores the category colours.
  view.set_heat({}, {});
  EXPECT_TRUE(view.heat().empty());
  EXPECT_EQ(heat_legend_label(view), nullptr);
  EXPECT_EQ(node_fills(view), plain);
  view.set_heat({{a, red}}, QStringLiteral("legend"));
  view.clear();
  EXPECT_TRUE(view.heat().empty());
  EXPECT_EQ(heat_legend_label(view), nullptr);
}

TEST(NumericsHeat, GoesOverThePassDiffAndGivesItBack) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  auto model = show_scoped_graph(view);
  ASSERT_TRUE(model);
  const uint64_t a = model->nodes[0].node->id.value, b = model->nodes[1].node->id.value;
  view.set_diff({{a, GraphView::DiffMark::Rewritten}}, {});
  const auto diffed = node_fills(view);
  EXPECT_EQ(diffed.at(a), GraphView::diff_color(GraphView::DiffMark::Rewritten));
  view.set_heat({{b, QColor(Qt::green)}}, {});
  EXPECT_EQ(node_fills(view).at(a), not_compared_color());
  EXPECT_EQ(node_fills(view).at(b), QColor(Qt::green));
  EXPECT_EQ(heat_legend_label(view), nullptr);  // no legend given
  view.set_color_mode(ColorMode::OpType);       // refills: the overlay stays on top
  EXPECT_EQ(node_fills(view).at(b), QColor(Qt::green));
  view.set_color_mode(ColorMode::Category);
  view.set_heat({}, {});
  EXPECT_EQ(node_fills(view), diffed);
}

}  // namespace
}  // namespace ms::views
