#include "views/graph/value_view.h"

#include <QAbstractTableModel>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QMessageBox>
#include <QPixmap>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>

#include "engine/core/shape.h"
#include "engine/frontend/npy.h"
#include "views/common/palette.h"
#include "views/graph/inspector.h"

namespace ms::views {

namespace {

constexpr int64_t kValueHeatCap = 2048;  // rows and columns drawn in the heat image
constexpr int kValueTableCap = 256;      // rows and columns listed in the table
constexpr double kValueHeatWidth = 260, kValueHeatHeight = 360;

const char* const kNotKept = QT_TRANSLATE_NOOP("ms::views::ValueView", "values not kept (past the capture budget)");

// The slice geometry of `shape`: the last two dims as rows x cols (one row for rank 1, one element
// for rank 0) and the number of slices over the leading dims.
struct ValueSliceDims {
  int64_t rows = 1, cols = 1, slices = 1;
};

ValueSliceDims value_slice_dims(const Shape& s) {
  ValueSliceDims d;
  if (s.size() == 1) d.cols = s[0];
  if (s.size() >= 2) {
    d.rows = s[s.size() - 2];
    d.cols = s[s.size() - 1];
    for (size_t i = 0; i + 2 < s.size(); ++i) d.slices *= s[i];
  }
  return d;
}

bool value_has_numbers(DType t) { return is_numeric(t) || is_narrow(t) || t == DType::Bool; }

// "[0,2,:,:]": the leading index of slice `slice` of `shape`.
QString value_slice_index(const Shape& shape, int64_t slice) {
  if (shape.size() <= 2) return {};
  QStringList parts(static_cast<qsizetype>(shape.size()), QStringLiteral(":"));
  for (size_t i = shape.size() - 2; i-- > 0;) {
    const int64_t d = std::max<int64_t>(1, shape[i]);
    parts[static_cast<qsizetype>(i)] = QString::number(slice % d);
    slice /= d;
  }
  return QLatin1Char('[') + parts.join(QLatin1Char(',')) + QLatin1Char(']');
}

QString value_number(double v) {
  if (std::isnan(v)) return QStringLiteral("NaN");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::asprintf("%.6g", v);
}

QColor value_cell_color(double v, double lo, double hi) {
  // The heat colour, lightened so the numbers stay readable over it.
  const QColor c = diverging_color(v, lo, hi);
  return QColor((c.red() + 2 * 255) / 3, (c.green() + 2 * 255) / 3, (c.blue() + 2 * 255) / 3);
}

}  // namespace

// The shown part of a slice: row-major values, `stride` per row, at most kValueTableCap each way.
class ValueSliceModel : public QAbstractTableModel {
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void set(std::shared_ptr<const std::vector<double>> values, int rows, int cols, int stride, double lo, double hi) {
    beginResetModel();
    values_ = std::move(values);
    rows_ = rows;
    cols_ = cols;
    stride_ = stride;
    lo_ = lo;
    hi_ = hi;
    endResetModel();
  }
  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : rows_; }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : cols_; }
  QVariant data(const QModelIndex& index, int role) const override {
    if (!values_ || !index.isValid()) return {};
    const double v = (*values_)[static_cast<size_t>(index.row()) * static_cast<size_t>(stride_) +
                                static_cast<size_t>(index.column())];
    switch (role) {
      case Qt::DisplayRole: return value_number(v);
      case Qt::ToolTipRole: return QString::asprintf("%.9g", v);
      case Qt::UserRole: return v;
      case Qt::TextAlignmentRole: return static_cast<int>(Qt::AlignRight | Qt::AlignVCenter);
      case Qt::BackgroundRole: return value_cell_color(v, lo_, hi_);
      case Qt::ForegroundRole: return QColor(0x22, 0x22, 0x22);
      default: return {};
    }
  }
  QVariant headerData(int section, Qt::Orientation, int role) const override {
    return role == Qt::DisplayRole ? QVariant(section) : QVariant();
  }

 private:
  std::shared_ptr<const std::vector<double>> values_;
  int rows_ = 0, cols_ = 0, stride_ = 0;
  double lo_ = 0, hi_ = 0;
};

ValueView::ValueView(QWidget* parent) : QWidget(parent) {
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  hint_->setStyleSheet(QStringLiteral("color: #777;"));
  box->addWidget(hint_);
  body_ = new QWidget(this);
  auto* body = new QVBoxLayout(body_);
  body->setContentsMargins(0, 0, 0, 0);
  box->addWidget(body_, 1);

  pick_ = new QComboBox(body_);
  pick_->setObjectName(QStringLiteral("ValuePick"));
  connect(pick_, &QComboBox::currentIndexChanged, this, &ValueView::set_current);
  header_ = new QLabel(body_);
  header_->setTextFormat(Qt::RichText);
  header_->setWordWrap(true);
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  comparison_ = new QLabel(body_);
  comparison_->setObjectName(QStringLiteral("ValueComparison"));
  comparison_->setWordWrap(true);
  comparison_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stats_ = new QLabel(body_);
  stats_->setObjectName(QStringLiteral("ValueStats"));
  stats_->setWordWrap(true);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  histogram_ = new Histogram(body_);

  slice_row_ = new QWidget(body_);
  auto* slice_layout = new QHBoxLayout(slice_row_);
  slice_layout->setContentsMargins(0, 0, 0, 0);
  slice_box_ = new QSpinBox(slice_row_);
  slice_box_->setObjectName(QStringLiteral("ValueSlice"));
  slice_box_->setToolTip(tr("Which 2-D slice (the last two dims) of the leading dims"));
  slice_label_ = new QLabel(slice_row_);
  slice_layout->addWidget(new QLabel(tr("Slice"), slice_row_));
  slice_layout->addWidget(slice_box_);
  slice_layout->addWidget(slice_label_, 1);
  connect(slice_box_, &QSpinBox::valueChanged, this, &ValueView::set_slice);

  heat_label_ = new QLabel(body_);
  heat_label_->setObjectName(QStringLiteral("ValueHeat"));
  heat_label_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  heat_label_->setContentsMargins(0, 0, 0, 0);
  heat_label_->installEventFilter(this);
  scale_label_ = new QLabel(body_);
  scale_label_->setTextFormat(Qt::RichText);
  model_ = new ValueSliceModel(this);
  table_ = new QTableView(body_);
  table_->setObjectName(QStringLiteral("ValueTable"));
  table_->setModel(model_);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setDefaultSectionSize(
      table_->fontMetrics().horizontalAdvance(QStringLiteral("-0.000000e+00")));
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 4);
  table_->setMinimumHeight(120);
  table_note_ = new QLabel(body_);
  table_note_->setStyleSheet(QStringLiteral("color: #777;"));
  save_ = new QPushButton(tr("Save .npy…"), body_);
  save_->setObjectName(QStringLiteral("ValueSave"));
  save_->setToolTip(tr("Save this value as a NumPy array (bfloat16 and narrow types as float32)"));
  connect(save_, &QPushButton::clicked, this, &ValueView::save_clicked);

  body->addWidget(pick_);
  body->addWidget(header_);
  body->addWidget(comparison_);
  body->addWidget(stats_);
  body->addWidget(histogram_);
  body->addWidget(slice_row_);
  body->addWidget(heat_label_);
  body->addWidget(scale_label_);
  body->addWidget(table_, 1);
  body->addWidget(table_note_);
  body->addWidget(save_, 0, Qt::AlignLeft);
  show_current();
}

ValueView::~ValueView() = default;

void ValueView::set_values(std::vector<ShownValue> values, const QString& comparison, const QString& hint) {
  values_ = std::move(values);
  comparison_->setText(comparison);
  hint_->setText(hint);
  current_ = values_.empty() ? -1 : 0;
  slice_ = 0;
  pick_->blockSignals(true);
  pick_->clear();
  for (const auto& v : values_) {
    pick_->addItem(
        QStringLiteral("%1: %2 %3")
            .arg(v.mode, QString::fromStdString(v.value.name),
                 QString::fromStdString(std::string(dtype_name(v.value.dtype)) + shape_to_string(v.value.shape))));
  }
  pick_->setCurrentIndex(current_);
  pick_->blockSignals(false);
  show_current();
}

const runtime::CapturedValue* ValueView::value() const {
  return current_ >= 0 && current_ < count() ? &values_[static_cast<size_t>(current_)].value : nullptr;
}

void ValueView::set_current(int i) {
  if (i < 0 || i >= count() || i == current_) return;
  current_ = i;
  slice_ = 0;
  pick_->blockSignals(true);
  pick_->setCurrentIndex(i);
  pick_->blockSignals(false);
  show_current();
}

int ValueView::slices() const {
  const auto* v = value();
  if (!v) return 0;
  return static_cast<int>(std::clamp<int64_t>(value_slice_dims(v->shape).slices, 0, INT_MAX));
}

void ValueView::set_slice(int s) {
  if (s < 0 || s >= slices() || s == slice_) return;
  slice_ = s;
  slice_box_->blockSignals(true);
  slice_box_->setValue(s);
  slice_box_->blockSignals(false);
  show_slice();
}

QString ValueView::stats_text() const { return value() ? stats_->text() : QString(); }

QString ValueView::comparison_text() const { return comparison_->text(); }

void ValueView::show_current() {
  const auto* v = value();
  hint_->setVisible(!v && !hint_->text().isEmpty());
  body_->setVisible(v != nullptr);
  if (!v) {
    heat_ = {};
    slice_values_.reset();
    model_->set(nullptr, 0, 0, 0, 0, 0);
    histogram_->set_bins({}, 0, 0);
    return;
  }
  pick_->setVisible(count() > 1);
  QString header =
      QStringLiteral("<b>%1</b> &nbsp;output %2 of <i>%3</i> (%4)")
          .arg(QString::fromStdString(v->name).toHtmlEscaped())
          .arg(v->output)
          .arg(QString::fromStdString(v->node).toHtmlEscaped(), QString::fromStdString(v->op).toHtmlEscaped());
  if (count() == 1) header = values_.front().mode.toHtmlEscaped() + QStringLiteral(": ") + header;
  if (v->reordered)
    header += tr("<br><span style='color:#777'>copied out of the channel-blocked layout (nChw8c or nChw16c)</span>");
  header_->setText(header);
  comparison_->setVisible(!comparison_->text().isEmpty());
  stats_->setText(
      QStringLiteral("%1%2: %3")
          .arg(QString::fromUtf8(dtype_name(v->dtype).data(), static_cast<qsizetype>(dtype_name(v->dtype).size())),
               QString::fromStdString(shape_to_string(v->shape)), QString::fromStdString(v->stats.to_string())));
  histogram_->set_bins(v->stats.histogram, v->stats.min, v->stats.max);
  histogram_->setVisible(!v->stats.histogram.empty());
  const int n = slices();
  slice_box_->blockSignals(true);
  slice_box_->setRange(0, std::max(0, n - 1));
  slice_box_->setValue(slice_);
  slice_box_->blockSignals(false);
  slice_row_->setVisible(n > 1);
  save_->setEnabled(v->value.defined() && v->value.dtype() != DType::String);
  show_slice();
}

void ValueView::show_slice() {
  const auto* v = value();
  if (!v) return;
  const Tensor& t = v->value;
  const ValueSliceDims d = value_slice_dims(v->shape);
  slice_label_->setText(tr("of %1 %2").arg(slices()).arg(value_slice_index(v->shape, slice_)));
  QString reason;
  if (!t.defined())
    reason = tr(kNotKept);
  else if (!value_has_numbers(t.dtype()))
    reason = tr("no numbers to show (%1)").arg(QString::fromStdString(std::string(dtype_name(t.dtype()))));
  else if (t.numel() == 0 || d.slices == 0 || t.shape() != v->shape)
    reason = t.numel() == 0 ? tr("no elements") : tr("the kept tensor's shape differs from the value's");
  heat_ = {};
  slice_values_.reset();
  if (!reason.isEmpty()) {
    heat_label_->setPixmap({});
    heat_label_->setText(QStringLiteral("<i>%1</i>").arg(reason.toHtmlEscaped()));
    scale_label_->hide();
    table_->hide();
    table_note_->hide();
    model_->set(nullptr, 0, 0, 0, 0, 0);
    return;
  }
  const int rows = static_cast<int>(std::min(d.rows, kValueHeatCap));
  const int cols = static_cast<int>(std::min(d.cols, kValueHeatCap));
  const int64_t base = static_cast<int64_t>(slice_) * d.rows * d.cols;
  auto values = std::make_shared<std::vector<double>>(static_cast<size_t>(rows) * static_cast<size_t>(cols));
  const bool f32 = t.dtype() == DType::F32;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int64_t i = base + static_cast<int64_t>(r) * d.cols + c;
      (*values)[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)] =
          f32 ? static_cast<double>(t.data<float>()[i]) : t.at_double(i);
    }
  // The colour range is the whole value's, so slices read on one scale.
  const double lo = v->stats.finite ? v->stats.min : 0, hi = v->stats.finite ? v->stats.max : 0;
  heat_ = QImage(cols, rows, QImage::Format_RGB32);
  for (int r = 0; r < rows; ++r) {
    auto* line = reinterpret_cast<QRgb*>(heat_.scanLine(r));
    for (int c = 0; c < cols; ++c)
      line[c] = diverging_color((*values)[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)],
                                lo, hi)
                    .rgb();
  }
  rows_ = rows;
  cols_ = cols;
  slice_values_ = values;
  // Nearest-neighbour scaling to about kValueHeatWidth wide, square elements; a single row is a strip.
  const double s = std::min(kValueHeatWidth / cols, kValueHeatHeight / rows);
  scale_x_ = s;
  scale_y_ = rows == 1 ? std::min(s, 24.0) : s;
  const int w = std::max(1, static_cast<int>(std::lround(cols * scale_x_)));
  const int h = std::max(1, static_cast<int>(std::lround(rows * scale_y_)));
  scale_x_ = static_cast<double>(w) / cols;
  scale_y_ = static_cast<double>(h) / rows;
  heat_label_->setPixmap(QPixmap::fromImage(heat_.scaled(w, h, Qt::IgnoreAspectRatio, Qt::FastTransformation)));
  heat_label_->setToolTip(tr("Hover for the value under the pointer"));
  const double mid = lo <= 0 && 0 <= hi ? 0.0 : (lo + hi) / 2;
  auto swatch = [&](double x) {
    return QStringLiteral("<span style='color:%1'>■</span> %2").arg(diverging_color(x, lo, hi).name(), value_number(x));
  };
  QString scale = swatch(lo) + QStringLiteral(" &nbsp;") + swatch(mid) + QStringLiteral(" &nbsp;") + swatch(hi);
  if (!v->stats.all_finite())
    scale += tr(" &nbsp;<span style='color:#ff00ff'>■</span> NaN &nbsp;<span style='color:#000'>■</span> inf");
  scale_label_->setText(scale);
  scale_label_->show();
  const int table_rows = std::min(rows, kValueTableCap), table_cols = std::min(cols, kValueTableCap);
  model_->set(values, table_rows, table_cols, cols, lo, hi);
  table_->show();
  const bool cut = d.rows > table_rows || d.cols > table_cols;
  table_note_->setText(
      cut ? tr("first %1 × %2 of %3 × %4 shown").arg(table_rows).arg(table_cols).arg(d.rows).arg(d.cols) : QString());
  table_note_->setVisible(cut);
}

bool ValueView::eventFilter(QObject* obj, QEvent* e) {
  if (obj == heat_label_ && e->type() == QEvent::ToolTip && slice_values_ && cols_ > 0 && rows_ > 0) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int c = static_cast<int>(help->pos().x() / scale_x_), r = static_cast<int>(help->pos().y() / scale_y_);
    if (c >= 0 && c < cols_ && r >= 0 && r < rows_) {
      const auto* v = value();
      QString index = value_slice_index(v->shape, slice_);
      const QString rc = v->shape.size() >= 2   ? QStringLiteral("%1,%2").arg(r).arg(c)
                         : v->shape.size() == 1 ? QString::number(c)
                                                : QString();
      index = index.isEmpty() ? QLatin1Char('[') + rc + QLatin1Char(']')
                              : index.left(index.size() - 4) + rc + QLatin1Char(']');  // replaces ":,:]"
      const double x = (*slice_values_)[static_cast<size_t>(r) * static_cast<size_t>(cols_) + static_cast<size_t>(c)];
      QToolTip::showText(help->globalPos(), QStringLiteral("%1 = %2").arg(index, QString::asprintf("%.9g", x)),
                         heat_label_);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::eventFilter(obj, e);
}

bool ValueView::save_npy(const QString& path, QString* error) const {
  const auto* v = value();
  if (!v || !v->value.defined()) {
    if (error) *error = tr("no kept value to save");
    return false;
  }
  Tensor t = v->value;
  if (t.dtype() == DType::BF16 || is_narrow(t.dtype())) {
    const std::vector<double> d = runtime::to_doubles(t);
    t = Tensor::from_vector<float>(std::vector<float>(d.begin(), d.end()), t.shape());
  }
  const Status st = ms::save_npy(t, QFile::encodeName(path).toStdString());
  if (!st) {
    if (error) *error = QString::fromStdString(st.message());
    return false;
  }
  return true;
}

void ValueView::save_clicked() {
  const auto* v = value();
  if (!v) return;
  QString name =
      values_[static_cast<size_t>(current_)].mode.toLower() + QLatin1Char('_') + QString::fromStdString(v->name);
  for (QChar& ch : name)
    if (!ch.isLetterOrNumber() && ch != QLatin1Char('.') && ch != QLatin1Char('-')) ch = QLatin1Char('_');
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save Value"), name + QStringLiteral(".npy"), tr("NumPy arrays (*.npy)"));
  if (path.isEmpty()) return;
  QString error;
  if (!save_npy(path, &error)) {
    QMessageBox::warning(this, tr("Save Value"), error);
    return;
  }
  Q_EMIT saved(path);
}

}  // namespace ms::views
