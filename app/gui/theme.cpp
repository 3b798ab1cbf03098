#include "app/gui/theme.h"

#include <QApplication>
#include <QSettings>

namespace ms::app {

namespace {

QPalette& platform_palette() {
  static QPalette p = QApplication::palette();
  return p;
}

void apply_theme_palette(views::Theme theme) {
  QApplication::setPalette(views::theme_palette(theme, platform_palette()));
}

}  // namespace

views::Theme saved_theme() {
  const QString t = QSettings().value(QStringLiteral("theme")).toString();
  if (t == QLatin1String("light")) return views::Theme::Light;
  if (t == QLatin1String("dark")) return views::Theme::Dark;
  return views::Theme::System;
}

void apply_saved_theme() {
  platform_palette();  // taken before any change
  apply_theme_palette(saved_theme());
}

void set_theme(views::Theme theme) {
  apply_theme_palette(theme);
  // Widgets under a style sheet keep the palette they were polished with until it is set again.
  if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) app->setStyleSheet(app->styleSheet());
  QSettings().setValue(QStringLiteral("theme"), theme == views::Theme::Light  ? QStringLiteral("light")
                                                : theme == views::Theme::Dark ? QStringLiteral("dark")
                                                                              : QStringLiteral("system"));
}

}  // namespace ms::app
