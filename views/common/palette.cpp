#include "views/common/palette.h"

#include <QHash>
#include <cstdint>

#include <algorithm>
#include <cmath>

#include "engine/ops/schema.h"

namespace ms::views {

QColor category_color(int category) {
  using C = ops::OpCategory;
  switch (static_cast<C>(category)) {
    case C::Conv: return QColor(0x4e, 0x79, 0xa7);
    case C::MatMul: return QColor(0x8e, 0x5e, 0xa2);
    case C::Activation: return QColor(0xf2, 0x8e, 0x2b);
    case C::Elementwise: return QColor(0x3a, 0xa3, 0x9a);
    case C::Pool: return QColor(0x59, 0xa1, 0x4f);
    case C::Norm: return QColor(0xd4, 0xa6, 0x1a);
    case C::Reduction: return QColor(0xe1, 0x57, 0x59);
    case C::Shape: return QColor(0x8c, 0x8c, 0x8c);
    case C::Data: return QColor(0x9c, 0x75, 0x5f);
    case C::ControlFlow: return QColor(0xc2, 0x3b, 0x6e);
    default: return QColor(0x79, 0x70, 0x6e);
  }
}

QColor op_type_color(const QString& op_type) {
  // Stable hue per op type: the same op gets the same colour in every graph and every run of the
  // app (FNV-1a of the name; qHash may be seeded per process).
  uint32_t h = 2166136261u;
  for (const QChar c : op_type) h = (h ^ c.unicode()) * 16777619u;
  return QColor::fromHsl(static_cast<int>(h % 360), 110 + static_cast<int>((h >> 9) % 60), 120);
}

int op_category(const std::string& op_type) {
  const ops::OpSchema* s = ops::Registry::instance().find(op_type);
  if ((!s || s->category == ops::OpCategory::Other) && op_type.rfind("Fused", 0) == 0 && op_type.size() > 5)
    if (const ops::OpSchema* base = ops::Registry::instance().find(op_type.substr(5)))
      return static_cast<int>(base->category);
  return s ? static_cast<int>(s->category) : -1;
}

namespace {

QColor palette_mix(const QColor& a, const QColor& b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto ch = [t](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * t)); };
  return QColor(ch(a.red(), b.red()), ch(a.green(), b.green()), ch(a.blue(), b.blue()));
}

}  // namespace

QColor diverging_color(double v, double lo, double hi) {
  if (std::isnan(v)) return QColor(0xff, 0x00, 0xff);
  if (std::isinf(v)) return QColor(0, 0, 0);
  const QColor blue(0x3b, 0x4c, 0xc0), white(0xf7, 0xf7, 0xf7), red(0xb4, 0x04, 0x26);
  const double mid = lo <= 0 && 0 <= hi ? 0.0 : (lo + hi) / 2;
  if (v < mid) return mid > lo ? palette_mix(white, blue, (mid - v) / (mid - lo)) : blue;
  if (v > mid) return hi > mid ? palette_mix(white, red, (v - mid) / (hi - mid)) : red;
  return white;
}

QColor error_color(double rel, double tol) {
  if (!std::isfinite(rel)) return QColor(0x7f, 0x00, 0x00);
  const QColor green(0x2c, 0xa0, 0x2c), yellow(0xf0, 0xc0, 0x1e), red(0xd6, 0x2a, 0x20);
  if (rel >= tol) return red;
  if (tol <= 0 || rel <= tol / 100) return green;
  // log10(rel / tol) runs from -2 (green) through -1 (yellow) to 0 (red).
  const double x = std::log10(rel / tol) + 2;
  return x < 1 ? palette_mix(green, yellow, x) : palette_mix(yellow, red, x - 1);
}

QColor not_compared_color() { return QColor(0xb4, 0xb8, 0xc0); }

QString error_legend_html(double tol) {
  auto swatch = [](const QColor& c, const QString& text) {
    return QStringLiteral("<span style='color:%1'>■</span> %2").arg(c.name(), text.toHtmlEscaped());
  };
  auto num = [](double v) { return QString::number(v, 'g', 2); };
  return QStringLiteral("max rel error: ") +
         QStringList{swatch(error_color(tol / 100, tol), QStringLiteral("≤ ") + num(tol / 100)),
                     swatch(error_color(tol / 10, tol), num(tol / 10)),
                     swatch(error_color(tol, tol), QStringLiteral("≥ ") + num(tol)),
                     swatch(error_color(std::nan(""), tol), QStringLiteral("NaN/inf")),
                     swatch(not_compared_color(), QStringLiteral("not compared"))}
             .join(QStringLiteral(" &nbsp;"));
}

namespace {
QColor chart_mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}
}  // namespace

ChartColors ChartColors::of(const QPalette& pal) {
  ChartColors c;
  c.base = pal.color(QPalette::Base);
  c.text = pal.color(QPalette::Text);
  c.panel = chart_mix(c.base, c.text, 0.03);
  c.grid = chart_mix(c.base, c.text, 0.10);
  c.muted = chart_mix(c.base, c.text, 0.62);
  c.band = chart_mix(c.base, pal.color(QPalette::Highlight), 0.14);
  return c;
}

QPalette theme_palette(Theme theme, const QPalette& system) {
  if (theme == Theme::System) return system;
  QPalette p;
  const bool dark = theme == Theme::Dark;
  const QColor window = dark ? QColor(0x2b, 0x2d, 0x31) : QColor(0xef, 0xef, 0xef);
  const QColor base = dark ? QColor(0x1f, 0x21, 0x25) : QColor(0xff, 0xff, 0xff);
  const QColor text = dark ? QColor(0xec, 0xee, 0xf1) : QColor(0x1d, 0x21, 0x27);
  const QColor button = dark ? QColor(0x35, 0x38, 0x3d) : QColor(0xf4, 0xf4, 0xf4);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, dark ? QColor(0x26, 0x28, 0x2d) : QColor(0xf6, 0xf6, 0xf8));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, dark ? QColor(0x8a, 0x90, 0x9a) : QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Highlight, dark ? QColor(0x3d, 0x7e, 0xd6) : QColor(0x30, 0x8c, 0xc6));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, dark ? QColor(0x6c, 0xb0, 0xff) : QColor(0x1a, 0x5f, 0xb4));
  p.setColor(QPalette::Light, dark ? QColor(0x45, 0x48, 0x4e) : Qt::white);
  p.setColor(QPalette::Midlight, dark ? QColor(0x3a, 0x3d, 0x42) : QColor(0xe3, 0xe3, 0xe3));
  p.setColor(QPalette::Mid, dark ? QColor(0x50, 0x54, 0x5a) : QColor(0xb8, 0xb8, 0xb8));
  p.setColor(QPalette::Dark, dark ? QColor(0x18, 0x19, 0x1c) : QColor(0x9f, 0x9f, 0x9f));
  p.setColor(QPalette::Shadow, Qt::black);
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, dark ? QColor(0x6e, 0x73, 0x7b) : QColor(0x9a, 0x9a, 0x9a));
  return p;
}

}  // namespace ms::views
