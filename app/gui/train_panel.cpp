#include "app/gui/train_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/compiler/options.h"
#include "views/train/loss_curve.h"

namespace ms::app {

TrainPanel::TrainPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  // Two rows of settings, so the tab (and the window) stays narrow enough for a 1366 px screen.
  auto* row = new QHBoxLayout;
  auto* row2 = new QHBoxLayout;
  mode_ = new QComboBox(this);
  mode_->addItem(tr("PyNative and Graph"), QStringLiteral("both"));
  mode_->addItem(tr("PyNative"), QStringLiteral("pynative"));
  mode_->addItem(tr("Graph"), QStringLiteral("graph"));
  optimizer_ = new QComboBox(this);
  optimizer_->addItem(QStringLiteral("Adam"), QStringLiteral("adam"));
  optimizer_->addItem(QStringLiteral("AdamW"), QStringLiteral("adamw"));
  optimizer_->addItem(QStringLiteral("SGD (momentum)"), QStringLiteral("sgd"));
  lr_ = new QDoubleSpinBox(this);
  lr_->setDecimals(4);
  lr_->setRange(0, 10);
  lr_->setSingleStep(0.001);
  lr_->setValue(0.01);
  lr_->setSpecialValueText(tr("default"));
  steps_ = new QSpinBox(this);
  steps_->setRange(1, 100000);
  steps_->setValue(200);
  data_ = new QComboBox(this);
  data_->addItem(tr("auto"), QStringLiteral("auto"));
  data_->addItem(tr("digits (8×8)"), QStringLiteral("digits"));
  data_->addItem(tr("synthetic"), QStringLiteral("synthetic"));
  data_->setToolTip(tr("auto: the 1,797 handwritten digits when the template takes 8×8 images, else synthetic data"));
  jit_ = new QComboBox(this);
  jit_->addItem(QStringLiteral("O0"), 0);
  jit_->addItem(QStringLiteral("O1"), 1);
  jit_->addItem(QStringLiteral("O2"), 2);
  jit_->setCurrentIndex(1);
  ranks_ = new QSpinBox(this);
  ranks_->setObjectName(QStringLiteral("TrainRanks"));
  ranks_->setRange(1, 16);
  ranks_->setToolTip(
      tr("Data-parallel ranks: more than 1 runs modescope-cli train under mpirun (Open MPI), "
         "each rank on its slice of every batch; the Ranks tab then shows them side by side"));
  sync_bn_ = new QCheckBox(tr("sync BatchNorm"), this);
  sync_bn_->setObjectName(QStringLiteral("TrainSyncBatchNorm"));
  sync_bn_->setToolTip(
      tr("With more than one rank: BatchNorm layers take their batch statistics over every rank's slice of the "
         "batch (SyncBatchNorm), so the ranks train as one process on the whole batch would"));
  sync_bn_->setEnabled(false);
  connect(ranks_, &QSpinBox::valueChanged, sync_bn_, [this](int n) { sync_bn_->setEnabled(n > 1); });
  train_ = new QPushButton(tr("Train"), this);
  auto* log_scale = new QCheckBox(tr("log scale"), this);
  for (auto [label, w] : std::initializer_list<std::pair<QString, QWidget*>>{{tr("Mode"), mode_},
                                                                             {tr("Optimizer"), optimizer_},
                                                                             {tr("lr"), lr_},
                                                                             {tr("Steps"), steps_},
                                                                             {tr("Data"), data_},
                                                                             {tr("JIT"), jit_},
                                                                             {tr("Ranks"), ranks_}}) {
    QHBoxLayout* into = w == data_ || w == jit_ || w == ranks_ ? row2 : row;
    into->addWidget(new QLabel(label, this));
    into->addWidget(w);
  }
  row->addStretch(1);
  row2->addWidget(sync_bn_);
  row2->addWidget(log_scale);
  row2->addStretch(1);
  row2->addWidget(train_);
  outer->addLayout(row);
  outer->addLayout(row2);
  curve_ = new views::LossCurveView(this);
  outer->addWidget(curve_, 1);
  text_ = new QLabel(tr("Training runs the open zoo template (File → New from template) on the data above; "
                        "both modes start from the same weights and see the same batches."),
                     this);
  text_->setWordWrap(true);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outer->addWidget(text_);
  connect(train_, &QPushButton::clicked, this, &TrainPanel::train_requested);
  connect(log_scale, &QCheckBox::toggled, curve_, &views::LossCurveView::set_log_scale);
}

nn::train::RunOptions TrainPanel::options() const {
  nn::train::RunOptions o;
  o.optimizer = optimizer_->currentData().toString().toStdString();
  o.lr = lr_->value();
  o.steps = steps_->value();
  o.data = data_->currentData().toString().toStdString();
  o.jit_level = static_cast<compiler::JitLevel>(jit_->currentData().toInt());
  return o;
}

std::vector<nn::Mode> TrainPanel::modes() const {
  const QString m = mode_->currentData().toString();
  if (m == QLatin1String("pynative")) return {nn::Mode::PyNative};
  if (m == QLatin1String("graph")) return {nn::Mode::Graph};
  return {nn::Mode::PyNative, nn::Mode::Graph};
}

void TrainPanel::set_steps(int steps) { steps_->setValue(steps); }
int TrainPanel::ranks() const { return ranks_->value(); }
void TrainPanel::set_ranks(int ranks) { ranks_->setValue(ranks); }
bool TrainPanel::sync_batchnorm() const { return ranks_->value() > 1 && sync_bn_->isChecked(); }
void TrainPanel::set_sync_batchnorm(bool on) { sync_bn_->setChecked(on); }

void TrainPanel::set_busy(bool busy) {
  train_->setEnabled(!busy);
  train_->setText(busy ? tr("Training…") : tr("Train"));
}

void TrainPanel::set_text(const QString& text) { text_->setText(text); }
QString TrainPanel::text() const { return text_->text(); }

}  // namespace ms::app
