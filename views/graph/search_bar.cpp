#include "views/graph/search_bar.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QToolButton>

#include "views/layout/graph_model.h"

namespace ms::views {

std::vector<int> find_nodes(const GraphModel& m, const QString& text, bool regex, QString* error) {
  std::vector<int> out;
  if (text.isEmpty()) return out;
  QRegularExpression re;
  if (regex) {
    re = QRegularExpression(text, QRegularExpression::CaseInsensitiveOption);
    if (!re.isValid()) {
      if (error) *error = re.errorString();
      return out;
    }
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const ModelNode& n = m.nodes[i];
    if (n.folded) continue;
    const QString name = QString::fromStdString(n.node->name);
    const QString op = QString::fromStdString(n.node->op_type);
    const bool hit = regex ? (re.match(name).hasMatch() || re.match(op).hasMatch())
                           : (name.contains(text, Qt::CaseInsensitive) || op.compare(text, Qt::CaseInsensitive) == 0 ||
                              op.startsWith(text, Qt::CaseInsensitive));
    if (hit) out.push_back(static_cast<int>(i));
  }
  return out;
}

SearchBar::SearchBar(QWidget* parent) : QWidget(parent) {
  setAutoFillBackground(true);
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(6, 4, 6, 4);
  row->setSpacing(4);
  edit_ = new QLineEdit(this);
  edit_->setPlaceholderText(tr("Find node by name or op type"));
  edit_->setClearButtonEnabled(true);
  edit_->setMinimumWidth(220);
  regex_ = new QToolButton(this);
  regex_->setText(QStringLiteral(".*"));
  regex_->setCheckable(true);
  regex_->setToolTip(tr("Regular expression"));
  auto* prev = new QToolButton(this);
  prev->setText(QStringLiteral("▲"));
  prev->setToolTip(tr("Previous match (Shift+Enter)"));
  auto* next = new QToolButton(this);
  next->setText(QStringLiteral("▼"));
  next->setToolTip(tr("Next match (Enter)"));
  count_ = new QLabel(this);
  count_->setMinimumWidth(70);
  auto* close = new QToolButton(this);
  close->setText(QStringLiteral("✕"));
  close->setToolTip(tr("Close (Esc)"));
  row->addWidget(edit_, 1);
  row->addWidget(regex_);
  row->addWidget(prev);
  row->addWidget(next);
  row->addWidget(count_);
  row->addWidget(close);
  connect(edit_, &QLineEdit::textChanged, this, &SearchBar::update_matches);
  connect(regex_, &QToolButton::toggled, this, &SearchBar::update_matches);
  connect(edit_, &QLineEdit::returnPressed, this, &SearchBar::next);
  connect(next, &QToolButton::clicked, this, &SearchBar::next);
  connect(prev, &QToolButton::clicked, this, &SearchBar::previous);
  connect(close, &QToolButton::clicked, this, [this] {
    hide();
    Q_EMIT closed();
  });
}

void SearchBar::set_model(const GraphModel* m) {
  model_ = m;
  update_matches();
}

void SearchBar::activate() {
  show();
  raise();
  edit_->setFocus();
  edit_->selectAll();
}

void SearchBar::update_matches() {
  QString error;
  matches_ = model_ ? find_nodes(*model_, edit_->text(), regex_->isChecked(), &error) : std::vector<int>{};
  current_ = -1;
  if (!error.isEmpty())
    count_->setText(tr("bad regex"));
  else if (edit_->text().isEmpty())
    count_->clear();
  else
    count_->setText(matches_.empty() ? tr("no match") : tr("%n match(es)", nullptr, static_cast<int>(matches_.size())));
  Q_EMIT matches_changed(matches_);
}

void SearchBar::step(int delta) {
  if (matches_.empty()) return;
  const int n = static_cast<int>(matches_.size());
  current_ = current_ < 0 ? (delta > 0 ? 0 : n - 1) : (current_ + delta + n) % n;
  count_->setText(tr("%1 of %2").arg(current_ + 1).arg(n));
  Q_EMIT go_to(matches_[static_cast<size_t>(current_)]);
}

void SearchBar::next() { step(+1); }
void SearchBar::previous() { step(-1); }

void SearchBar::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Escape) {
    hide();
    Q_EMIT closed();
    return;
  }
  if ((e->key() == Qt::Key_Return || e->key() == Qt::Key_Enter) && (e->modifiers() & Qt::ShiftModifier)) {
    previous();
    return;
  }
  QWidget::keyPressEvent(e);
}

}  // namespace ms::views
