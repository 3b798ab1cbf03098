// What an empty window shows: Open model…, New from template…, the bundled samples, the recent
// models and sessions, and what PyNative and Graph mode are. A click asks the main window to open.
#pragma once

#include <QWidget>

class QListWidget;

namespace ms::app {

class StartPage : public QWidget {
  Q_OBJECT
 public:
  explicit StartPage(QWidget* parent = nullptr);
  // Reads the samples folder and the recent list (the setting "recent") again.
  void refresh();
  QListWidget* samples() const { return samples_; }
  QListWidget* recent() const { return recent_; }

 Q_SIGNALS:
  void open_requested(const QString& source);
  void open_dialog_requested();
  void template_requested();

 private:
  QListWidget* samples_;
  QListWidget* recent_;
};

}  // namespace ms::app
