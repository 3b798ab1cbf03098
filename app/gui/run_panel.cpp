#include "app/gui/run_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/session/figures.h"
#include "app/session/precision.h"
#include "engine/compiler/options.h"

namespace ms::app {

RunPanel::RunPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  mode_ = new QComboBox(this);
  mode_->setObjectName(QStringLiteral("RunMode"));
  mode_->addItem(tr("PyNative and Graph"), QStringLiteral("both"));
  mode_->addItem(tr("PyNative (eager)"), QStringLiteral("pynative"));
  mode_->addItem(tr("Graph (compiled)"), QStringLiteral("graph"));
  device_ = new QComboBox(this);
  device_->addItem(tr("CPU"), QStringLiteral("cpu"));
  device_->addItem(tr("CUDA GPU"), QStringLiteral("cuda"));
  device_->setToolTip(tr("Without a GPU the CPU is used and the log says why"));
  jit_ = new QComboBox(this);
  jit_->setObjectName(QStringLiteral("JitLevel"));
  jit_->addItem(QStringLiteral("O0 — execution only"), QStringLiteral("O0"));
  jit_->addItem(QStringLiteral("O1 — graph optimizations"), QStringLiteral("O1"));
  jit_->addItem(QStringLiteral("O2 — layout and scheduling"), QStringLiteral("O2"));
  jit_->setCurrentIndex(jit_->findData(QString::fromLatin1(compiler::kDefaultJitLevelName)));
  precision_ = new QComboBox(this);
  precision_->setObjectName(QStringLiteral("Precision"));
  precision_->addItem(tr("f32"), QStringLiteral("f32"));
  precision_->addItem(tr("bf16 (Graph mode)"), QStringLiteral("bf16"));
  precision_->addItem(tr("fp16 (Graph mode, CUDA)"), QStringLiteral("fp16"));
  precision_->setToolTip(
      tr("bf16: Graph mode computes in bf16 but for normalizations, softmax and reductions, and the result says how "
         "far its outputs lie from f32. Needs a CPU with AVX-512-BF16 or AMX, or a CUDA device from sm_80. fp16: the "
         "same in f16, on a CUDA device."));
  threads_ = new QSpinBox(this);
  threads_->setRange(0, 256);
  threads_->setSpecialValueText(tr("all cores"));
  iterations_ = new QSpinBox(this);
  iterations_->setRange(1, 100000);
  iterations_->setValue(10);
  batch_ = new QSpinBox(this);
  batch_->setRange(1, 4096);
  batch_->setToolTip(tr("Used where the model's leading input dimension is symbolic"));
  form->addRow(tr("Mode"), mode_);
  form->addRow(tr("Device"), device_);
  form->addRow(tr("JIT level"), jit_);
  form->addRow(tr("Precision"), precision_);
  form->addRow(tr("Threads"), threads_);
  form->addRow(tr("Iterations"), iterations_);
  form->addRow(tr("Batch"), batch_);
  outer->addLayout(form);
  run_ = new QPushButton(QIcon(QStringLiteral(":/icons/run.svg")), tr("Run  (F5)"), this);
  run_->setDefault(true);
  outer->addWidget(run_);
  results_ = new QLabel(this);
  results_->setWordWrap(true);
  results_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  results_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  outer->addWidget(results_, 1);
  connect(run_, &QPushButton::clicked, this, &RunPanel::run_requested);
}

std::vector<std::string> RunPanel::modes() const {
  const QString m = mode_->currentData().toString();
  if (m == QLatin1String("both")) return {"pynative", "graph"};
  return {m.toStdString()};
}

void RunPanel::set_modes(const QString& which) {
  const int i = mode_->findData(which);
  if (i >= 0) mode_->setCurrentIndex(i);
}

RunRequest RunPanel::request(const std::string& mode) const {
  RunRequest r;
  r.mode = mode;
  r.device = device_->currentData().toString().toStdString();
  r.jit_level = jit_->currentData().toString().toStdString();
  r.precision = precision_->currentData().toString().toStdString();
  r.threads = threads_->value();
  r.iterations = iterations_->value();
  r.batch = batch_->value();
  return r;
}

void RunPanel::set_busy(bool busy) { run_->setEnabled(!busy); }

void RunPanel::set_iterations(int n) { iterations_->setValue(n); }

bool RunPanel::set_jit_level(const QString& level) {
  const int i = jit_->findData(level.toUpper());
  if (i < 0) return false;
  jit_->setCurrentIndex(i);
  return true;
}

bool RunPanel::set_precision(const QString& p) {
  const int i = precision_->findData(p.toLower());
  if (i < 0) return false;
  precision_->setCurrentIndex(i);
  return true;
}

void RunPanel::clear_results() {
  pynative_text_.clear();
  graph_text_.clear();
  results_->clear();
}

void RunPanel::show_result(const RunOutcome& r) {
  QString text =
      QStringLiteral("<b>%1</b> on %2<br>median %3 ms (min %4)")
          .arg(r.mode == "graph" ? tr("Graph") : tr("PyNative"), QString::fromStdString(r.backend).toHtmlEscaped())
          .arg(r.median_ms, 0, 'f', 3)
          .arg(r.min_ms, 0, 'f', 3);
  if (r.mode == "graph")
    text += r.cached ? tr("<br>compile: cached (0 ms)") : tr("<br>compile %1 ms").arg(r.compile_ms, 0, 'f', 1);
  if (session::is_low_precision(r.precision))
    text += tr("<br>%1: from f32 max %2, mean %3 (relative); top-1 %4")
                .arg(QString::fromStdString(r.precision))
                .arg(r.deviation.max_rel, 0, 'g', 3)
                .arg(r.deviation.mean_rel, 0, 'g', 3)
                .arg(r.deviation.argmax_equal ? tr("the same") : tr("differs"));
  if (r.compiles > 0) {
    // The compiled-graph cache as the run report has it (compiles, cache_hits) and what it compiled for.
    text += tr("<br>%n compiled graph(s), ", nullptr, static_cast<int>(r.compiles)) +
            tr("%n cache hit(s)", nullptr, static_cast<int>(r.cache_hits));
    if (!r.bucket.empty()) text += tr("<br>last run's graph: %1").arg(QString::fromStdString(r.bucket).toHtmlEscaped());
    if (r.buckets.size() > 1) {
      QStringList kept;
      for (const auto& b : r.buckets) kept << QString::fromStdString(b).toHtmlEscaped();
      text += tr("<br>compiled so far (latest first): %1").arg(kept.join(QStringLiteral("; ")));
    }
  }
  text += tr("<br>peak %1, %2 kernels")
              .arg(QString::fromStdString(session::format_bytes(static_cast<double>(r.peak_bytes))))
              .arg(r.kernels);
  (r.mode == "graph" ? graph_text_ : pynative_text_) = text;
  QStringList parts;
  for (const QString& s : {pynative_text_, graph_text_})
    if (!s.isEmpty()) parts << s;
  results_->setText(parts.join(QStringLiteral("<br><br>")));
}

void RunPanel::save_settings() const {
  QSettings s;
  s.beginGroup(QStringLiteral("run"));
  s.setValue(QStringLiteral("mode"), mode_->currentData());
  s.setValue(QStringLiteral("device"), device_->currentData());
  // The level is kept only when chosen (not the default), so the default can change under it.
  if (jit_->currentData().toString() == QLatin1String(compiler::kDefaultJitLevelName))
    s.remove(QStringLiteral("jit"));
  else
    s.setValue(QStringLiteral("jit"), jit_->currentData());
  s.setValue(QStringLiteral("jit_kept_when_chosen"), true);
  s.setValue(QStringLiteral("precision"), precision_->currentData());
  s.setValue(QStringLiteral("threads"), threads_->value());
  s.setValue(QStringLiteral("iterations"), iterations_->value());
  s.setValue(QStringLiteral("batch"), batch_->value());
  s.endGroup();
}

void RunPanel::load_settings() {
  QSettings s;
  s.beginGroup(QStringLiteral("run"));
  auto pick = [&](QComboBox* box, const char* key) {
    const int i = box->findData(s.value(QLatin1String(key)));
    if (i >= 0) box->setCurrentIndex(i);
  };
  pick(mode_, "mode");
  pick(device_, "device");
  // Settings from before jit_kept_when_chosen saved the default of their day (O1) at every exit:
  // not a choice, so the current default stands.
  if (s.value(QStringLiteral("jit_kept_when_chosen")).toBool()) pick(jit_, "jit");
  pick(precision_, "precision");
  threads_->setValue(s.value(QStringLiteral("threads"), 0).toInt());
  iterations_->setValue(s.value(QStringLiteral("iterations"), 10).toInt());
  batch_->setValue(s.value(QStringLiteral("batch"), 1).toInt());
  s.endGroup();
}

}  // namespace ms::app
