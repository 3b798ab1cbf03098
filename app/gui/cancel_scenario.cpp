// Cancel restores every control a job disabled (issue 24), checked on the real window: each kind of
// job the window starts (a run in each mode and in both, training, the three numerics jobs, the Pass
// Effect measurement) is started and cancelled with the status bar's Cancel button, as a user would.
// Every action and widget enabled before the job is enabled again right after the click and once the
// job has ended, and the same job starts again at once. Each job's record (what it disabled, what
// stayed disabled) goes to stderr as "cancel: ..." lines. Training on two ranks (mpirun) is cancelled
// too, where mpirun is on PATH: no rank process may outlive the job, and the window says it was
// cancelled.
#include <QAbstractButton>
#include <QAction>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTest>
#include <QTextBlock>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "app/gui/main_window.h"
#include "app/gui/process_tree.h"
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

// What a job's cancel must also leave true, beside the controls (each optional).
struct JobChecks {
  std::function<void()> running, cancelled, ended;
};

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
  // `checks`: what else to check while the job runs (before Cancel), right after Cancel and once
  // the jobs have ended.
  void cancel_job(const QString& job, const std::function<bool()>& start, const QStringList& off_while_running = {},
                  const JobChecks& checks = {}) {
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
    if (checks.running) checks.running();
    if (!click_cancel()) fail(job, QStringLiteral("no Cancel button while it runs"));
    check_back(job, before, QStringLiteral("right after Cancel"));
    if (checks.cancelled) checks.cancelled();
    // Started again at once, while the cancelled one may still be winding down; cancelled again.
    if (!start())
      fail(job, QStringLiteral("does not start again right after Cancel"));
    else if (w.busy() && !click_cancel())
      fail(job, QStringLiteral("no Cancel button for the second start"));
    settle();
    check_back(job, before, QStringLiteral("once the jobs ended"));
    if (checks.ended) checks.ended();
  }
};

// Training on two ranks, cancelled mid-way: the ranks (modescope-cli under mpirun, their command
// lines naming the window's ranks folder) are seen running before Cancel, the window says the
// training was cancelled, and once the jobs have ended neither mpirun nor any rank is left.
void cancel_ranks_training(CancelWalk& walk, MainWindow& w) {
  const QString job = QStringLiteral("train 2 ranks");
  if (QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty()) {
    std::fprintf(stderr,
                 "cancel: skipped %s: mpirun is not on PATH, so the window cannot train on ranks "
                 "(Debian: apt-get install openmpi-bin)\n",
                 qPrintable(job));
    return;
  }
  const QString folder = MainWindow::ranks_folder() + QLatin1Char('/');
  std::vector<NamedProcess> seen;  // mpirun and the ranks, while the first start ran
  JobChecks checks;
  checks.running = [&] {
    // Mid-way: both ranks started (their training under way), mpirun still running.
    auto ranks_up = [&] {
      seen = processes_naming(folder);
      return std::count_if(seen.begin(), seen.end(), [](const NamedProcess& p) {
               return p.command.section(QLatin1Char(' '), 0, 0).endsWith(QLatin1String("modescope-cli"));
             }) >= 2;
    };
    if (!QTest::qWaitFor(ranks_up, 60000)) {
      walk.fail(job, QStringLiteral("its two ranks were not seen running within 60 s (%1 process(es) name %2)")
                         .arg(seen.size())
                         .arg(folder));
      return;
    }
    QTest::qWait(1500);
    if (!w.busy()) walk.fail(job, QStringLiteral("ended by itself before Cancel"));
    for (const NamedProcess& p : seen)
      std::fprintf(stderr, "cancel: %s runs pid %lld: %s\n", qPrintable(job), p.id.pid, qPrintable(p.command.left(60)));
  };
  checks.cancelled = [&] {
    const QString text = w.train_panel()->text();
    if (!text.contains(QLatin1String("cancelled"), Qt::CaseInsensitive))
      walk.fail(job, QStringLiteral("the Training tab does not say it was cancelled: \"%1\"").arg(text));
    auto* log = w.findChild<QPlainTextEdit*>();
    const QString last = log ? log->document()->lastBlock().text() : QString();
    if (!last.contains(QLatin1String("Cancelled")))
      walk.fail(job, QStringLiteral("the log's last line does not report the cancel: \"%1\"").arg(last));
  };
  checks.ended = [&] {
    // Once the jobs have ended, nothing they started runs: neither the processes seen before Cancel
    // nor any other naming the ranks folder (the second start's).
    QStringList left;
    for (const NamedProcess& p : seen)
      if (process_running(p.id)) left << QStringLiteral("pid %1 (%2)").arg(p.id.pid).arg(p.command.left(60));
    for (const NamedProcess& p : processes_naming(folder))
      if (std::none_of(seen.begin(), seen.end(), [&](const NamedProcess& s) { return s.id.pid == p.id.pid; }))
        left << QStringLiteral("pid %1 (%2)").arg(p.id.pid).arg(p.command.left(60));
    if (!left.isEmpty())
      walk.fail(job, QStringLiteral("still running once the jobs ended: ") + left.join(QStringLiteral(", ")));
    else if (!seen.empty())
      std::fprintf(stderr, "cancel: %s: the %zu process(es) it ran are gone\n", qPrintable(job), seen.size());
  };
  w.train_panel()->set_ranks(2);
  walk.cancel_job(
      job, [&w] { return w.train(); }, {}, checks);
  w.train_panel()->set_ranks(1);
}

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
  cancel_ranks_training(walk, w);
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
