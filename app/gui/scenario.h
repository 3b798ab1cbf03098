// A user's walk through the real window, driven by synthetic mouse and key events (QTest) and
// checked through ui_state(): open a model, run both modes, click a pass, select a node, find its
// events outlined in the timeline, sort the comparison by loss, export the traces. Each step writes
// its state (NN-step.json) and a screenshot (NN-step.png) into a folder and checks the layout
// (layout_problems). Returns the process exit code: 0 when every check held.
#pragma once

#include <QString>

namespace ms::app {

class MainWindow;

int run_scenario(MainWindow& w, const QString& model, const QString& dir);

// Opens `model` (a zoo template, for training), starts each kind of job the window offers and
// cancels it with the status bar's Cancel button (cancel_scenario.cpp): every control enabled before
// the job is enabled again. Returns the process exit code: 0 when every check held.
int run_cancel_scenario(MainWindow& w, const QString& model);

}  // namespace ms::app
