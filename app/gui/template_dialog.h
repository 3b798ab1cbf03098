// New from template: pick a model to start from and set its parameters in a form. Offers the
// bundled sample models and a synthetic residual network of a chosen size.
#pragma once

#include <QDialog>

class QListWidget;
class QSpinBox;
class QLabel;
class QStackedWidget;

namespace ms::app {

// Folders holding bundled sample models (source tree, then the installed share folder).
QStringList sample_dirs();

class TemplateDialog : public QDialog {
  Q_OBJECT
 public:
  explicit TemplateDialog(QWidget* parent = nullptr);
  // What to open: a path or "generated:N".
  QString source() const;

 private:
  void on_pick();
  QListWidget* list_;
  QLabel* about_;
  QStackedWidget* params_;
  QSpinBox* nodes_;
};

}  // namespace ms::app
