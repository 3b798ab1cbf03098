#include "app/gui/template_dialog.h"

#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace ms::app {

QStringList sample_dirs() {
  QStringList dirs;
#ifdef MODESCOPE_SOURCE_DIR
  dirs << QStringLiteral(MODESCOPE_SOURCE_DIR "/samples/models");
#endif
  dirs << QCoreApplication::applicationDirPath() + QStringLiteral("/../share/modescope/samples");
  QStringList out;
  for (const QString& d : dirs)
    if (QDir(d).exists()) out << QDir(d).absolutePath();
  return out;
}

TemplateDialog::TemplateDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("New from Template"));
  resize(560, 360);
  auto* outer = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  list_ = new QListWidget(this);
  list_->setMinimumWidth(200);
  for (const QString& dir : sample_dirs())
    for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.onnx")}, QDir::Files, QDir::Name)) {
      auto* item = new QListWidgetItem(f.completeBaseName(), list_);
      item->setData(Qt::UserRole, f.absoluteFilePath());
      item->setToolTip(f.absoluteFilePath());
    }
  auto* gen = new QListWidgetItem(tr("Residual network (synthetic)"), list_);
  gen->setData(Qt::UserRole, QStringLiteral("generated"));
  row->addWidget(list_);
  auto* right = new QVBoxLayout;
  about_ = new QLabel(this);
  about_->setWordWrap(true);
  about_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  params_ = new QStackedWidget(this);
  auto* none = new QLabel(tr("This sample has no parameters."), this);
  none->setEnabled(false);
  auto* form_page = new QWidget(this);
  auto* form = new QFormLayout(form_page);
  nodes_ = new QSpinBox(form_page);
  nodes_->setRange(7, 200000);
  nodes_->setSingleStep(100);
  nodes_->setValue(700);
  nodes_->setToolTip(tr("Ops in the network: blocks of Conv-BN-ReLU-Conv-BN-Add-ReLU, 16 blocks a stage"));
  form->addRow(tr("Nodes"), nodes_);
  params_->addWidget(none);
  params_->addWidget(form_page);
  right->addWidget(about_);
  right->addWidget(params_);
  right->addStretch(1);
  row->addLayout(right, 1);
  outer->addLayout(row, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  outer->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(list_, &QListWidget::currentRowChanged, this, &TemplateDialog::on_pick);
  connect(list_, &QListWidget::itemDoubleClicked, this, &QDialog::accept);
  list_->setCurrentRow(0);
}

void TemplateDialog::on_pick() {
  auto* item = list_->currentItem();
  const QString what = item ? item->data(Qt::UserRole).toString() : QString();
  if (what == QLatin1String("generated")) {
    about_->setText(tr("<b>Residual network</b><p>A generated convolutional network with name scopes "
                       "(stage/block), for trying the view on graphs of any size.</p>"));
    params_->setCurrentIndex(1);
  } else {
    about_->setText(tr("<b>%1</b><p>A bundled sample model.</p><p>%2</p>").arg(item ? item->text() : QString(), what.toHtmlEscaped()));
    params_->setCurrentIndex(0);
  }
}

QString TemplateDialog::source() const {
  auto* item = list_->currentItem();
  if (!item) return {};
  const QString what = item->data(Qt::UserRole).toString();
  return what == QLatin1String("generated") ? QStringLiteral("generated:%1").arg(nodes_->value()) : what;
}

}  // namespace ms::app
