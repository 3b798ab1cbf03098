#include "app/gui/start_page.h"

#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

#include "app/gui/template_dialog.h"

namespace ms::app {

namespace {

QListWidget* start_list(QWidget* parent, const char* name) {
  auto* list = new QListWidget(parent);
  list->setObjectName(QLatin1String(name));
  list->setTextElideMode(Qt::ElideMiddle);
  list->setMinimumHeight(120);
  return list;
}

QLabel* start_heading(const QString& text, QWidget* parent) {
  auto* l = new QLabel(QStringLiteral("<b>%1</b>").arg(text.toHtmlEscaped()), parent);
  return l;
}

}  // namespace

StartPage::StartPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("StartPage"));
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(32, 24, 32, 24);
  auto* title = new QLabel(tr("<h2>Modescope</h2>"), this);
  outer->addWidget(title);
  auto* about = new QLabel(
      tr("A model runs here in two ways. <b>PyNative mode</b> runs it eagerly, one operator at a time as the "
         "graph lists them: nothing to wait for before the first result, every intermediate value at hand, but "
         "each operator pays its own dispatch and memory. <b>Graph mode</b> first captures the whole graph and "
         "compiles it — compiler passes fold constants, fuse operators and pick layouts, a planner reuses "
         "memory — then runs the result: each iteration is usually faster, after a one-time compile. Run both "
         "and Modescope shows what each pass did, both timelines, both memory plans and, op by op, where the "
         "time went and after how many iterations the compile pays off."),
      this);
  about->setObjectName(QStringLiteral("ModesExplained"));
  about->setWordWrap(true);
  about->setMaximumWidth(900);
  outer->addWidget(about);
  auto* buttons = new QHBoxLayout;
  auto* open = new QPushButton(QIcon(QStringLiteral(":/icons/open.svg")), tr("Open Model…"), this);
  open->setObjectName(QStringLiteral("StartOpen"));
  auto* tmpl = new QPushButton(QIcon(QStringLiteral(":/icons/template.svg")), tr("New from Template…"), this);
  tmpl->setObjectName(QStringLiteral("StartTemplate"));
  buttons->addWidget(open);
  buttons->addWidget(tmpl);
  buttons->addStretch(1);
  outer->addLayout(buttons);
  auto* grid = new QGridLayout;
  samples_ = start_list(this, "StartSamples");
  recent_ = start_list(this, "StartRecent");
  grid->addWidget(start_heading(tr("Bundled samples"), this), 0, 0);
  grid->addWidget(start_heading(tr("Recent models and sessions"), this), 0, 1);
  grid->addWidget(samples_, 1, 0);
  grid->addWidget(recent_, 1, 1);
  outer->addLayout(grid, 1);
  connect(open, &QPushButton::clicked, this, &StartPage::open_dialog_requested);
  connect(tmpl, &QPushButton::clicked, this, &StartPage::template_requested);
  for (QListWidget* list : {samples_, recent_})
    connect(list, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* it) { Q_EMIT open_requested(it->data(Qt::UserRole).toString()); });
  refresh();
}

void StartPage::refresh() {
  samples_->clear();
  for (const QString& dir : sample_dirs())
    for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.onnx")}, QDir::Files, QDir::Name)) {
      auto* it = new QListWidgetItem(f.completeBaseName(), samples_);
      it->setData(Qt::UserRole, f.absoluteFilePath());
      it->setToolTip(f.absoluteFilePath());
    }
  recent_->clear();
  for (const QString& f : QSettings().value(QStringLiteral("recent")).toStringList()) {
    if (!QFileInfo::exists(f)) continue;
    auto* it = new QListWidgetItem(QFileInfo(f).fileName(), recent_);
    it->setData(Qt::UserRole, f);
    it->setToolTip(f);
  }
  if (recent_->count() == 0) {
    auto* none = new QListWidgetItem(tr("Models and sessions you open are listed here"), recent_);
    none->setFlags(Qt::NoItemFlags);
  }
}

}  // namespace ms::app
