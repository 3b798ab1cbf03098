// The Training tab's loss curve: series by mode, live points, summaries, log scale, and that it
// draws both curves (offscreen).
#include <gtest/gtest.h>

#include <QImage>
#include <cmath>

#include "tests/views/test_graphs.h"
#include "views/train/loss_curve.h"

namespace ms::views {
namespace {

// Pixels close to `c` in the image.
int count_colour(const QImage& img, QColor c) {
  int n = 0;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) {
      const QColor p = img.pixelColor(x, y);
      if (std::abs(p.red() - c.red()) < 30 && std::abs(p.green() - c.green()) < 30 &&
          std::abs(p.blue() - c.blue()) < 30)
        ++n;
    }
  return n;
}

TEST(LossCurve, DrawsEachModesCurveAsPointsArrive) {
  test::qt_app();
  LossCurveView view;
  view.resize(800, 400);
  const QImage empty = view.grab().toImage();
  EXPECT_EQ(count_colour(empty, QColor(0x1f, 0x77, 0xb4)), 0);
  view.begin_series("PyNative");
  view.begin_series("Graph");
  for (int s = 1; s <= 100; ++s) {
    view.add_point("PyNative", s, 2.3 * std::exp(-s / 20.0));
    view.add_point("Graph", s, 2.3 * std::exp(-s / 25.0));
  }
  view.set_summary("Graph", "95.0% test accuracy");
  EXPECT_EQ(view.series_count(), 2);
  EXPECT_EQ(view.point_count("PyNative"), 100);
  EXPECT_EQ(view.point_count("Graph"), 100);
  const QImage img = view.grab().toImage();
  EXPECT_GT(count_colour(img, QColor(0x1f, 0x77, 0xb4)), 200);  // PyNative blue
  EXPECT_GT(count_colour(img, QColor(0xe6, 0x7e, 0x22)), 100);  // Graph orange
  view.set_log_scale(true);
  EXPECT_TRUE(view.log_scale());
  EXPECT_NE(view.grab().toImage(), img);
  // Restarting a series empties it; clear() forgets them all.
  view.begin_series("Graph");
  EXPECT_EQ(view.point_count("Graph"), 0);
  view.clear();
  EXPECT_EQ(view.series_count(), 0);
}

TEST(LossCurve, TheRanksOfAModeTakeShadesOfItsColour) {
  test::qt_app();
  LossCurveView view;
  view.resize(800, 400);
  for (const char* name : {"PyNative", "PyNative rank 0", "PyNative rank 1", "PyNative rank 2", "Graph rank 1"})
    view.begin_series(name);
  EXPECT_EQ(view.color("PyNative rank 0"), view.color("PyNative"));
  EXPECT_NE(view.color("PyNative rank 1"), view.color("PyNative rank 0"));
  EXPECT_NE(view.color("PyNative rank 2"), view.color("PyNative rank 1"));
  EXPECT_EQ(view.color("PyNative rank 1").hue(), view.color("PyNative").hue());
  EXPECT_GT(view.color("PyNative rank 1").lightness(), view.color("PyNative").lightness());
  EXPECT_EQ(view.color("Graph rank 1").hue(), QColor(0xe6, 0x7e, 0x22).hue());
  EXPECT_FALSE(view.color("none").isValid());
  for (int s = 1; s <= 50; ++s) view.add_point("PyNative rank 1", s, 2.0 - s / 50.0);
  EXPECT_GT(count_colour(view.grab().toImage(), view.color("PyNative rank 1")), 100);
}

TEST(LossCurve, NonFiniteLossesAreSkippedNotDrawn) {
  test::qt_app();
  LossCurveView view;
  view.resize(400, 300);
  view.add_point("PyNative", 1, NAN);
  view.add_point("PyNative", 2, INFINITY);
  EXPECT_EQ(view.point_count("PyNative"), 2);
  const QImage img = view.grab().toImage();  // must not crash; nothing finite to draw
  EXPECT_EQ(count_colour(img, QColor(0x1f, 0x77, 0xb4)), 0);
}

}  // namespace
}  // namespace ms::views
