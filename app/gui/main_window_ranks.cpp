// MainWindow: ranks. File > Open Ranks reads one training trace per rank into the Ranks tab, and
// each rank's loss as its trace recorded it into the Training tab; the Training tab with ranks > 1
// runs modescope-cli train under mpirun (scripts/mpirun-local's settings: root, oversubscription,
// no single-copy path, yielding waits), one mode after the other, then shows each rank's loss
// curve (from its report) and opens the ranks' traces. The curves are kept by the session.
#include <QCoreApplication>
#include <QDateTime>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTabWidget>
#include <QThread>

#include <fcntl.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "app/gui/main_window.h"
#include "app/gui/process_tree.h"
#include "app/gui/train_panel.h"
#include "app/session/rank_curves.h"
#include "engine/compiler/pipeline.h"
#include "profiler/io/chrome_trace.h"
#include "views/timeline/ranks_view.h"
#include "views/train/loss_curve.h"

namespace ms::app {

namespace {

// Whether two sibling processes may read each other's memory (cross-memory attach: Open MPI's
// single-copy path between ranks on one machine), as scripts/mpirun-local probes it: a child holds
// a known buffer and a second child reads it with process_vm_readv. Many containers' seccomp
// profiles or Yama's ptrace scope refuse it; where they do not, the ranks' large all-reduces copy
// once instead of through shared-memory fragments that need both ranks' threads running at once
// (resnet18 on 2 cores, 2 ranks: steps ~25% shorter). Only async-signal-safe calls in the children.
bool cross_memory_attach_works() {
#ifdef __linux__
  static const bool works = [] {
    static const char kData[16] = "modescope-cma";
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    const pid_t holder = fork();
    if (holder == 0) {  // keeps kData (at the parent's address) until the parent closes the pipe
      close(fds[1]);
      char c;
      while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
    close(fds[0]);
    bool ok = false;
    if (holder > 0) {
      const pid_t reader = fork();
      if (reader == 0) {
        char got[16] = {};
        iovec local{got, sizeof got};
        iovec remote{const_cast<char*>(kData), sizeof kData};
        const ssize_t n = process_vm_readv(holder, &local, 1, &remote, 1, 0);
        _exit(n == static_cast<ssize_t>(sizeof got) && std::memcmp(got, kData, sizeof got) == 0 ? 0 : 1);
      }
      int status = 1;
      ok = reader > 0 && waitpid(reader, &status, 0) == reader && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    close(fds[1]);
    if (holder > 0) waitpid(holder, nullptr, 0);
    return ok;
  }();
  return works;
#else
  return false;
#endif
}

struct RanksRun {
  QString mode;  // pynative | graph
  QString dir;   // prof{rank} and r{rank}.json in it
  QString output;
  int exit_code = 0;
};

struct OpenedRanks {
  views::RanksData ranks;
  std::vector<session::TrainingCurve> curves;  // each rank's loss, where its trace has them
};

// A rank's loss curve from its trace (the steps' losses and lrs, the lane's step times); none when
// the trace records no loss. The mode is the run's ("train graph" -> graph).
std::optional<session::TrainingCurve> loss_curve_of(const views::RankLane& lane, const prof::Trace& trace) {
  views::RankStepValues v = views::rank_step_values(trace);
  if (v.losses.empty()) return std::nullopt;
  std::vector<double> step_ms(v.losses.size(), 0.0);
  for (const views::RankSpan& s : lane.steps)
    if (s.step >= 1 && static_cast<size_t>(s.step) <= step_ms.size())
      step_ms[static_cast<size_t>(s.step - 1)] = static_cast<double>(s.t1 - s.t0) / 1e6;
  const std::string prefix = "train ";
  const std::string mode = lane.group.rfind(prefix, 0) == 0 ? lane.group.substr(prefix.size()) : lane.group;
  return session::rank_curve(mode, lane.rank, lane.world_size, std::move(v.losses), std::move(v.lrs),
                             std::move(step_ms));
}

// The Training tab's lines go into each curve's report, so a reopened session shows them again.
void with_panel_text(std::vector<session::TrainingCurve>& curves, const QString& text) {
  for (session::TrainingCurve& c : curves) {
    QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(c.report)).object();
    o.insert(QStringLiteral("text"), text);
    c.report = QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
  }
}

// Where modescope-cli is: beside the app (the build folder, an install's bin/), else on PATH.
QString find_cli() {
  const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/modescope-cli");
  return QFileInfo(beside).isExecutable() ? beside : QStandardPaths::findExecutable(QStringLiteral("modescope-cli"));
}

// Cancel stops mpirun and its ranks before the job ends. SIGTERM first: mpirun passes it on to the
// ranks and exits once they have ended (well under a second). What it started and still runs then,
// or after 5 s, is killed with it (SIGKILL). Killing mpirun alone left its ranks running (training,
// writing into the job's folder) until they noticed it was gone, a second or more later.
void stop_ranks(QProcess& p) {
  std::vector<ProcessId> below = process_descendants(p.processId());
  p.terminate();
  const bool ended = p.waitForFinished(5000);
  if (!ended)
    for (const ProcessId& c : process_descendants(p.processId())) below.push_back(c);
  for (const ProcessId& c : below)
    if (process_running(c)) ::kill(static_cast<pid_t>(c.pid), SIGKILL);
  if (!ended) {
    p.kill();
    p.waitForFinished(2000);
  }
  QDeadlineTimer gone(1000);
  while (!gone.hasExpired() &&
         std::any_of(below.begin(), below.end(), [](const ProcessId& c) { return process_running(c); }))
    QThread::msleep(10);
}

}  // namespace

void MainWindow::open_ranks(const QStringList& paths, bool show_losses) {
  show_start_page(false);
  log(tr("Opening %n rank trace(s)", nullptr, static_cast<int>(paths.size())));
  jobs_->start(
      QStringLiteral("open-ranks"), tr("Opening ranks"), this,
      [paths](views::JobContext& ctx) -> Expected<OpenedRanks> {
        OpenedRanks out;
        std::vector<views::RankLane> lanes;
        for (int i = 0; i < paths.size(); ++i) {
          ctx.progress(static_cast<double>(i) / static_cast<double>(paths.size()),
                       QObject::tr("Reading %1").arg(paths[i]));
          MS_ASSIGN_OR_RETURN(prof::ImportResult r, prof::import_chrome_trace_file(paths[i].toStdString()));
          MS_ASSIGN_OR_RETURN(views::RankLane lane, views::rank_lane(*r.trace, i, paths[i].toStdString()));
          if (std::optional<session::TrainingCurve> c = loss_curve_of(lane, *r.trace)) out.curves.push_back(*c);
          lanes.push_back(std::move(lane));
        }
        out.ranks = views::ranks_data(std::move(lanes));
        return out;
      },
      [this, show_losses](Expected<OpenedRanks> r) {
        if (!r) {
          log(QString::fromStdString(r.status().message()), true);
          Q_EMIT ranks_opened(false);
          return;
        }
        ranks_->set_data(std::move(r->ranks));
        dirty_ = true;  // the ranks are autosaved, with or without a model open
        tabs_->setCurrentWidget(ranks_);
        for (QAction* a : save_actions_) a->setEnabled(true);  // a session of the ranks alone can be saved
        for (const QString& line : ranks_->summary_text().split(QLatin1Char('\n'))) log(line);
        // The Training tab: each rank's loss as its trace recorded it.
        if (show_losses && !r->curves.empty()) {
          const QString text = tr("Each rank's loss from its trace (%n curve(s)); the ranks are in the Ranks tab",
                                  nullptr, static_cast<int>(r->curves.size()));
          with_panel_text(r->curves, text);
          show_training(r->curves);
          train_panel_->set_text(text);
          log(text);
        }
        Q_EMIT ranks_opened(true);
      });
}

QString MainWindow::ranks_folder() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/ranks");
}

bool MainWindow::train_ranks() {
  const int ranks = train_panel_->ranks();
  const QString mpirun = QStandardPaths::findExecutable(QStringLiteral("mpirun"));
  const QString cli = find_cli();
  QString missing;
  if (mpirun.isEmpty())
    missing = tr("Training on %1 ranks needs Open MPI's mpirun, which is not on PATH (Debian: apt-get install "
                 "openmpi-bin)")
                  .arg(ranks);
  else if (cli.isEmpty())
    missing = tr("Training on %1 ranks runs modescope-cli, which is neither beside the app nor on PATH").arg(ranks);
  if (!missing.isEmpty()) {
    train_panel_->set_text(missing);
    log(missing, true);
    Q_EMIT training_finished(false);
    return false;
  }
  const nn::train::RunOptions o = train_panel_->options();
  QStringList common = {QStringLiteral("train"),       doc_->source,
                        QStringLiteral("--steps"),     QString::number(o.steps),
                        QStringLiteral("--optimizer"), QString::fromStdString(o.optimizer),
                        QStringLiteral("--data"),      QString::fromStdString(o.data),
                        QStringLiteral("--jit-level"), QString::fromLatin1(compiler::jit_level_name(o.jit_level)),
                        QStringLiteral("--threads"),   QStringLiteral("1")};
  if (o.lr > 0) common << QStringLiteral("--lr") << QString::number(o.lr, 'g', 17);
  if (train_panel_->sync_batchnorm()) common << QStringLiteral("--sync-bn");
  const QString base =
      ranks_folder() + QLatin1Char('/') + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss-zzz"));
  std::vector<RanksRun> plan;
  for (nn::Mode m : train_panel_->modes()) {
    const QString mode = m == nn::Mode::Graph ? QStringLiteral("graph") : QStringLiteral("pynative");
    plan.push_back({mode, base + QLatin1Char('/') + mode, {}, 0});
  }
  train_panel_->set_busy(true);
  train_panel_->curve()->clear();
  tabs_->setCurrentWidget(train_panel_);
  log(tr("Training %1 on %2 ranks under %3").arg(doc_->source).arg(ranks).arg(mpirun));
  train_job_ = jobs_->start(
      QStringLiteral("train"), tr("Training on %1 ranks").arg(ranks), this,
      [plan, ranks, mpirun, cli, common](views::JobContext& ctx) mutable {
        for (size_t k = 0; k < plan.size(); ++k) {
          RanksRun& run = plan[k];
          QDir().mkpath(run.dir);
          QProcess p;
          QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
          // scripts/mpirun-local's settings, for containers and for more ranks than cores.
          if (!env.contains(QStringLiteral("OMPI_MCA_btl_vader_single_copy_mechanism")))
            env.insert(QStringLiteral("OMPI_MCA_btl_vader_single_copy_mechanism"),
                       cross_memory_attach_works() ? QStringLiteral("cma") : QStringLiteral("none"));
          env.insert(QStringLiteral("OMPI_MCA_mpi_yield_when_idle"), QStringLiteral("1"));
          env.insert(QStringLiteral("OMPI_MCA_rmaps_base_oversubscribe"), QStringLiteral("1"));
          p.setProcessEnvironment(env);
          p.setProcessChannelMode(QProcess::MergedChannels);
          QStringList args = {QStringLiteral("--allow-run-as-root"),
                              QStringLiteral("--oversubscribe"),
                              QStringLiteral("--bind-to"),
                              QStringLiteral("none"),
                              QStringLiteral("-np"),
                              QString::number(ranks),
                              cli};
          args << common << QStringLiteral("--mode") << run.mode << QStringLiteral("--profile")
               << run.dir + QStringLiteral("/prof{rank}") << QStringLiteral("--report")
               << run.dir + QStringLiteral("/r{rank}.json");
          ctx.progress(static_cast<double>(k) / static_cast<double>(plan.size()),
                       QObject::tr("%1 on %2 ranks").arg(run.mode).arg(ranks));
          p.start(mpirun, args);
          while (!p.waitForFinished(200)) {
            if (p.state() == QProcess::NotRunning) break;
            if (ctx.cancelled()) {
              stop_ranks(p);
              return plan;
            }
          }
          run.output = QString::fromLocal8Bit(p.readAll());
          run.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
          if (p.error() == QProcess::FailedToStart) run.exit_code = -2;
        }
        return plan;
      },
      [this, ranks](std::vector<RanksRun> plan) {
        train_job_ = 0;
        train_panel_->set_busy(false);
        bool ok = true;
        QStringList traces, lines;
        std::vector<session::TrainingCurve> curves;  // each rank's loss, kept by the session
        for (const RanksRun& run : plan) {
          const QString who = run.mode == QLatin1String("graph") ? tr("Graph") : tr("PyNative");
          if (run.exit_code != 0) {
            ok = false;
            // mpirun frames its messages with dashed lines: the last line with words in it.
            QString last;
            for (const QString& l : run.output.split(QLatin1Char('\n')))
              if (!l.trimmed().isEmpty() && !l.startsWith(QLatin1String("---"))) last = l.trimmed();
            lines << tr("%1 on %2 ranks failed (exit %3): %4").arg(who).arg(ranks).arg(run.exit_code).arg(last);
            log(lines.back(), true);
            continue;
          }
          for (int r = 0; r < ranks; ++r) {
            const QString path = run.dir + QStringLiteral("/r%1.json").arg(r);
            QFile f(path);
            auto c = f.open(QIODevice::ReadOnly)
                         ? session::rank_curve_from_report(f.readAll().toStdString(), path.toStdString())
                         : Expected<session::TrainingCurve>(io_error(path.toStdString() + ": cannot read the report"));
            if (c)
              curves.push_back(std::move(*c));
            else
              log(QString::fromStdString(c.status().message()), true);
          }
          for (int r = 0; r < ranks; ++r)
            traces << run.dir + QStringLiteral("/prof%1/%2.train.trace.json").arg(r).arg(run.mode);
          lines << tr("%1 on %2 ranks: reports and traces in %3").arg(who).arg(ranks).arg(run.dir);
          log(lines.back());
        }
        const QString text = lines.join(QLatin1Char('\n'));
        with_panel_text(curves, text);
        show_training(curves);
        dirty_ = dirty_ || !curves.empty();
        train_panel_->set_text(text);
        if (!traces.isEmpty()) {
          connect(
              this, &MainWindow::ranks_opened, this,
              [this, ok](bool opened) { Q_EMIT training_finished(ok && opened); }, Qt::SingleShotConnection);
          open_ranks(traces, /*show_losses=*/false);  // the reports' curves are shown
          return;
        }
        Q_EMIT training_finished(ok);
      });
  return true;
}

}  // namespace ms::app
