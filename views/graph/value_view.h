// One node's captured values (runtime::ValueCapture) in the inspector: the type and statistics, a
// histogram, a heat image of a 2-D slice with its numbers in a table, and Save .npy.
#pragma once

#include <QImage>
#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

#include "engine/runtime/value_capture.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace ms::views {

class Histogram;
class ValueSliceModel;

struct ShownValue {
  QString mode;                  // "PyNative" | "Graph"
  runtime::CapturedValue value;  // copy is cheap: the tensor is shared
};

// One node's captured values (its outputs in each mode captured): a picker when there are several,
// the type and statistics line (min/max/mean/std, NaN/inf counts), a histogram, a heat image of a 2-D
// slice (the last two dims; a spin box picks the slice of the leading dims; 1-D and 0-D shown as one
// row), the slice's numbers in a table, and Save .npy. The heat scale is the whole value's finite range
// (ValueStats min and max), so slices compare. A value past the capture budget (undefined tensor)
// shows its statistics and histogram only.
class ValueView : public QWidget {
  Q_OBJECT
 public:
  explicit ValueView(QWidget* parent = nullptr);
  ~ValueView() override;
  // `comparison`: one line shown under the header (e.g. "Graph against PyNative: max abs 2.4e-07, max
  // rel 7.2e-07"), may be empty. Empty `values` shows `hint` (e.g. "Numerics > Capture values to
  // inspect activations").
  void set_values(std::vector<ShownValue> values, const QString& comparison, const QString& hint = {});
  const std::vector<ShownValue>& values() const { return values_; }
  int count() const { return static_cast<int>(values_.size()); }
  int current() const { return current_; }  // -1 when empty
  void set_current(int i);
  int slices() const;  // 2-D slices of the current value (product of the leading dims; 1 for rank <= 2)
  int slice() const { return slice_; }
  void set_slice(int s);
  QImage heat_image() const { return heat_; }  // the current slice, one pixel per element; null when not kept
  QString stats_text() const;                  // the statistics line shown
  QString comparison_text() const;
  // Writes the current value as .npy (bfloat16 and narrow types widened to float32; engine/frontend/npy.h
  // save_npy); false with nothing written when there is no kept value. `error` gets why it failed.
  bool save_npy(const QString& path, QString* error = nullptr) const;

 Q_SIGNALS:
  void saved(const QString& path);

 protected:
  bool eventFilter(QObject* obj, QEvent* e) override;

 private:
  void show_current();
  void show_slice();
  void save_clicked();
  const runtime::CapturedValue* value() const;

  std::vector<ShownValue> values_;
  int current_ = -1;
  int slice_ = 0;
  QImage heat_;
  int rows_ = 0, cols_ = 0;                                  // the slice's dims (as drawn in heat_)
  double scale_x_ = 1, scale_y_ = 1;                         // heat label pixels per element
  std::shared_ptr<const std::vector<double>> slice_values_;  // rows_ x cols_

  QLabel* hint_;
  QWidget* body_;
  QComboBox* pick_;
  QLabel* header_;
  QLabel* comparison_;
  QLabel* stats_;
  Histogram* histogram_;
  QWidget* slice_row_;
  QSpinBox* slice_box_;
  QLabel* slice_label_;
  QLabel* heat_label_;
  QLabel* scale_label_;
  QTableView* table_;
  QLabel* table_note_;
  QPushButton* save_;
  ValueSliceModel* model_;
};

}  // namespace ms::views
