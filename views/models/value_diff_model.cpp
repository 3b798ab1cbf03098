#include "views/models/value_diff_model.h"

#include <QColor>
#include <QFont>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

#include "views/common/palette.h"

namespace ms::views {

namespace {

QString value_diff_num(double v) { return QString::number(v, 'g', 3); }

// The error a row sorts and colours by: +inf with a non-finite mismatch, -1 when not compared.
double value_diff_error(const runtime::ValueDiff& v, bool rel) {
  if (!v.compared) return -1;
  if (v.nonfinite_mismatches > 0) return std::numeric_limits<double>::infinity();
  return rel ? v.max_rel : v.max_abs;
}

QString value_diff_match(const runtime::ValueDiff& v) {
  QStringList parts;
  if (v.nonfinite_mismatches > 0)
    parts << ValueDiffModel::tr(
        "%n element(s) finite on one side only", nullptr,
        static_cast<int>(std::min<int64_t>(v.nonfinite_mismatches, std::numeric_limits<int>::max())));
  if (!v.match.empty()) parts << QString::fromStdString(v.match);
  if (!v.note.empty()) parts << QString::fromStdString(v.note);
  return parts.join(QStringLiteral(" · "));
}

}  // namespace

ValueDiffModel::ValueDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void ValueDiffModel::set_diff(std::shared_ptr<const runtime::ModeDiff> diff) {
  beginResetModel();
  diff_ = std::move(diff);
  endResetModel();
}

const runtime::ValueDiff* ValueDiffModel::row_at(int row) const {
  if (!diff_ || row < 0 || row >= static_cast<int>(diff_->values.size())) return nullptr;
  return &diff_->values[static_cast<size_t>(row)];
}

int ValueDiffModel::first_divergence_row() const {
  return diff_ && diff_->first_divergence < static_cast<int>(diff_->values.size()) ? diff_->first_divergence : -1;
}

int ValueDiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !diff_ ? 0 : static_cast<int>(diff_->values.size());
}

int ValueDiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant ValueDiffModel::data(const QModelIndex& index, int role) const {
  const runtime::ValueDiff* v = index.isValid() ? row_at(index.row()) : nullptr;
  if (!v || index.column() >= kColumns) return {};
  const int col = index.column();
  const bool first = index.row() == first_divergence_row();
  switch (role) {
    case Qt::DisplayRole:
      switch (col) {
        case kOrder: return static_cast<qulonglong>(v->order);
        case kValue: return QString::fromStdString(v->value);
        case kNode: return QString::fromStdString(v->node);
        case kRefNode: return QString::fromStdString(v->ref_node);
        case kMaxAbs:
        case kMaxRel:
          if (!v->compared) return QStringLiteral("—");
          if (v->nonfinite_mismatches > 0) return tr("NaN/inf");
          return value_diff_num(col == kMaxRel ? v->max_rel : v->max_abs);
        case kMatch: return value_diff_match(*v);
        default: return {};
      }
    case Qt::UserRole:
      switch (col) {
        case kOrder: return static_cast<qulonglong>(v->order);
        case kValue: return QString::fromStdString(v->value);
        case kNode: return QString::fromStdString(v->node);
        case kRefNode: return QString::fromStdString(v->ref_node);
        case kMaxAbs: return value_diff_error(*v, false);
        case kMaxRel: return value_diff_error(*v, true);
        case kMatch: return value_diff_match(*v);
        default: return {};
      }
    case kDivergedRole: return v->diverged;
    case Qt::TextAlignmentRole:
      return col == kOrder || col == kMaxAbs || col == kMaxRel ? static_cast<int>(Qt::AlignRight | Qt::AlignVCenter)
                                                               : static_cast<int>(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::FontRole:
      if (first) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return {};
    case Qt::BackgroundRole:
      if (!v->diverged) return {};
      return error_color(v->nonfinite_mismatches > 0 ? std::nan("") : v->max_rel, diff_->tol);
    case Qt::ForegroundRole:
      if (v->diverged) return QColor(Qt::white);  // on error_color's red
      if (!v->compared) return QColor(0x80, 0x84, 0x8c);
      return {};
    case Qt::DecorationRole:
      // The graph's fill for this value, beside its relative error.
      if (col != kMaxRel || !v->compared || v->diverged) return {};
      return error_color(v->max_rel, diff_->tol);
    case Qt::ToolTipRole:
      if (first) return tr("first value past the tolerance");
      if (!v->compared) return QString::fromStdString(v->note);
      if (col == kRefNode && !v->ref_value.empty())
        return tr("PyNative value '%1'").arg(QString::fromStdString(v->ref_value));
      if (col == kMaxAbs || col == kMaxRel)
        return tr("max abs %1, max rel %2 (tolerance %3)")
            .arg(value_diff_num(v->max_abs), value_diff_num(v->max_rel), value_diff_num(diff_->tol));
      return {};
    default: return {};
  }
}

QVariant ValueDiffModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case kOrder: return tr("When Graph mode produced the value");
      case kMaxAbs: return tr("Largest |Graph - PyNative|");
      case kMaxRel: return tr("Largest |Graph - PyNative| over the largest |PyNative|");
      case kMatch: return tr("How the Graph value was matched with a PyNative one, or why it was not compared");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case kOrder: return tr("#");
    case kValue: return tr("Graph value");
    case kNode: return tr("Graph node");
    case kRefNode: return tr("PyNative node");
    case kMaxAbs: return tr("max abs");
    case kMaxRel: return tr("max rel");
    case kMatch: return tr("match / note");
    default: return {};
  }
}

}  // namespace ms::views
