#include "app/gui/process_tree.h"

#include <QDir>
#include <QFile>
#include <QList>

namespace ms::app {

namespace {

// /proc/PID/stat's fields after the command name (which may hold spaces): the state first, the
// start time 20th. Empty when there is no such process.
QList<QByteArray> stat_fields(qint64 pid) {
  QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray stat = f.readAll();
  const qsizetype close = stat.lastIndexOf(')');
  return close < 0 ? QList<QByteArray>{} : stat.mid(close + 2).split(' ');
}

// The process `pid` as running now; pid 0 when it is not (gone, or a zombie).
ProcessId running_process(qint64 pid) {
  const QList<QByteArray> f = stat_fields(pid);
  if (f.size() < 20 || f[0] == "Z" || f[0] == "X") return {};
  return {pid, f[19]};
}

QList<qint64> numbers_in(const QByteArray& text) {
  QList<qint64> out;
  for (const QByteArray& w : text.simplified().split(' ')) {
    bool ok = false;
    const qint64 n = w.toLongLong(&ok);
    if (ok) out << n;
  }
  return out;
}

}  // namespace

bool process_running(const ProcessId& p) {
  const ProcessId now = running_process(p.pid);
  return now.pid != 0 && now.start == p.start;
}

std::vector<ProcessId> process_descendants(qint64 pid) {
  std::vector<ProcessId> out;
  QList<qint64> todo{pid};
  while (!todo.isEmpty()) {
    const qint64 parent = todo.takeFirst();
    // Each thread's children file lists the children that thread made.
    const QString tasks = QStringLiteral("/proc/%1/task").arg(parent);
    for (const QString& tid : QDir(tasks).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
      QFile f(tasks + QLatin1Char('/') + tid + QStringLiteral("/children"));
      if (!f.open(QIODevice::ReadOnly)) continue;
      for (qint64 child : numbers_in(f.readAll()))
        if (const ProcessId p = running_process(child); p.pid != 0) {
          out.push_back(p);
          todo << child;
        }
    }
  }
  return out;
}

std::vector<NamedProcess> processes_naming(const QString& needle) {
  std::vector<NamedProcess> out;
  for (const QString& name : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool number = false;
    const qint64 pid = name.toLongLong(&number);
    if (!number) continue;
    QFile f(QStringLiteral("/proc/%1/cmdline").arg(pid));
    if (!f.open(QIODevice::ReadOnly)) continue;
    const QString command = QString::fromLocal8Bit(f.readAll().replace('\0', ' ')).trimmed();
    if (!command.contains(needle)) continue;
    if (const ProcessId p = running_process(pid); p.pid != 0) out.push_back({p, command});
  }
  return out;
}

}  // namespace ms::app
