// A trace kept in a session file, read by the timeline window by window (views/timeline/
// timeline_source.h over SessionReader's queries): opening a session with a trace of millions of
// events reads none of them; each visible window costs a few index look-ups per track.
#pragma once

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session/session_file.h"
#include "views/timeline/timeline_source.h"

namespace ms::app {

class SessionTraceSource : public views::TimelineWindowSource {
 public:
  // The reader is shared by the sources of one file's runs. Errors name the file.
  static Expected<std::shared_ptr<SessionTraceSource>> make(std::shared_ptr<const session::SessionReader> reader,
                                                            int run);
  prof::TracePtr skeleton() const override { return skeleton_; }
  std::pair<int64_t, int64_t> span() const override { return span_; }
  int64_t event_count() const override { return events_; }
  int64_t count(uint32_t track, int64_t t0, int64_t t1) const override;
  std::vector<prof::Event> events(uint32_t track, int64_t t0, int64_t t1, std::vector<int32_t>& depths) const override;
  int depth_count(uint32_t track) const override;
  std::vector<views::WindowSummaryBucket> summary(uint32_t track, int64_t t0, int64_t t1, int buckets) const override;
  // Stored in the file: read by make. A file of schema 7: counted from its events on a thread of its
  // own (seconds for millions), so the first frame does not wait for them.
  std::optional<std::vector<std::pair<std::string, int64_t>>> op_type_totals() const override;
  // SessionReader::range_totals: an aggregate over the range's stored events (or the file's totals
  // when it covers the whole trace) on a connection of its own.
  views::RangeTotals range_totals(int64_t t0, int64_t t1, const std::function<bool()>& cancelled) const override;
  std::string error() const override { return error_; }
  // The skeleton with the op events of the first iterations (SessionReader::trace_first_iterations):
  // all the memory views read of the trace.
  prof::TracePtr first_iterations() const { return first_iterations_; }

 private:
  std::shared_ptr<const session::SessionReader> reader_;
  int run_ = 0;
  prof::TracePtr skeleton_, first_iterations_;
  std::vector<int> depths_;
  mutable std::optional<std::vector<std::pair<std::string, int64_t>>> op_types_;
  // Waited for by the destructor (at most the count's seconds).
  mutable std::future<Expected<std::vector<std::pair<std::string, int64_t>>>> counting_;
  std::pair<int64_t, int64_t> span_{0, 0};
  int64_t events_ = 0;
  mutable std::string error_;
};

}  // namespace ms::app
