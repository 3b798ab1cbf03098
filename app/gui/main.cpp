// modescope: the desktop app.
//   modescope [MODEL]                                   open a model (.onnx, or generated:N)
//   modescope MODEL --run both --screenshot DIR         open, run, save DIR/graph.png (and timeline.png,
//                                                        memory.png, memory_time.png, compare.png, passes.png;
//                                                        with --pass-effect pass_delta.png), exit 0
//   modescope MODEL --run graph --runs 2 --screenshot DIR   press Run twice (the second reuses the compiled graph)
//   modescope MODEL --run graph --pass-effect --pass-effect --screenshot DIR   measure the passes twice
//   modescope --bench-open MODEL                        time open -> first paint, UI stalls; JSON
//   modescope --bench-timeline FILE.modescope           time open -> the timeline's first frame, peak RSS;
//                                                        JSON (with --screenshot DIR: window.png, timeline.png)
//   modescope FILE.modescope                            open a session (model, runs, views, UI state)
//   modescope ... --screenshot DIR --save-session FILE  also save the session shown before exiting
//   modescope ... --screenshot DIR --dump-models FILE   also write the views' item models as text
//   modescope --open-ranks R0.json,R1.json              File > Open Ranks on these traces
//   modescope --open-ranks R0.json,R1.json --screenshot DIR   the same: ranks.png, train.png, exit 0
//   modescope --restore-autosave                        after an unclean exit, restore the autosave unasked
//   modescope --plugin LIB.so [MODEL]                   load an operator plugin first (repeatable)
//   modescope --cancel-scenario MODEL                   start each kind of job, cancel it: controls come back
//   modescope --scenario DIR MODEL                      walk through the window as a user (scenario.h),
//                                                        state and screenshots of each step in DIR; exit 0/1
#include <QApplication>
#include <QCommandLineParser>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include <sys/resource.h>

#include <cstdio>

#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/scenario.h"
#include "app/gui/theme.h"
#include "app/gui/train_panel.h"
#include "app/gui/ui_probe.h"
#include "engine/core/mapped_file.h"
#include "engine/plugin/loader.h"
#include "views/common/save_file.h"
#include "views/timeline/ranks_view.h"
#include "views/timeline/timeline_view.h"

namespace {

void load_style(QApplication& app) {
  QFile f(QStringLiteral(":/style.qss"));
  if (f.open(QIODevice::ReadOnly)) app.setStyleSheet(QString::fromUtf8(f.readAll()));
}

int fail(const QString& message) {
  std::fprintf(stderr, "error: %s\n", qPrintable(message));
  return 1;
}

// Qt takes "-plugin"/"--plugin" for its own generic plugins, so operator plugins (--plugin PATH or
// --plugin=PATH) leave argv before QApplication sees it.
QStringList take_plugin_args(int& argc, char** argv) {
  QStringList paths;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "--plugin" || a == "-plugin") && i + 1 < argc)
      paths << QString::fromLocal8Bit(argv[++i]);
    else if (a.starts_with("--plugin="))
      paths << QString::fromLocal8Bit(argv[i] + 9);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return paths;
}

// The whole window with each result tab shown in turn: window-timeline.png, window-memory.png, ...
// (the graph's tab is window.png), then the graph's tab again.
void save_window_tabs(ms::app::MainWindow& window, const QString& dir) {
  QTabWidget* tabs = window.tabs();
  const int was = tabs->currentIndex();
  for (int i = 1; i < tabs->count(); ++i) {
    tabs->setCurrentIndex(i);
    QCoreApplication::processEvents();
    const QString name = tabs->tabText(i).toLower().remove(QLatin1Char('&'));
    ms::views::save_image(dir + QStringLiteral("/window-%1.png").arg(name), window.grab().toImage());
  }
  tabs->setCurrentIndex(was);
  QCoreApplication::processEvents();
}

// Shows a node in the inspector: the first one of the graph shown with weights (a Conv, a MatMul…),
// a node the shown pass removed (a ghost) left out.
void select_first_weighted_node(ms::app::MainWindow& window) {
  ms::views::GraphView* g = window.graph_view();
  const auto* m = g->model();
  if (!m) return;
  for (size_t i = 0; i < m->nodes.size(); ++i) {
    const auto& n = m->nodes[i];
    if (n.folded || n.weights.empty() || !n.node) continue;
    const auto mark = g->diff().find(n.node->id.value);
    if (mark != g->diff().end() && mark->second == ms::views::GraphView::DiffMark::Ghost) continue;
    g->select_node(static_cast<int>(i));
    return;
  }
}

// --save-session FILE and --dump-models FILE after a screenshot: the session shown, the item models
// behind the views as text (main_window_models.cpp). False (with an error line) when one failed.
bool save_session_and_models(ms::app::MainWindow& window, const QString& session_path, const QString& models_path) {
  if (!session_path.isEmpty()) {
    ms::session::SessionData data = window.session_snapshot();
    ms::Status s;
    if (data.model.kind.empty() && !data.model.source.empty()) {  // no source: rank traces alone
      auto described = ms::session::describe_model(data.model.source);
      if (described)
        data.model = std::move(*described);
      else
        s = described.status();
    }
    if (s.is_ok()) s = ms::session::save_session(session_path.toStdString(), data);
    if (!s.is_ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return false;
    }
    std::printf("wrote %s\n", qPrintable(session_path));
  }
  if (!models_path.isEmpty() && !ms::views::save_bytes(models_path, window.models_text().toUtf8())) {
    std::fprintf(stderr, "error: could not write %s\n", qPrintable(models_path));
    return false;
  }
  return true;
}

// --bench-timeline: opens `file` (a session whose trace stays in the file, or a trace) as File >
// Open does, shows the Timeline tab once the session is back (as a user clicking it), and stops at
// the timeline's first frame with events drawn: prints the time from the open to that frame, the
// events behind the timeline, what the frame's window loaded and the process's peak resident memory
// (getrusage, VmHWM) as JSON, then exits 0. With `dir`, saves window.png and timeline.png of that
// frame first. Exits 1 when the file does not open or nothing is drawn within 120 s.
int bench_timeline(QApplication& app, ms::app::MainWindow& window, const QString& file, const QString& dir) {
  QElapsedTimer clock;
  double opened_ms = -1;
  bool done = false;
  auto* timeline = window.timeline_view();
  auto show_timeline = [&window, timeline] { window.tabs()->setCurrentWidget(timeline); };
  QObject::connect(&window, &ms::app::MainWindow::model_opened, &window, [&](bool ok) {
    if (!ok) {  // the log (echoed on stderr) said why
      QApplication::exit(1);
      return;
    }
    opened_ms = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    if (window.restoring_session())
      QObject::connect(&window, &ms::app::MainWindow::session_restored, &window, show_timeline,
                       Qt::SingleShotConnection);
    else
      show_timeline();
  });
  QObject::connect(timeline, &ms::views::TimelineView::frame_painted, &window, [&](int items) {
    if (items <= 0 || done) return;
    done = true;
    const double paint_ms = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const ms::views::TimelineModel& m = timeline->model();
    long long events = 0;
    for (int r = 0; r < static_cast<int>(m.runs().size()); ++r) events += m.run_event_count(r);
    const ms::views::WindowLoad& load = timeline->last_load();
    std::printf(
        "{\"file\": \"%s\", \"events\": %lld, \"windowed\": %s, \"opened_ms\": %.1f, \"first_paint_ms\": %.1f, "
        "\"drawn_items\": %d, \"window_loads\": %d, \"window_events\": %zu, \"window_buckets\": %zu, "
        "\"peak_rss_mib\": %.1f}\n",
        qPrintable(file), events, m.windowed() ? "true" : "false", opened_ms, paint_ms, items, timeline->window_loads(),
        load.events, load.buckets, static_cast<double>(usage.ru_maxrss) / 1024.0);
    std::fflush(stdout);
    bool saved = true;
    if (!dir.isEmpty())
      saved = QDir().mkpath(dir) &&
              ms::views::save_image(dir + QStringLiteral("/window.png"), window.grab().toImage()) &&
              ms::views::save_image(dir + QStringLiteral("/timeline.png"), timeline->grab().toImage());
    if (!saved) std::fprintf(stderr, "error: could not write the screenshots into %s\n", qPrintable(dir));
    QApplication::exit(saved ? 0 : 1);
  });
  QTimer::singleShot(120000, &window, [&] {
    std::fprintf(stderr, "error: %s: the timeline drew no events within 120 s\n", qPrintable(file));
    QApplication::exit(1);
  });
  QTimer::singleShot(0, &window, [&] {
    clock.start();
    window.open(file);
  });
  return app.exec();
}

}  // namespace

int main(int argc, char** argv) {
  const QStringList plugin_paths = take_plugin_args(argc, argv);
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("Modescope"));
  QApplication::setOrganizationName(QStringLiteral("Modescope"));
  QApplication::setApplicationVersion(QStringLiteral(MODESCOPE_VERSION));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/modescope.svg")));
  QApplication::setDesktopFileName(QStringLiteral("modescope"));
  load_style(app);
  ms::app::apply_saved_theme();

  QCommandLineParser cli;
  cli.setApplicationDescription(QStringLiteral("Modescope: a model in PyNative and Graph mode, side by side"));
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument(QStringLiteral("MODEL"), QStringLiteral("an .onnx file, or generated:N"));
  QCommandLineOption run_opt(QStringLiteral("run"), QStringLiteral("Run after opening: pynative, graph or both."),
                             QStringLiteral("MODES"));
  QCommandLineOption shot_opt(QStringLiteral("screenshot"), QStringLiteral("Save PNGs of the views to DIR, then exit."),
                              QStringLiteral("DIR"));
  QCommandLineOption size_opt(QStringLiteral("size"),
                              QStringLiteral("Window size for --screenshot (default 1600x1000)."),
                              QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  QCommandLineOption bench_opt(
      QStringLiteral("bench-open"),
      QStringLiteral("Time opening MODEL to the first painted graph and the longest UI stall; print JSON and exit."));
  QCommandLineOption bench_timeline_opt(
      QStringLiteral("bench-timeline"),
      QStringLiteral("Time opening MODEL (a session with a trace) to the timeline's first frame with events drawn, "
                     "and the peak resident memory; print JSON and exit (with --screenshot DIR: window.png, "
                     "timeline.png)."));
  QCommandLineOption pass_opt(
      QStringLiteral("show-pass"),
      QStringLiteral("With --screenshot: show the graph after pass N of the Graph-mode compile (0 = input)."),
      QStringLiteral("N"));
  QCommandLineOption runs_opt(
      QStringLiteral("runs"),
      QStringLiteral("With --run: press Run N times (the later Graph-mode runs reuse the compiled graphs)."),
      QStringLiteral("N"), QStringLiteral("1"));
  QCommandLineOption iters_opt(QStringLiteral("iterations"), QStringLiteral("Iterations per run."),
                               QStringLiteral("N"));
  QCommandLineOption jit_opt(QStringLiteral("jit-level"), QStringLiteral("Graph-mode pipeline: O0, O1 or O2."),
                             QStringLiteral("LEVEL"));
  QCommandLineOption precision_opt(QStringLiteral("precision"),
                                   QStringLiteral("Graph mode's precision: f32 or bf16 (the Run panel's)."),
                                   QStringLiteral("P"));
  QCommandLineOption side_opt(QStringLiteral("side-by-side"),
                              QStringLiteral("With --show-pass: the graph before the pass beside the graph after it."));
  QCommandLineOption effect_opt(
      QStringLiteral("pass-effect"),
      QStringLiteral("With --screenshot and a Graph-mode run: measure what each pass buys (one more "
                     "Graph-mode run per pass that changed the graph) and save pass_delta.png. Given twice: "
                     "measured twice (the second from the compiled graphs kept)."));
  QCommandLineOption train_opt(
      QStringLiteral("train"),
      QStringLiteral("With --screenshot and a zoo template: train it N steps in both modes, save "
                     "train.png (the loss curves), the last step's timeline/memory/compare views "
                     "and exit."),
      QStringLiteral("N"));
  QCommandLineOption ranks_opt(
      QStringLiteral("ranks"),
      QStringLiteral("With --train: train on N data-parallel ranks (modescope-cli train under mpirun); also "
                     "save ranks.png (the Ranks tab)."),
      QStringLiteral("N"));
  QCommandLineOption sync_bn_opt(
      QStringLiteral("sync-bn"),
      QStringLiteral("With --train and --ranks: BatchNorm statistics over every rank (train --sync-bn)."));
  QCommandLineOption numerics_opt(
      QStringLiteral("numerics"),
      QStringLiteral("Compare the values of both modes (diff), bisect the passes (bisect) or find the first NaN "
                     "or infinity (nan): with --screenshot after the runs (the inspector shows the selected node's "
                     "values), without --screenshot or --run once the model is open."),
      QStringLiteral("WHAT"));
  QCommandLineOption save_session_opt(
      QStringLiteral("save-session"),
      QStringLiteral("With --screenshot: save the session shown to FILE before exiting."), QStringLiteral("FILE"));
  QCommandLineOption models_opt(
      QStringLiteral("dump-models"),
      QStringLiteral("With --screenshot: write the item models behind the views (comparison, passes, values, "
                     "training curves) as text to FILE before exiting."),
      QStringLiteral("FILE"));
  QCommandLineOption restore_opt(
      QStringLiteral("restore-autosave"),
      QStringLiteral("After an unclean exit, restore the last autosave without asking (tests, screenshots)."));
  QCommandLineOption plugin_opt(
      QStringLiteral("plugin"),
      QStringLiteral("Load an operator plugin (a shared library; repeatable). The setting 'plugins' lists more."),
      QStringLiteral("PATH"));
  QCommandLineOption scenario_opt(
      QStringLiteral("scenario"),
      QStringLiteral("Walk through the window as a user would (open MODEL, run both modes, click a pass, select "
                     "a node, timeline, compare, export), checking each step; state and screenshots to DIR."),
      QStringLiteral("DIR"));
  QCommandLineOption cancel_scenario_opt(
      QStringLiteral("cancel-scenario"),
      QStringLiteral("Start each kind of job on MODEL (a zoo template) and cancel it, checking that every control "
                     "the job disabled comes back; exit 0 when all did."));
  QCommandLineOption open_ranks_opt(
      QStringLiteral("open-ranks"),
      QStringLiteral("Open these training traces, one per rank (comma-separated), as File > Open Ranks does; "
                     "with --screenshot, save ranks.png and train.png (each rank's loss) and exit."),
      QStringLiteral("FILES"));
  cli.addOptions({run_opt,          runs_opt,   shot_opt,    size_opt,   bench_opt,    iters_opt,          jit_opt,
                  precision_opt,    pass_opt,   side_opt,    effect_opt, train_opt,    ranks_opt,          numerics_opt,
                  save_session_opt, models_opt, restore_opt, plugin_opt, scenario_opt, cancel_scenario_opt});
  cli.addOption(sync_bn_opt);
  cli.addOption(open_ranks_opt);
  cli.addOption(bench_timeline_opt);
  cli.process(app);
  // Operator plugins (the setting's list, then --plugin) before any model is opened.
  for (const QString& p : QSettings().value(QStringLiteral("plugins")).toStringList() + plugin_paths)
    if (auto r = ms::plugin::load_plugin(p.toStdString()); !r)
      return fail(QString::fromStdString(r.status().message()));
  const QStringList args = cli.positionalArguments();
  QString model = args.isEmpty() ? QString() : args.first();
  // The last start did not exit cleanly (its marker is still there) and left an autosave.
  const QString marker = ms::app::MainWindow::running_marker_path();
  const bool unclean = QFile::exists(marker) && QFile::exists(ms::app::MainWindow::autosave_path());
  if (QFile m(marker); m.open(QIODevice::WriteOnly | QIODevice::Truncate))
    m.write(QByteArray::number(QCoreApplication::applicationPid()));
  bool offer_restore = false;
  QString kept_autosave;
  if (unclean && model.isEmpty()) {
    if (cli.isSet(restore_opt))
      model = ms::app::MainWindow::autosave_path();
    else
      offer_restore = true;
  } else if (unclean) {
    // A file to open was given: the autosave is set aside, not overwritten by this start's autosaves.
    const QFileInfo autosave(ms::app::MainWindow::autosave_path());
    kept_autosave =
        autosave.dir().filePath(QStringLiteral("autosave-%1.modescope")
                                    .arg(autosave.lastModified().toString(QStringLiteral("yyyyMMdd-hhmmss"))));
    if (!QFile::rename(autosave.filePath(), kept_autosave)) kept_autosave.clear();
  }
  const QString run_modes = cli.value(run_opt);
  if (!run_modes.isEmpty() && run_modes != QLatin1String("pynative") && run_modes != QLatin1String("graph") &&
      run_modes != QLatin1String("both"))
    return fail(QStringLiteral("--run takes pynative, graph or both, not '%1'").arg(run_modes));
  const QString numerics = cli.value(numerics_opt);
  std::optional<ms::session::NumericsJob::Kind> numerics_kind;
  if (numerics == QLatin1String("diff")) numerics_kind = ms::session::NumericsJob::Kind::Diff;
  if (numerics == QLatin1String("bisect")) numerics_kind = ms::session::NumericsJob::Kind::Bisect;
  if (numerics == QLatin1String("nan")) numerics_kind = ms::session::NumericsJob::Kind::Trap;
  if (!numerics.isEmpty() && !numerics_kind)
    return fail(QStringLiteral("--numerics takes diff, bisect or nan, not '%1'").arg(numerics));
  const bool screenshot = cli.isSet(shot_opt);
  const bool bench = cli.isSet(bench_opt), bench_tl = cli.isSet(bench_timeline_opt);
  if ((screenshot || bench) && model.isEmpty() && !cli.isSet(open_ranks_opt))
    return fail(QStringLiteral("--screenshot and --bench-open need a MODEL (or --open-ranks)"));
  if (bench_tl && model.isEmpty()) return fail(QStringLiteral("--bench-timeline needs a FILE (a .modescope session)"));

  ms::app::MainWindow window;
  if (screenshot || bench || bench_tl) {
    const QStringList wh = cli.value(size_opt).split('x');
    window.resize(wh.value(0).toInt() > 0 ? wh.value(0).toInt() : 1600,
                  wh.value(1).toInt() > 0 ? wh.value(1).toInt() : 1000);
  }
  window.set_echo_log(screenshot || bench || bench_tl);
  if (!kept_autosave.isEmpty())
    window.log(QObject::tr("Modescope did not exit cleanly last time; the session it autosaved is kept as %1 (File > "
                           "Open Session)")
                   .arg(kept_autosave));
  if (!run_modes.isEmpty()) window.run_panel()->set_modes(run_modes);
  if (cli.isSet(iters_opt)) window.run_panel()->set_iterations(cli.value(iters_opt).toInt());
  if (cli.isSet(jit_opt) && !window.run_panel()->set_jit_level(cli.value(jit_opt)))
    return fail(QStringLiteral("--jit-level: '%1' is not O0, O1 or O2").arg(cli.value(jit_opt)));
  if (cli.isSet(precision_opt) && !window.run_panel()->set_precision(cli.value(precision_opt)))
    return fail(QStringLiteral("--precision: '%1' is not f32 or bf16").arg(cli.value(precision_opt)));
  window.show();

  // A walk through the window (--scenario, --cancel-scenario) once the event loop runs: its result is
  // the exit code.
  auto walk = [&](const std::function<int()>& body) {
    int code = 1;
    QTimer::singleShot(0, &window, [&] {
      code = body();
      QApplication::exit(code);
    });
    app.exec();
    return code;
  };
  if (cli.isSet(scenario_opt)) {
    if (model.isEmpty()) return fail(QStringLiteral("--scenario needs a MODEL"));
    return walk([&] { return ms::app::run_scenario(window, model, cli.value(scenario_opt)); });
  }
  if (cli.isSet(cancel_scenario_opt)) {
    if (model.isEmpty()) return fail(QStringLiteral("--cancel-scenario needs a MODEL"));
    return walk([&] { return ms::app::run_cancel_scenario(window, model); });
  }

  if (bench_tl) return bench_timeline(app, window, model, cli.value(shot_opt));

  int exit_code = 0;
  if (bench) {
    int64_t read_before = -1;
    auto* probe = new ms::app::UiLatencyProbe(&window);
    auto* clock = new QElapsedTimer;
    QObject::connect(&window, &ms::app::MainWindow::model_opened, &window, [&](bool ok) {
      if (!ok) {
        exit_code = 1;
        QApplication::exit(1);
      }
    });
    QObject::connect(window.graph_view(), &ms::views::GraphView::first_paint, &window, [&, probe, clock] {
      const double paint_ms = static_cast<double>(clock->nsecsElapsed()) / 1e6;
      probe->stop();
      const auto* doc = window.document();
      // Resident memory after first paint and the bytes read from storage since the open began
      // (external weights are mapped: opening must not read them).
      const ms::ProcessMemory mem = ms::process_memory();
      std::printf(
          "{\"model\": \"%s\", \"nodes\": %d, \"visible_items\": %zu, \"collapsed_groups\": %zu, "
          "\"load_ms\": %.1f, \"infer_ms\": %.1f, \"group_ms\": %.1f, \"layout_ms\": %.1f, "
          "\"first_paint_ms\": %.1f, \"max_ui_block_ms\": %.1f, \"ui_ticks\": %d, \"resident_bytes\": %lld, "
          "\"read_bytes\": %lld}\n",
          qPrintable(model), doc ? doc->model->drawn_nodes : 0, doc ? doc->view.visible.items.size() : 0,
          doc ? doc->view.collapsed.size() : 0, doc ? doc->load_ms : 0, doc ? doc->infer_ms : 0,
          doc ? doc->model_ms : 0, doc ? doc->layout_ms : 0, paint_ms, probe->worst_block_ms(), probe->ticks(),
          static_cast<long long>(mem.resident_bytes),
          static_cast<long long>(mem.read_bytes >= 0 && read_before >= 0 ? mem.read_bytes - read_before : -1));
      std::fflush(stdout);
      QApplication::exit(0);
    });
    // Start once the window is up, as a user would open a file into a running app.
    QTimer::singleShot(0, &window, [&, probe, clock] {
      read_before = ms::process_memory().read_bytes;
      probe->start();
      clock->start();
      window.open(model);
    });
    const int rc = app.exec();
    delete clock;
    return rc == 0 ? exit_code : rc;
  }

  if (screenshot && cli.isSet(open_ranks_opt)) {
    const QString dir = cli.value(shot_opt);
    if (!QDir().mkpath(dir)) return fail(QStringLiteral("cannot create %1").arg(dir));
    const QString session_out = cli.value(save_session_opt), models_out = cli.value(models_opt);
    QObject::connect(
        &window, &ms::app::MainWindow::ranks_opened, &window, [&window, dir, session_out, models_out](bool ok) {
          QTimer::singleShot(150, &window, [&window, dir, ok, session_out, models_out] {
            window.ranks_view()->resize(window.tabs()->size());
            const bool ranks = window.ranks_view()->export_png(dir + QStringLiteral("/ranks.png"));
            window.tabs()->setCurrentWidget(window.train_panel());
            const bool train =
                ms::views::save_image(dir + QStringLiteral("/train.png"), window.train_panel()->grab().toImage());
            const bool extras = save_session_and_models(window, session_out, models_out);
            QApplication::exit(ok && ranks && train && extras ? 0 : 1);
          });
        });
    window.open_ranks(cli.value(open_ranks_opt).split(QLatin1Char(',')));
    return app.exec();
  }

  if (screenshot && cli.isSet(train_opt)) {
    const QString dir = cli.value(shot_opt);
    if (!QDir().mkpath(dir)) return fail(QStringLiteral("cannot create %1").arg(dir));
    window.train_panel()->set_steps(std::max(1, cli.value(train_opt).toInt()));
    if (cli.isSet(ranks_opt)) window.train_panel()->set_ranks(std::max(1, cli.value(ranks_opt).toInt()));
    window.train_panel()->set_sync_batchnorm(cli.isSet(sync_bn_opt));
    QObject::connect(&window, &ms::app::MainWindow::model_opened, &window, [&window](bool ok) {
      if (!ok || !window.train()) QApplication::exit(1);
    });
    const QString session_out = cli.value(save_session_opt), models_out = cli.value(models_opt);
    QObject::connect(
        &window, &ms::app::MainWindow::training_finished, &window, [&window, dir, session_out, models_out](bool ok) {
          QTimer::singleShot(150, &window, [&window, dir, ok, session_out, models_out] {
            const QString path = dir + QStringLiteral("/train.png");
            const bool saved = ms::views::save_image(path, window.tabs()->currentWidget()->grab().toImage());
            ms::views::save_image(dir + QStringLiteral("/window.png"), window.grab().toImage());
            // The last training step's profiles: timeline, memory and comparison views.
            if (!window.export_result_views(dir)) std::fprintf(stderr, "error: could not write the result views\n");
            std::fprintf(saved ? stdout : stderr, saved ? "wrote %s\n" : "error: could not write %s\n",
                         qPrintable(path));
            const bool extras = save_session_and_models(window, session_out, models_out);
            if (!window.ranks_view()->data().lanes.empty()) {
              window.ranks_view()->resize(window.tabs()->size());
              window.ranks_view()->export_png(dir + QStringLiteral("/ranks.png"));
              std::printf("%s\n", qPrintable(window.ranks_view()->summary_text()));
            }
            QApplication::exit(ok && saved && extras ? 0 : 1);
          });
        });
    window.open(model);
    return app.exec();
  }

  if (screenshot) {
    const QString dir = cli.value(shot_opt);
    if (!QDir().mkpath(dir)) return fail(QStringLiteral("cannot create %1").arg(dir));
    const QString save_session_path = cli.value(save_session_opt), models_path = cli.value(models_opt);
    auto save = [&window, dir, save_session_path, models_path] {
      // Let pending paints and layouts settle, then grab what a user sees.
      QTimer::singleShot(150, &window, [&window, dir, save_session_path, models_path] {
        const QString path = dir + QStringLiteral("/graph.png");
        const bool ok = ms::views::save_image(path, window.graph_view()->grab().toImage());
        ms::views::save_image(dir + QStringLiteral("/window.png"), window.grab().toImage());
        window.graph_view()->export_png(dir + QStringLiteral("/graph-full.png"), 6000);
        ms::views::save_bytes(dir + QStringLiteral("/graph.dot"), window.graph_view()->dot_text().toUtf8());
        // The result views (timeline, memory, compare, passes), each at the graph view's size.
        if (!window.export_result_views(dir)) std::fprintf(stderr, "error: could not write the result views\n");
        save_window_tabs(window, dir);
        if (!save_session_and_models(window, save_session_path, models_path)) {
          QApplication::exit(1);
          return;
        }
        std::fprintf(ok ? stdout : stderr, ok ? "wrote %s\n" : "error: could not write %s\n", qPrintable(path));
        QApplication::exit(ok ? 0 : 1);
      });
    };
    // --numerics: its job first, then `next` (a screenshot of what it left on screen).
    auto with_numerics = [&window, numerics_kind](std::function<void()> next) {
      if (numerics_kind) {
        QObject::connect(
            &window, &ms::app::MainWindow::numerics_finished, &window, [next](bool) { next(); },
            Qt::SingleShotConnection);
        if (window.start_numerics(*numerics_kind)) return;
      }
      next();
    };
    auto opened = [&window, &run_modes, save, with_numerics] {
      // Show a node in the inspector (a session's own selection stays).
      if (window.graph_view()->selected_node() < 0) select_first_weighted_node(window);
      if (run_modes.isEmpty()) {
        with_numerics(save);
        return;
      }
      window.run();
    };
    QObject::connect(&window, &ms::app::MainWindow::model_opened, &window, [&window, opened](bool ok) {
      if (!ok) {
        QApplication::exit(1);
        return;
      }
      // A session: its pass's graph laid out and its selection back first.
      if (window.restoring_session())
        QObject::connect(&window, &ms::app::MainWindow::session_restored, &window, opened, Qt::SingleShotConnection);
      else
        opened();
    });
    const int show_pass = cli.isSet(pass_opt) ? cli.value(pass_opt).toInt() : -1;
    if (cli.isSet(side_opt)) window.set_side_by_side(true);
    auto show_then_save = [&window, save, show_pass] {
      if (show_pass >= 0 && window.show_pass(show_pass)) {
        // With a fusing pass, a fused node selected: its origins outlined, listed in the inspector.
        QObject::connect(
            window.graph_view(), &ms::views::GraphView::first_paint, &window,
            [&window, save] {
              if (!window.select_first_fused_node()) select_first_weighted_node(window);
              save();
            },
            Qt::SingleShotConnection);
        return;
      }
      save();
    };
    // --pass-effect given N times: measured N times (the later ones from the compile cache).
    auto effects_left = std::make_shared<int>(static_cast<int>(cli.optionNames().count(QStringLiteral("pass-effect"))));
    auto after_effect = std::make_shared<std::function<void(bool)>>();
    *after_effect = [&window, effects_left, show_then_save, next = after_effect.get()](bool ok) {
      if (ok && --*effects_left > 0 && window.measure_pass_effects()) {
        QObject::connect(&window, &ms::app::MainWindow::pass_effects_measured, &window, *next,
                         Qt::SingleShotConnection);
        return;
      }
      show_then_save();
    };
    auto presses_left = std::make_shared<int>(std::max(1, cli.value(runs_opt).toInt()) - 1);
    QObject::connect(&window, &ms::app::MainWindow::runs_finished, &window,
                     [&window, show_then_save, effects_left, after_effect, with_numerics, presses_left](bool ok) {
                       if (ok && *presses_left > 0) {
                         --*presses_left;
                         window.run();
                         return;
                       }
                       if (*effects_left > 0 && window.measure_pass_effects()) {
                         QObject::connect(&window, &ms::app::MainWindow::pass_effects_measured, &window, *after_effect,
                                          Qt::SingleShotConnection);
                         return;
                       }
                       with_numerics(show_then_save);
                     });
  }
  if (!screenshot && !run_modes.isEmpty())
    QObject::connect(
        &window, &ms::app::MainWindow::model_opened, &window,
        [&window](bool ok) {
          if (ok) window.run();
        },
        Qt::SingleShotConnection);
  // --numerics without --screenshot or --run: started once the model is open, the app left running.
  if (!screenshot && run_modes.isEmpty() && numerics_kind)
    QObject::connect(
        &window, &ms::app::MainWindow::model_opened, &window,
        [&window, kind = *numerics_kind](bool ok) {
          if (ok) window.start_numerics(kind);
        },
        Qt::SingleShotConnection);
  if (!model.isEmpty()) window.open(model);
  if (!screenshot && cli.isSet(open_ranks_opt)) window.open_ranks(cli.value(open_ranks_opt).split(QLatin1Char(',')));
  if (offer_restore && !screenshot)
    QTimer::singleShot(0, &window, [&window] {
      const auto answer = QMessageBox::question(
          &window, QObject::tr("Restore Session"),
          QObject::tr("Modescope did not exit cleanly last time. Restore the session it autosaved?"));
      if (answer == QMessageBox::Yes) window.open(ms::app::MainWindow::autosave_path());
    });
  return app.exec();
}
