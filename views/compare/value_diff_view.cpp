#include "views/compare/value_diff_view.h"

#include <QCheckBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace ms::views {

namespace {

// Rows whose value or node names hold the filter text, and with `diverged_only` only those past
// the tolerance.
class ValueDiffFilterProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void set_text(const QString& text) {
    text_ = text.trimmed();
    invalidateFilter();
  }
  void set_diverged_only(bool on) {
    diverged_only_ = on;
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    const auto* m = static_cast<const ValueDiffModel*>(sourceModel());
    const runtime::ValueDiff* v = m ? m->row_at(row) : nullptr;
    if (!v) return false;
    if (diverged_only_ && !v->diverged) return false;
    if (text_.isEmpty()) return true;
    for (const std::string* s : {&v->value, &v->node, &v->ref_value, &v->ref_node})
      if (QString::fromStdString(*s).contains(text_, Qt::CaseInsensitive)) return true;
    return false;
  }

 private:
  QString text_;
  bool diverged_only_ = false;
};

}  // namespace

ValueDiffView::ValueDiffView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("ValueDiffView"));
  model_ = new ValueDiffModel(this);
  auto* proxy = new ValueDiffFilterProxy(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  proxy_ = proxy;

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(6, 4, 6, 4);
  box->setSpacing(4);
  auto* top = new QHBoxLayout;
  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText(tr("Filter values and nodes…"));
  filter_->setClearButtonEnabled(true);
  filter_->setMinimumWidth(filter_->fontMetrics().horizontalAdvance(filter_->placeholderText()) + 40);
  filter_->setMaximumWidth(320);
  top->addWidget(filter_);
  past_tol_ = new QCheckBox(tr("Only past the tolerance"), this);
  top->addWidget(past_tol_);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("ValueDiffSummary"));
  summary_->setTextFormat(Qt::PlainText);
  summary_->setWordWrap(false);
  // Elided to the width left (on each resize of the label); the whole line is the tooltip.
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  summary_->installEventFilter(this);
  top->addWidget(summary_, 1);
  box->addLayout(top);

  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(ValueDiffModel::kMaxRel, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setWordWrap(false);
  table_->setTextElideMode(Qt::ElideMiddle);
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  auto* header = table_->horizontalHeader();
  header->setStretchLastSection(true);
  header->setSectionResizeMode(QHeaderView::Interactive);
  table_->viewport()->installEventFilter(this);
  box->addWidget(table_, 1);

  connect(filter_, &QLineEdit::textChanged, this, [this, proxy](const QString& text) {
    proxy->set_text(text);
    update_summary();
  });
  connect(past_tol_, &QCheckBox::toggled, this, [this, proxy](bool on) {
    proxy->set_diverged_only(on);
    update_summary();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (selecting_ || pressing_) return;
    if (const runtime::ValueDiff* v = value_at(cur)) Q_EMIT node_selected(v->node_id.value);
  });
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    if (std::exchange(double_, false)) return;
    if (const runtime::ValueDiff* v = value_at(index)) Q_EMIT node_selected(v->node_id.value);
  });
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const runtime::ValueDiff* v = value_at(index);
    if (v && v->ref_node_id.valid()) Q_EMIT show_in_pynative(v->ref_node_id.value);
  });
  connect(table_, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    const QModelIndex index = table_->indexAt(pos);
    if (!index.isValid()) return;
    QMenu* menu = row_menu(index, this);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    menu->popup(table_->viewport()->mapToGlobal(pos));
  });
  update_summary();
}

const runtime::ValueDiff* ValueDiffView::value_at(const QModelIndex& index) const {
  return index.isValid() ? model_->row_at(proxy_->mapToSource(index).row()) : nullptr;
}

void ValueDiffView::set_diff(std::shared_ptr<const runtime::ModeDiff> diff) {
  selecting_ = true;
  model_->set_diff(std::move(diff));
  selecting_ = false;
  // Columns fit their contents up to about 40 characters (names elide in the middle); the
  // match / note column takes the rest.
  table_->resizeColumnsToContents();
  const int widest = 40 * table_->fontMetrics().horizontalAdvance(QLatin1Char('x'));
  for (int col = 0; col < ValueDiffModel::kMatch; ++col)
    table_->setColumnWidth(col, std::min(table_->columnWidth(col), widest));
  update_summary();
}

int ValueDiffView::rows() const { return proxy_->rowCount(); }

bool ValueDiffView::select_first_divergence() {
  const int row = model_->first_divergence_row();
  if (row < 0) return false;
  const QModelIndex index = proxy_->mapFromSource(model_->index(row, ValueDiffModel::kValue));
  if (!index.isValid()) return false;
  selecting_ = true;
  table_->setCurrentIndex(index);
  table_->selectRow(index.row());
  table_->scrollTo(index, QAbstractItemView::PositionAtCenter);
  selecting_ = false;
  return true;
}

QMenu* ValueDiffView::row_menu(const QModelIndex& index, QWidget* parent) {
  auto* menu = new QMenu(parent);
  const runtime::ValueDiff* v = value_at(index);
  const uint64_t node = v ? v->node_id.value : 0, ref = v ? v->ref_node_id.value : 0;
  QAction* select = menu->addAction(tr("Select Graph node"), this, [this, node] { Q_EMIT node_selected(node); });
  select->setEnabled(node != 0);
  QAction* show = menu->addAction(tr("Show in PyNative graph"), this, [this, ref] { Q_EMIT show_in_pynative(ref); });
  show->setEnabled(ref != 0);
  return menu;
}

bool ValueDiffView::eventFilter(QObject* obj, QEvent* e) {
  if (obj == summary_ && e->type() == QEvent::Resize) update_summary();
  if (obj == table_->viewport()) {
    switch (e->type()) {
      case QEvent::MouseButtonPress:
        pressing_ = true;
        double_ = false;
        break;
      case QEvent::MouseButtonDblClick:
        pressing_ = true;
        double_ = true;
        break;
      case QEvent::MouseButtonRelease: pressing_ = false; break;
      default: break;
    }
  }
  return QWidget::eventFilter(obj, e);
}

void ValueDiffView::update_summary() {
  const runtime::ModeDiff* d = model_->diff();
  if (!d) {
    summary_full_ = tr("Numerics › Compare Values of Both Modes lists every value of both modes here.");
  } else {
    summary_full_ = QString::fromStdString(d->summary());
    if (rows() != model_->rowCount())
      summary_full_ = tr("%1 of %2 rows shown · %3").arg(rows()).arg(model_->rowCount()).arg(summary_full_);
  }
  summary_->setToolTip(summary_full_);
  summary_->setText(summary_->fontMetrics().elidedText(summary_full_, Qt::ElideRight, std::max(summary_->width(), 40)));
}

}  // namespace ms::views
