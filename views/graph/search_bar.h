// Ctrl+F: find nodes by name or op type (substring, or a regular expression); next/previous walk the
// matches in graph order, expanding the groups that hide them.
#pragma once

#include <QWidget>

#include <vector>

class QLineEdit;
class QLabel;
class QToolButton;

namespace ms::views {

struct GraphModel;

// Node indices whose name or op type matches (case-insensitive); `regex` treats the text as one.
std::vector<int> find_nodes(const GraphModel& m, const QString& text, bool regex, QString* error = nullptr);

class SearchBar : public QWidget {
  Q_OBJECT
 public:
  explicit SearchBar(QWidget* parent = nullptr);
  void set_model(const GraphModel* m);
  void activate();
  const std::vector<int>& matches() const { return matches_; }
  int current() const { return current_; }
  QLineEdit* line_edit() const { return edit_; }

 public Q_SLOTS:
  void next();
  void previous();

 Q_SIGNALS:
  void matches_changed(const std::vector<int>& nodes);
  void go_to(int node);
  void closed();

 protected:
  void keyPressEvent(QKeyEvent* e) override;

 private:
  void update_matches();
  void step(int delta);

  const GraphModel* model_ = nullptr;
  QLineEdit* edit_;
  QToolButton* regex_;
  QLabel* count_;
  std::vector<int> matches_;
  int current_ = -1;
};

}  // namespace ms::views
