#include "app/gui/template_dialog.h"

#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QVBoxLayout>

#if __has_include("engine/frontend/zoo/zoo.h")
#include "engine/frontend/zoo/zoo.h"
#define MODESCOPE_HAVE_ZOO 1
#endif

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

std::vector<TemplateEntry> template_entries() {
  std::vector<TemplateEntry> out;
#ifdef MODESCOPE_HAVE_ZOO
  for (const zoo::Template& t : zoo::templates()) {
    TemplateEntry e;
    e.kind = TemplateEntry::Kind::Zoo;
    e.name = QString::fromStdString(t.name);
    e.description = QString::fromStdString(t.description);
    for (const auto& p : t.params)
      e.params.push_back(
          {QString::fromStdString(p.name), QString::fromStdString(p.description), p.default_value, p.min, p.max});
    out.push_back(std::move(e));
  }
#endif
  TemplateEntry gen;
  gen.kind = TemplateEntry::Kind::Generated;
  gen.name = QObject::tr("synthetic residual network");
  gen.description = QObject::tr(
      "A generated convolutional network with name scopes (stage/block), for trying the "
      "view on graphs of any size.");
  gen.params.push_back(
      {QStringLiteral("nodes"), QObject::tr("ops: blocks of Conv-BN-ReLU-Conv-BN-Add-ReLU"), 700, 7, 200000});
  out.push_back(gen);
  for (const QString& dir : sample_dirs())
    for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.onnx")}, QDir::Files, QDir::Name)) {
      TemplateEntry e;
      e.name = f.completeBaseName() + QObject::tr(" (sample)");
      e.description = QObject::tr("A bundled sample model: %1").arg(f.absoluteFilePath());
      e.path = f.absoluteFilePath();
      out.push_back(std::move(e));
    }
  return out;
}

QString template_source(const TemplateEntry& e, const std::vector<qint64>& values) {
  switch (e.kind) {
    case TemplateEntry::Kind::Generated: return QStringLiteral("generated:%1").arg(values.empty() ? 700 : values[0]);
    case TemplateEntry::Kind::File: return e.path;
    case TemplateEntry::Kind::Zoo: {
      QStringList kv;
      for (size_t i = 0; i < e.params.size() && i < values.size(); ++i)
        if (values[i] != e.params[i].value) kv << QStringLiteral("%1=%2").arg(e.params[i].name).arg(values[i]);
      return QStringLiteral("zoo:") + e.name + (kv.isEmpty() ? QString() : QStringLiteral("?") + kv.join('&'));
    }
  }
  return {};
}

TemplateDialog::TemplateDialog(QWidget* parent) : QDialog(parent), entries_(template_entries()) {
  setWindowTitle(tr("New from Template"));
  resize(640, 400);
  auto* outer = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  list_ = new QListWidget(this);
  list_->setMinimumWidth(220);
  for (const auto& e : entries_) list_->addItem(e.name);
  row->addWidget(list_);
  auto* right = new QVBoxLayout;
  about_ = new QLabel(this);
  about_->setWordWrap(true);
  about_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  form_host_ = new QWidget(this);
  form_ = new QFormLayout(form_host_);
  right->addWidget(about_);
  right->addWidget(form_host_);
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

void TemplateDialog::on_pick(int row) {
  while (form_->rowCount() > 0) form_->removeRow(0);
  spins_.clear();
  if (row < 0 || row >= static_cast<int>(entries_.size())) return;
  const TemplateEntry& e = entries_[static_cast<size_t>(row)];
  about_->setText(QStringLiteral("<b>%1</b><p>%2</p>").arg(e.name.toHtmlEscaped(), e.description.toHtmlEscaped()));
  if (e.params.empty()) form_->addRow(new QLabel(tr("No parameters."), form_host_));
  for (const auto& p : e.params) {
    auto* spin = new QSpinBox(form_host_);
    spin->setRange(static_cast<int>(std::max<qint64>(p.min, INT_MIN)),
                   static_cast<int>(std::min<qint64>(p.max, INT_MAX)));
    spin->setValue(static_cast<int>(p.value));
    spin->setToolTip(p.description);
    form_->addRow(p.name, spin);
    spins_.push_back(spin);
  }
}

QString TemplateDialog::source() const {
  const int row = list_->currentRow();
  if (row < 0 || row >= static_cast<int>(entries_.size())) return {};
  std::vector<qint64> values;
  for (auto* s : spins_) values.push_back(s->value());
  return template_source(entries_[static_cast<size_t>(row)], values);
}

}  // namespace ms::app
