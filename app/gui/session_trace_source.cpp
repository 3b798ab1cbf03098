#include "app/gui/session_trace_source.h"

namespace ms::app {

Expected<std::shared_ptr<SessionTraceSource>> SessionTraceSource::make(
    std::shared_ptr<const session::SessionReader> reader, int run) {
  auto s = std::shared_ptr<SessionTraceSource>(new SessionTraceSource);
  MS_ASSIGN_OR_RETURN(s->skeleton_, reader->trace_skeleton(run));
  if (!s->skeleton_)
    return invalid_model(reader->path() + ": run " + std::to_string(run) + " has no trace in the session");
  MS_ASSIGN_OR_RETURN(s->span_, reader->trace_span(run));
  MS_ASSIGN_OR_RETURN(s->events_, reader->event_count(run));
  MS_ASSIGN_OR_RETURN(s->depths_, reader->track_depths(run));
  if (reader->stores_op_type_totals()) {
    MS_ASSIGN_OR_RETURN(s->op_types_, reader->op_type_totals(run));
  } else {
    s->counting_ = std::async(std::launch::async, [reader, run] { return reader->op_type_totals(run); });
  }
  MS_ASSIGN_OR_RETURN(s->first_iterations_, reader->trace_first_iterations(run));
  s->reader_ = std::move(reader);
  s->run_ = run;
  return s;
}

std::optional<std::vector<std::pair<std::string, int64_t>>> SessionTraceSource::op_type_totals() const {
  if (op_types_ || !counting_.valid()) return op_types_;
  if (counting_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  auto totals = counting_.get();
  if (!totals) error_ = totals.status().message();
  op_types_ = totals ? std::move(*totals) : std::vector<std::pair<std::string, int64_t>>{};
  return op_types_;
}

int64_t SessionTraceSource::count(uint32_t track, int64_t t0, int64_t t1) const {
  auto n = reader_->count_in_window(run_, track, t0, t1);
  if (!n) {
    error_ = n.status().message();
    return 0;
  }
  return *n;
}

int SessionTraceSource::depth_count(uint32_t track) const { return track < depths_.size() ? depths_[track] : 0; }

std::vector<prof::Event> SessionTraceSource::events(uint32_t track, int64_t t0, int64_t t1,
                                                    std::vector<int32_t>& depths) const {
  auto e = reader_->events_in_window(run_, track, t0, t1, &depths);
  if (!e) {
    error_ = e.status().message();
    return {};
  }
  return std::move(*e);
}

std::vector<views::WindowSummaryBucket> SessionTraceSource::summary(uint32_t track, int64_t t0, int64_t t1,
                                                                    int buckets) const {
  auto b = reader_->window_summary(run_, track, t0, t1, buckets);
  if (!b) {
    error_ = b.status().message();
    return {};
  }
  std::vector<views::WindowSummaryBucket> out;
  out.reserve(b->size());
  for (const session::WindowBucket& k : *b) out.push_back({k.t0, k.t1, k.count, k.first, k.first_depth});
  return out;
}

views::RangeTotals SessionTraceSource::range_totals(int64_t t0, int64_t t1,
                                                    const std::function<bool()>& cancelled) const {
  auto totals = reader_->range_totals(run_, t0, t1, cancelled);
  if (!totals) return {{}, totals.status().message()};
  views::RangeTotals out;
  out.names.reserve(totals->size());
  for (const session::RangeNameTotal& n : *totals)
    out.names.push_back({static_cast<prof::StrId>(n.name), n.count, n.ns});
  return out;
}

}  // namespace ms::app
