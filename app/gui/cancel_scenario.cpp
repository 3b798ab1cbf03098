// Cancel restores every control a job disabled (issue 24), checked on the real window: each kind of
// job the window starts (a run in each mode and in both, training, the three numerics jobs, the Pass
// Effect measurement) is started and cancelled with the status bar's Cancel button, as a user would.
// Every action and widget enabled before the job is enabled again right after the click and once the
// job has ended, and the same job starts again at once. Each job's record (what it disabled, what
// stayed disabled) goes to stderr as "cancel: ..." lines.
#include <QAbstractButton>
#include <QAction>
#include <QPointer>
#include <QPushButton>
#include <QStatusBar>
#include <QTest>

#include <cstdio>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/scenario.h"
#include "app/gui/train_panel.h"

namespace ms::app {

namespace {

// Every action's and widget's own enabled state (a widget disabled through a disabled parent is the
// parent's entry), kept by pointer; a control deleted since reads as gone.
using Controls = std::map<QObject*, std::pair<QPointer<QObject>, bool>>;

Controls enabled_controls(MainWindow& w) {
  Controls out;
  for (QAction* a : w.findChildren<QAction*>()) out[a] = {a, a->isEnabled()};
  for (QWidget* c : w.findChildren<QWidget*>()) out[c] = {c, !c->testAttribute(Qt::WA_ForceDisabled)};
  return out;
}

QString control_name(const QObject* o) {
  QString text;
  if (const auto* a = qobject_cast<const QAction*>(o)) text = a->text();
  if (const auto* b = qobject_cast<const QAbstractButton*>(o)) text = b->text();
  QString out = QString::fromLatin1(o->metaObject()->className());
  if (!o->objectName().isEmpty()) out += QLatin1Char(' ') + o->objectName();
  if (!text.isEmpty()) out += QStringLiteral(" \"%1\"").arg(text);
  return out;
}

// The controls enabled in `before` that are disabled (and still there) in `now`.
QStringList turned_off(const Controls& before, const Controls& now) {
  QStringList out;
  for (const auto& [key, was] : before) {
    auto it = now.find(key);
    if (!was.second || it == now.end() || !it->second.first) continue;
    if (!it->second.second) out << control_name(it->second.first);
  }
  return out;
}

struct CancelWalk {
  MainWindow& w;
  QStringList failures;

  void settle() {
    if (!QTest::qWaitFor([this] { return !w.busy() && !w.graph_view()->layout_busy(); }, 120000))
      fail(QStringLiteral("settle"), QStringLiteral("jobs still running after 120 s"));
    QTest::qWait(30);
  }
  void fail(const QString& job, const QString& what) {
    failures << job + QStringLiteral(": ") + what;
    std::fprintf(stderr, "cancel: FAILED %s: %s\n", qPrintable(job), qPrintable(what));
  }
  // The status bar's Cancel button, clicked; false when it is not showing.
  bool click_cancel() {
    auto* button = w.statusBar()->findChild<QPushButton*>(QStringLiteral("CancelJobs"));
    if (!button || !button->isVisible() || !button->isEnabled()) return false;
    QTest::mouseClick(button, Qt::LeftButton);
    return true;
  }
  void check_back(const QString& job, const Controls& before, const QString& when) {
    const QStringList off = turned_off(before, enabled_controls(w));
    if (!off.isEmpty()) fail(job, QStringLiteral("%1, still disabled: %2").arg(when, off.join(QStringLiteral(", "))));
  }
  // `off_while_running`: actions (their text without '&') the job must disable while it runs.
  void cancel_job(const QString& job, const std::function<bool()>& start, const QStringList& off_while_running = {}) {
    settle();
    const Controls before = enabled_controls(w);
    if (!start() || !w.busy()) {
      fail(job, QStringLiteral("did not start"));
      return;
    }
    for (QAction* a : w.findChildren<QAction*>())
      if (a->isEnabled() && off_while_running.contains(QString(a->text()).remove(QLatin1Char('&'))))
        fail(job, QStringLiteral("\"%1\" stays enabled while the job runs").arg(a->text()));
    const QStringList disabled = turned_off(before, enabled_controls(w));
    std::fprintf(stderr, "cancel: %s disabled %lld control(s): %s\n", qPrintable(job),
                 static_cast<long long>(disabled.size()), qPrintable(disabled.join(QStringLiteral(", "))));
    if (!click_cancel()) fail(job, QStringLiteral("no Cancel button while it runs"));
    check_back(job, before, QStringLiteral("right after Cancel"));
    // Started again at once, while the cancelled one may still be winding down; cancelled again.
    if (!start())
      fail(job, QStringLiteral("does not start again right after Cancel"));
    else if (w.busy() && !click_cancel())
      fail(job, QStringLiteral("no Cancel button for the second start"));
    settle();
    check_back(job, before, QStringLiteral("once the jobs ended"));
  }
};

}  // namespace

int run_cancel_scenario(MainWindow& w, const QString& model) {
  CancelWalk walk{w, {}};
  bool opened = false, ok = false;
  QObject::connect(&w, &MainWindow::model_opened, &w, [&](bool good) { opened = true, ok = good; });
  w.open(model);
  if (!QTest::qWaitFor([&] { return opened; }, 60000) || !ok) {
    std::fprintf(stderr, "cancel: FAILED open: %s did not open\n", qPrintable(model));
    return 1;
  }
  // A short run of both modes first: its passes are what the Pass Effect measurement leaves out.
  bool ran = false;
  QObject::connect(&w, &MainWindow::runs_finished, &w, [&](bool good) { ran = true, ok = good; });
  w.run_panel()->set_modes(QStringLiteral("both"));
  w.run_panel()->set_iterations(2);
  w.run();
  if (!QTest::qWaitFor([&] { return ran; }, 60000) || !ok)
    walk.fail(QStringLiteral("run"), QStringLiteral("the first run failed"));

  // Long enough that each job is still running when Cancel is clicked.
  w.run_panel()->set_iterations(100000);
  w.train_panel()->set_steps(100000);
  for (const char* mode : {"pynative", "graph", "both"})
    walk.cancel_job(QStringLiteral("run %1").arg(QLatin1String(mode)), [&w, mode] {
      w.run_panel()->set_modes(QLatin1String(mode));
      w.run();
      return w.busy();
    });
  walk.cancel_job(QStringLiteral("train"), [&w] { return w.train(); });
  using Kind = session::NumericsJob::Kind;
  for (const auto& [name, kind] : {std::pair{"numerics diff", Kind::Diff}, std::pair{"numerics bisect", Kind::Bisect},
                                   std::pair{"numerics nan", Kind::Trap}})
    walk.cancel_job(QLatin1String(name), [&w, kind = kind] { return w.start_numerics(kind); },
                    {QStringLiteral("Compare Values of Both Modes"), QStringLiteral("Bisect Passes"),
                     QStringLiteral("Find the First NaN or Infinity")});
  walk.cancel_job(QStringLiteral("pass effect"), [&w] { return w.measure_pass_effects(); });
  std::fprintf(stderr, "cancel: %s\n", walk.failures.isEmpty() ? "every control came back" : "FAILED");
  return walk.failures.isEmpty() ? 0 : 1;
}

}  // namespace ms::app
