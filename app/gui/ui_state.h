// What the window shows, as JSON read from its widgets (by object name where a widget has one):
// the window against its screen, each dock, the pass list, the inspector, the graph's selection and
// legends, the current tab, the timeline's outlined events and the comparison's order. Scenario
// tests assert on it instead of on pixels, and the layout checks read it.
#pragma once

#include <QJsonObject>
#include <QStringList>

namespace ms::app {

class MainWindow;

QJsonObject ui_state(const MainWindow& w);

// What is cut off or out of place in a state, one line each ("pass name column 96 px is narrower
// than 'constant-folding' (121 px)"); empty when nothing is.
QStringList layout_problems(const QJsonObject& state);

}  // namespace ms::app
