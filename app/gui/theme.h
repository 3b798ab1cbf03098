// The application's theme (View > Theme: System, Light, Dark), kept in the setting "theme".
#pragma once

#include "views/common/palette.h"

namespace ms::app {

// Call once after the QApplication exists and before any window: remembers the platform's palette
// (for System) and applies the saved theme.
void apply_saved_theme();
views::Theme saved_theme();
// Applies `theme` to the application's palette and saves it.
void set_theme(views::Theme theme);

}  // namespace ms::app
