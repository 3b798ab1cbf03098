// What a session holds, said in one line, and the comparison of its runs made again where the file
// stored none (files before schema 3 stored the comparison's row without its report).
#include <string>
#include <vector>

#include "app/session/session_file.h"
#include "profiler/analysis/compare.h"
#include "profiler/analysis/report.h"

namespace ms::session {

namespace {

std::string counted(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string mode_name(const std::string& mode) { return mode == "graph" ? "Graph" : "PyNative"; }

// The runs the app compares: the last Graph run and the last other (PyNative) run; -1 when none.
std::pair<int, int> compared_runs(const SessionData& d) {
  int eager = -1, graph = -1;
  for (size_t i = 0; i < d.runs.size(); ++i) (d.runs[i].outcome.mode == "graph" ? graph : eager) = static_cast<int>(i);
  return {eager, graph};
}

}  // namespace

std::string describe_contents(const SessionData& d) {
  std::vector<std::string> parts;
  size_t traces = 0, kept = 0, snapshots = 0;
  std::string modes;
  for (const SessionRun& r : d.runs) {
    modes += (modes.empty() ? "" : ", ") + mode_name(r.outcome.mode);
    if (r.outcome.trace) ++traces;
    if (!r.outcome.trace && !r.trace_file.empty()) ++traces, ++kept;
    for (const PassOutcome& p : r.outcome.passes)
      if (p.graph) ++snapshots;
  }
  if (!d.runs.empty()) parts.push_back(counted(d.runs.size(), "run", "runs") + " (" + modes + ")");
  if (traces > 0)
    parts.push_back(counted(traces, "trace", "traces") +
                    (kept > 0 ? " (" + std::to_string(kept) + " kept in the file)" : std::string()));
  if (snapshots > 0) parts.push_back(counted(snapshots, "pass snapshot", "pass snapshots"));
  if (!d.ranks.empty()) parts.push_back(counted(d.ranks.size(), "rank trace", "rank traces"));
  if (!d.training.empty()) parts.push_back(counted(d.training.size(), "training curve", "training curves"));
  if (d.numerics) parts.push_back("the numerics");
  if (parts.empty()) return "nothing";
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

CompletedComparison complete_comparison(const SessionReader& reader, SessionData& d, int64_t max_events) {
  const auto [eager, graph] = compared_runs(d);
  if (eager < 0 || graph < 0) return {};
  SessionComparison* stored = nullptr;
  for (SessionComparison& c : d.comparisons)
    if (c.run_a == eager && c.run_b == graph) stored = &c;
  if (stored && !stored->report.empty()) return {};
  const SessionRun* runs[] = {&d.runs[static_cast<size_t>(eager)], &d.runs[static_cast<size_t>(graph)]};
  // Both traces loaded: the app compares them anew.
  if (runs[0]->outcome.trace && runs[1]->outcome.trace) return {};
  const std::string head = reader.path() + ": the session (schema " + std::to_string(reader.schema_version()) +
                           ") stores no comparison of its PyNative and Graph runs";
  int64_t events = 0;
  for (const SessionRun* r : runs) {
    if (r->outcome.trace) {
      events += static_cast<int64_t>(r->outcome.trace->events.size());
      continue;
    }
    if (r->trace_file.empty() || r->trace_file != reader.path())
      return {false, head + " and its " + mode_name(r->outcome.mode) + " run has no trace to compare them again"};
    auto n = reader.event_count(r->trace_run);
    if (!n) return {false, head + "; comparing them again failed: " + n.status().message()};
    events += *n;
  }
  if (events > max_events)
    return {false, head + "; their traces (" + std::to_string(events) + " events) are over the " +
                       std::to_string(max_events) +
                       " events compared again on opening, so the Compare tab stays empty"};
  prof::TracePtr traces[2];
  for (int i = 0; i < 2; ++i) {
    if (runs[i]->outcome.trace) {
      traces[i] = runs[i]->outcome.trace;
      continue;
    }
    auto t = reader.trace(runs[i]->trace_run);
    if (!t || !*t)
      return {false, head + "; comparing them again failed: " +
                         (t ? "the " + mode_name(runs[i]->outcome.mode) + " trace is missing" : t.status().message())};
    traces[i] = *t;
  }
  const std::string report = prof::to_json(prof::compare_runs(*traces[0], *traces[1])).dump();
  if (stored)
    stored->report = report;
  else
    d.comparisons.push_back({"pynative vs graph", eager, graph, report});
  return {true, head + ": compared them again from their traces"};
}

}  // namespace ms::session
