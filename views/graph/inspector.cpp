#include "views/graph/inspector.h"

#include <QComboBox>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include "views/layout/graph_model.h"
#include "views/models/node_info_model.h"

namespace ms::views {

Histogram::Histogram(QWidget* parent) : QWidget(parent) { setMinimumHeight(80); }

void Histogram::set_stats(const WeightStats* s) {
  if (!s) {
    set_bins({}, 0, 0);
    return;
  }
  set_bins(std::vector<int64_t>(s->histogram.begin(), s->histogram.end()), s->min, s->max);
  if (s->not_kept) set_note(tr("Not kept in the session file: no values to show"));
}

void Histogram::set_bins(std::vector<int64_t> bins, double min, double max) {
  bins_ = std::move(bins);
  min_ = min;
  max_ = max;
  note_.clear();
  update();
}

void Histogram::set_note(const QString& note) {
  note_ = note;
  update();
}

void Histogram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QRectF area = QRectF(rect()).adjusted(4, 4, -4, -18);
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(area.bottomLeft(), area.bottomRight());
  if (bins_.empty()) {
    if (!note_.isEmpty()) {
      p.setPen(palette().color(QPalette::WindowText));
      p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap, note_);
    }
    return;
  }
  const int64_t top = *std::max_element(bins_.begin(), bins_.end());
  const double w = area.width() / static_cast<double>(bins_.size());
  p.setPen(Qt::NoPen);
  p.setBrush(palette().color(QPalette::Highlight));
  for (size_t i = 0; i < bins_.size(); ++i) {
    const double h = top > 0 ? area.height() * static_cast<double>(bins_[i]) / static_cast<double>(top) : 0;
    p.drawRect(QRectF(area.left() + static_cast<double>(i) * w + 0.5, area.bottom() - h, std::max(1.0, w - 1), h));
  }
  p.setPen(palette().color(QPalette::WindowText));
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  const QRectF labels(area.left(), area.bottom() + 2, area.width(), 14);
  p.drawText(labels, Qt::AlignLeft, QString::number(min_, 'g', 3));
  p.drawText(labels, Qt::AlignRight, QString::number(max_, 'g', 3));
}

Inspector::Inspector(QWidget* parent) : QWidget(parent) {
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(4, 4, 4, 4);
  title_ = new QLabel(tr("Select a node to see its details"), this);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  info_ = new NodeInfoModel(this);
  tree_ = new QTreeView(this);
  tree_->setModel(info_);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->setObjectName(QStringLiteral("InspectorTree"));
  // The names' column is as wide as its longest name up to about half the width (longer names
  // elide in the middle, whole in the tooltip), so the values always have the rest.
  tree_->header()->setSectionResizeMode(0, QHeaderView::Interactive);
  tree_->header()->setStretchLastSection(true);
  tree_->setTextElideMode(Qt::ElideMiddle);
  tree_->setMinimumHeight(tree_->fontMetrics().height() * 8);
  tree_->viewport()->installEventFilter(this);
  weight_pick_ = new QComboBox(this);
  histogram_ = new Histogram(this);
  box->addWidget(title_);
  fused_box_ = new QWidget(this);
  auto* fused_layout = new QVBoxLayout(fused_box_);
  fused_layout->setContentsMargins(0, 0, 0, 0);
  fused_label_ = new QLabel(fused_box_);
  fused_label_->setObjectName(QStringLiteral("FusedOrigins"));
  fused_label_->setWordWrap(true);
  fused_label_->setTextFormat(Qt::RichText);
  auto* go = new QPushButton(tr("Show Origins"), fused_box_);
  go->setObjectName(QStringLiteral("ShowOrigins"));
  go->setToolTip(tr("Bring the nodes this one replaced into view (outlined in the same colour)"));
  connect(go, &QPushButton::clicked, this, &Inspector::origins_requested);
  fused_layout->addWidget(fused_label_);
  fused_layout->addWidget(go, 0, Qt::AlignLeft);
  fused_box_->hide();
  box->addWidget(fused_box_);
  fallback_label_ = new QLabel(this);
  fallback_label_->setObjectName(QStringLiteral("FallbackNote"));
  fallback_label_->setWordWrap(true);
  fallback_label_->setTextFormat(Qt::RichText);
  fallback_label_->hide();
  box->addWidget(fallback_label_);
  // The properties and the captured values share the height; the splitter lets either have more.
  auto* split = new QSplitter(Qt::Vertical, this);
  split->setChildrenCollapsible(false);
  auto* props = new QWidget(split);
  auto* props_layout = new QVBoxLayout(props);
  props_layout->setContentsMargins(0, 0, 0, 0);
  props_layout->addWidget(tree_, 1);
  props_layout->addWidget(weight_pick_);
  props_layout->addWidget(histogram_);
  values_box_ = new QGroupBox(tr("Values"), split);
  values_box_->setObjectName(QStringLiteral("ValuesSection"));
  auto* values_layout = new QVBoxLayout(values_box_);
  values_layout->setContentsMargins(4, 4, 4, 4);
  // Scrolled up and down: the histogram, the heat image and the table together are taller than a
  // short window, and would otherwise set the dock's (and the window's) minimum height.
  auto* values_scroll = new QScrollArea(values_box_);
  values_scroll->setWidgetResizable(true);
  values_scroll->setFrameShape(QFrame::NoFrame);
  values_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the dock's width
  values_ = new ValueView(values_scroll);
  values_scroll->setWidget(values_);
  values_layout->addWidget(values_scroll);
  values_box_->hide();
  split->addWidget(props);
  split->addWidget(values_box_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  box->addWidget(split, 1);
  weight_pick_->hide();
  histogram_->hide();
  connect(weight_pick_, &QComboBox::currentIndexChanged, this, &Inspector::show_weight);
}

void Inspector::set_constants_not_kept(std::vector<Tensor> tensors, const QString& why) {
  info_->set_constants_not_kept(std::move(tensors), why);
}

void Inspector::show_node(const GraphModel* m, int node) {
  show_fused_origins({});
  show_fallback({});
  show_values({}, {}, {});
  info_->set_node(m, node);
  tree_->expandToDepth(0);
  for (const char* collapsed : {"Weights", "Origins"})
    if (int r = info_->section(tr(collapsed)); r >= 0) {
      // Keep the long sections folded; the histogram below summarizes the weights.
      for (int row = 0; row < info_->rowCount(); ++row)
        if (info_->index(row, 0).internalId() == static_cast<quintptr>(r)) tree_->collapse(info_->index(row, 0));
    }
  if (m && node >= 0) {
    const auto& n = *m->nodes[static_cast<size_t>(node)].node;
    title_->setText(
        QStringLiteral("<b>%1</b>  %2")
            .arg(QString::fromStdString(n.op_type).toHtmlEscaped(), QString::fromStdString(n.name).toHtmlEscaped()));
  } else {
    title_->setText(tr("Select a node to see its details"));
  }
  fit_columns();
  weight_pick_->blockSignals(true);
  weight_pick_->clear();
  for (const auto& w : info_->weights()) weight_pick_->addItem(w.name);
  weight_pick_->blockSignals(false);
  const bool any = !info_->weights().empty();
  weight_pick_->setVisible(any);
  histogram_->setVisible(any);
  show_weight(any ? 0 : -1);
}

void Inspector::fit_columns() {
  tree_->resizeColumnToContents(0);
  const int names = tree_->columnWidth(0);
  const int room = tree_->viewport()->width() * 11 / 20;
  if (names > room) tree_->setColumnWidth(0, std::max(60, room));
}

bool Inspector::eventFilter(QObject* obj, QEvent* e) {
  if (obj == tree_->viewport() && e->type() == QEvent::Resize) fit_columns();
  return QWidget::eventFilter(obj, e);
}

void Inspector::show_fallback(const QString& reason) {
  fallback_label_->setVisible(!reason.isEmpty());
  fallback_label_->setText(
      reason.isEmpty()
          ? QString()
          : tr("<span style='color:#e67e22'>■</span> <b>Ran on a fallback:</b> %1").arg(reason.toHtmlEscaped()));
}

QString Inspector::fallback_text() const { return fallback_label_->text(); }

void Inspector::show_fused_origins(const QStringList& origins) {
  fused_box_->setVisible(!origins.isEmpty());
  if (origins.isEmpty()) {
    fused_label_->clear();
    return;
  }
  QStringList lines;
  for (const auto& o : origins) lines << QStringLiteral("&nbsp;&nbsp;") + o.toHtmlEscaped();
  fused_label_->setText(tr("<span style='color:#8e44d0'>■</span> <b>Fused from %1 %2:</b><br>%3")
                            .arg(origins.size())
                            .arg(origins.size() == 1 ? tr("node") : tr("nodes"), lines.join(QStringLiteral("<br>"))));
}

QString Inspector::fused_origins_text() const {
  return fused_box_->isVisible() || !fused_label_->text().isEmpty() ? fused_label_->text() : QString();
}

void Inspector::show_values(std::vector<ShownValue> values, const QString& comparison, const QString& hint) {
  const bool any = !values.empty() || !hint.isEmpty();
  values_->set_values(std::move(values), comparison, hint);
  values_box_->setVisible(any);
}

void Inspector::show_weight(int i) {
  const auto& ws = info_->weights();
  histogram_->set_stats(i >= 0 && i < static_cast<int>(ws.size()) ? &ws[static_cast<size_t>(i)] : nullptr);
}

}  // namespace ms::views
