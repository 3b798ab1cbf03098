// The Training tab's job: run_training for each chosen mode, one after the other, on a worker; each
// step's loss is queued to the loss curve as it happens, and the last step of each mode is
// observed op by op so its profile opens in the timeline, memory and comparison views.
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>
#include <QPointer>

#include "app/gui/main_window.h"
#include "app/gui/train_panel.h"
#include "app/session/train_profile.h"
#include "views/jobs/job_tracker.h"
#include "views/train/loss_curve.h"

namespace ms::app {

namespace {

struct TrainOutcome {
  QString name;
  nn::Mode mode = nn::Mode::PyNative;
  Expected<nn::train::RunResult> result = Status::error(ErrorCode::Cancelled, "not run");
  // The last step, observed op by op: it opens in the timeline, heatmap and comparison.
  prof::TracePtr trace;
  std::shared_ptr<const runtime::MemoryPlan> plan;
};

QString mode_label(nn::Mode m) { return m == nn::Mode::Graph ? QStringLiteral("Graph") : QStringLiteral("PyNative"); }

}  // namespace

bool MainWindow::train() {
  if (!doc_ || !doc_->source.startsWith(QLatin1String("zoo:"))) {
    const QString msg = tr("Training needs a zoo template: open one with File → New from template (the open model "
                           "is %1)")
                            .arg(doc_ ? doc_->source : tr("none"));
    train_panel_->set_text(msg);
    log(msg, true);
    Q_EMIT training_finished(false);
    return false;
  }
  if (train_panel_->ranks() > 1) return train_ranks();
  nn::train::RunOptions base = train_panel_->options();
  base.model = doc_->source.toStdString();
  const std::vector<nn::Mode> modes = train_panel_->modes();
  train_panel_->set_busy(true);
  train_panel_->curve()->clear();
  tabs_->setCurrentWidget(train_panel_);
  QPointer<views::LossCurveView> curve = train_panel_->curve();
  log(tr("Training %1 for %2 steps").arg(doc_->source).arg(base.steps));
  train_job_ = jobs_->start(
      QStringLiteral("train"), tr("Training"), this,
      [base, modes, curve](views::JobContext& ctx) {
        std::vector<TrainOutcome> outs;
        for (size_t k = 0; k < modes.size(); ++k) {
          nn::train::RunOptions o = base;
          o.mode = modes[k];
          o.cancelled = ctx.cancel_predicate();  // checked between steps
          const QString name = mode_label(o.mode);
          QMetaObject::invokeMethod(
              curve,
              [curve, name] {
                if (curve) curve->begin_series(name);
              },
              Qt::QueuedConnection);
          const double total = static_cast<double>(o.steps * static_cast<int64_t>(modes.size()));
          // The last step is observed the way the run loop observes its iterations (GPU kernels too).
          auto profiled = session::run_training_profiled(o, [&](int64_t step, double loss, double) {
            QMetaObject::invokeMethod(
                curve,
                [curve, name, step, loss] {
                  if (curve) curve->add_point(name, static_cast<int>(step), loss);
                },
                Qt::QueuedConnection);
            ctx.progress((static_cast<double>(k) * static_cast<double>(o.steps) + static_cast<double>(step)) / total,
                         QStringLiteral("%1 step %2").arg(name).arg(step));
          });
          TrainOutcome out{name, o.mode, std::move(profiled.result), std::move(profiled.trace),
                           std::move(profiled.plan)};
          outs.push_back(std::move(out));
          if (ctx.cancelled()) break;
        }
        return outs;
      },
      [this](std::vector<TrainOutcome> outs) {
        train_job_ = 0;
        train_panel_->set_busy(false);
        bool ok = !outs.empty();
        QStringList lines;
        for (auto& o : outs) {
          if (!o.result) {
            ok = false;
            lines << tr("%1: %2").arg(o.name, QString::fromStdString(o.result.status().message()));
            log(lines.back(), true);
            continue;
          }
          const auto& r = *o.result;
          QString summary = tr("%1 ms/step").arg(r.steady.median, 0, 'f', 2);
          if (r.accuracy >= 0) summary = tr("%1% test accuracy, ").arg(100.0 * r.accuracy, 0, 'f', 1) + summary;
          train_panel_->curve()->set_summary(o.name, summary);
          lines << tr("%1 — %2 on %3 (%4 train / %5 test): median step %6 ms (p10 %7, p90 %8), compile %9 ms, "
                      "peak %10 KiB%11")
                       .arg(o.name, QString::fromStdString(r.model), QString::fromStdString(r.data))
                       .arg(r.train_examples)
                       .arg(r.test_examples)
                       .arg(r.steady.median, 0, 'f', 3)
                       .arg(r.steady.p10, 0, 'f', 3)
                       .arg(r.steady.p90, 0, 'f', 3)
                       .arg(r.compile_ms, 0, 'f', 1)
                       .arg(static_cast<double>(r.peak_bytes) / 1024.0, 0, 'f', 1)
                       .arg(r.accuracy >= 0 ? tr(", test accuracy %1%").arg(100.0 * r.accuracy, 0, 'f', 2) : QString());
          log(lines.back());
        }
        train_panel_->set_text(lines.join(QLatin1Char('\n')));
        // The curves as a session keeps them: the series' points, summary and log line.
        training_.clear();
        for (int i = 0; i < static_cast<int>(outs.size()); ++i) {
          const TrainOutcome& o = outs[static_cast<size_t>(i)];
          if (!o.result) continue;
          session::TrainingCurve c;
          c.name = o.name.toStdString();
          c.mode = o.mode == nn::Mode::Graph ? "graph" : "pynative";
          c.losses = o.result->losses, c.lrs = o.result->lrs, c.step_ms = o.result->step_ms;
          c.report = QJsonDocument(QJsonObject{{QStringLiteral("summary"), train_panel_->curve()->summary(o.name)},
                                               {QStringLiteral("text"), train_panel_->text()}})
                         .toJson(QJsonDocument::Compact)
                         .toStdString();
          training_.push_back(std::move(c));
        }
        dirty_ = dirty_ || !training_.empty();
        // The last step's profiles replace the result views' runs.
        bool profiled = false;
        for (auto& o : outs) {
          if (!o.trace) continue;
          if (!profiled) {
            eager_trace_.reset();
            graph_trace_.reset();
            plan_.reset();
            profiled = true;
          }
          if (o.mode == nn::Mode::Graph) {
            graph_trace_ = o.trace;
            plan_ = o.plan;
          } else {
            eager_trace_ = o.trace;
          }
        }
        if (profiled) {
          update_result_views();
          log(tr("The last training step's profile is in the timeline, memory and comparison views"));
        }
        Q_EMIT training_finished(ok);
      });
  return true;
}

void MainWindow::show_training(const std::vector<session::TrainingCurve>& curves) {
  views::LossCurveView* curve = train_panel_->curve();
  curve->clear();
  QString text;
  for (const session::TrainingCurve& c : curves) {
    const QString name = QString::fromStdString(c.name);
    curve->begin_series(name);
    // Step s's loss is losses[s - 1] (run_training numbers steps from 1).
    for (size_t i = 0; i < c.losses.size(); ++i) curve->add_point(name, static_cast<int>(i + 1), c.losses[i]);
    const QJsonObject report = QJsonDocument::fromJson(QByteArray::fromStdString(c.report)).object();
    curve->set_summary(name, report.value(QStringLiteral("summary")).toString());
    text = report.value(QStringLiteral("text")).toString();
  }
  if (!text.isEmpty()) train_panel_->set_text(text);
  training_ = curves;
}

void MainWindow::training_dropped() {
  train_job_ = 0;
  train_panel_->set_busy(false);
  train_panel_->set_text(tr("Training cancelled."));
  Q_EMIT training_finished(false);
}

}  // namespace ms::app
