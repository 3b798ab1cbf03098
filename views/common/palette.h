// Colours every view shares, so an op has one colour in the graph, the timeline, the memory heatmap
// and the legends.
#pragma once

#include <QColor>
#include <QPalette>
#include <QString>
#include <string>

namespace ms::views {

QColor category_color(int category);  // ops::OpCategory as int; -1 = unknown
QColor op_type_color(const QString& op_type);
// The op's category as int (ops::OpCategory); a fused op (FusedConv, FusedMatMul...) takes the
// category of the op it is built around; -1 when unknown.
int op_category(const std::string& op_type);

// A value on a diverging scale: blue at `lo`, white at 0 when lo <= 0 <= hi (else at the middle),
// red at `hi`; NaN magenta, an infinity black.
QColor diverging_color(double v, double lo, double hi);

// A relative error against a tolerance, on a log scale: green at or below tol/100, yellow at tol/10,
// red at or above tol; NaN or an infinity dark red.
QColor error_color(double rel, double tol);
// The fill of a node or value that was not compared.
QColor not_compared_color();
// One line of rich text naming error_color's steps for `tol`.
QString error_legend_html(double tol);

// A chart's colours taken from a widget's palette, so the timeline, memory and compare views read in
// a light and a dark theme alike: the background, a panel a shade off it, grid lines, text, muted
// text, and a band tinted with the highlight colour.
struct ChartColors {
  QColor base, panel, grid, text, muted, band;
  static ChartColors of(const QPalette& pal);
};

// The application's themes (View > Theme): the platform's palette, or a light or a dark one.
enum class Theme { System, Light, Dark };
QPalette theme_palette(Theme theme, const QPalette& system);

}  // namespace ms::views
