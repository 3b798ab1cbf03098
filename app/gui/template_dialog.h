// New from template: pick a model to start from and set its parameters in a form. Lists the zoo's
// templates (zoo:NAME?key=value), a synthetic residual network of any size, and the bundled sample
// models.
#pragma once

#include <QDialog>

#include <vector>

class QListWidget;
class QSpinBox;
class QLabel;
class QFormLayout;

namespace ms::app {

// Folders holding bundled sample models (source tree, then the installed share folder).
QStringList sample_dirs();

struct TemplateParam {
  QString name, description;
  qint64 value = 0, min = 0, max = 0;
};

struct TemplateEntry {
  enum class Kind { Zoo, Generated, File } kind = Kind::File;
  QString name, description, path;
  std::vector<TemplateParam> params;
};

// Everything the dialog offers, in order.
std::vector<TemplateEntry> template_entries();
// What to open for an entry with these parameter values: "zoo:NAME?k=v", "generated:N" or a path.
QString template_source(const TemplateEntry& e, const std::vector<qint64>& values);

class TemplateDialog : public QDialog {
  Q_OBJECT
 public:
  explicit TemplateDialog(QWidget* parent = nullptr);
  QString source() const;

 private:
  void on_pick(int row);
  std::vector<TemplateEntry> entries_;
  QListWidget* list_;
  QLabel* about_;
  QWidget* form_host_;
  QFormLayout* form_;
  std::vector<QSpinBox*> spins_;
};

}  // namespace ms::app
