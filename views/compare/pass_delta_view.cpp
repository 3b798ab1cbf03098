#include "views/compare/pass_delta_view.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "views/common/save_file.h"
namespace ms::views {

PassDeltaView::PassDeltaView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("PassDeltaView"));
  model_ = new PassDeltaModel(this);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(6, 6, 6, 6);
  auto* top = new QHBoxLayout;
  auto* legend =
      new QLabel(tr("<b>What each pass buys:</b> the full pipeline against the pipeline without one pass (Graph mode, "
                    "same run options). <span style='color:#1e8c3a'>Green</span>: the pass saves it; "
                    "<span style='color:#c03030'>red</span>: the pass costs it; changes under %1% are noise.")
                     .arg(PassDeltaModel::kNoise * 100, 0, 'f', 0),
                 this);
  legend->setWordWrap(true);
  top->addWidget(legend, 1);
  measure_ = new QPushButton(tr("Measure"), this);
  measure_->setObjectName(QStringLiteral("MeasurePasses"));
  measure_->setToolTip(
      tr("Re-compile and re-run without each unchecked pass (every pass that changed the graph "
         "when none is unchecked)"));
  connect(measure_, &QPushButton::clicked, this, &PassDeltaView::measure_requested);
  csv_ = new QPushButton(tr("Export CSV…"), this);
  connect(csv_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Pass Effects"),
                                                      QStringLiteral("pass_effects.csv"), tr("CSV files (*.csv)"));
    if (!path.isEmpty()) export_csv(path);
  });
  top->addWidget(measure_, 0, Qt::AlignTop);
  top->addWidget(csv_, 0, Qt::AlignTop);
  box->addLayout(top);
  note_ = new QLabel(tr("Uncheck passes in the Passes list (or leave all checked to try each pass that changed the "
                        "graph), then Measure."),
                     this);
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #555;"));
  box->addWidget(note_);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  table_ = new QTableView(this);
  table_->setModel(proxy);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // as measured: the full pipeline first
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 8);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(false);
  box->addWidget(table_, 1);
  csv_->setEnabled(false);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] { csv_->setEnabled(model_->rowCount() > 0); });
}

void PassDeltaView::set_busy(bool busy, const QString& what) {
  measure_->setEnabled(!busy);
  if (busy) note_->setText(what.isEmpty() ? tr("Measuring…") : tr("Measuring %1…").arg(what));
}

void PassDeltaView::set_note(const QString& text) { note_->setText(text); }
QString PassDeltaView::note() const { return note_->text(); }

bool PassDeltaView::export_csv(const QString& path) const { return save_bytes(path, model_->to_csv().toUtf8()); }

bool PassDeltaView::export_png(const QString& path) { return save_image(path, grab().toImage()); }

}  // namespace ms::views
