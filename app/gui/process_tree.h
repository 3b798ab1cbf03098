// Processes read from /proc (Linux): what a job started below the app, so cancelling it can leave
// none behind, and the cancel scenario can check that it did. Elsewhere every list is empty.
#pragma once

#include <QByteArray>
#include <QString>

#include <vector>

namespace ms::app {

// A process: its id and its start time (clock ticks since boot), which tells a reused id apart.
struct ProcessId {
  qint64 pid = 0;
  QByteArray start;
};

// Whether `p` still runs (a zombie, ended but not reaped, does not).
bool process_running(const ProcessId& p);
// Every running process below `pid`: its children, theirs, and so on.
std::vector<ProcessId> process_descendants(qint64 pid);
// The running processes whose command line (arguments joined by spaces) contains `needle`.
struct NamedProcess {
  ProcessId id;
  QString command;
};
std::vector<NamedProcess> processes_naming(const QString& needle);

}  // namespace ms::app
