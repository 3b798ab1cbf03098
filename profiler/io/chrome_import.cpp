// Chrome trace JSON -> Trace, streaming. The SAX handler below walks the document, builds a small DOM
// for one element of "traceEvents" at a time (and for the "modescope" section), and hands it to the
// EventReader (chrome_import_events.cpp), which validates and converts it.
#include <fstream>
#include <sstream>

#include "profiler/io/chrome_import_internal.h"

namespace ms::prof {

namespace {

using json = nlohmann::json;

class Sax final : public nlohmann::json_sax<json> {
 public:
  Sax(EventReader& r, const ImportOptions& o) : reader_(r), options_(o) {}

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool string(string_t& v) override {
    if (v.size() > options_.max_string_bytes) {
      error_ = where() + ": a string of " + std::to_string(v.size()) + " bytes" +
               (key_.empty() ? std::string() : " in '" + key_ + "'") + " (limit " +
               std::to_string(options_.max_string_bytes) + ")";
      return false;
    }
    return value(json(std::move(v)));
  }
  bool binary(binary_t&) override { return value(json()); }

  bool start_object(std::size_t) override {
    if (capturing()) return open(json::object());
    if (depth_ == 0) {
      root_object_ = true;
    } else if (in_events_ && depth_ == events_depth_) {
      begin_capture(Capture::Event);
      return open(json::object());
    } else if (root_object_ && depth_ == 1 && top_key_ == "modescope") {
      begin_capture(Capture::Modescope);
      return open(json::object());
    }
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (capturing()) {
      key_ = k;
      return true;
    }
    if (depth_ == 1 && root_object_) top_key_ = k;
    return true;
  }
  bool end_object() override {
    if (capturing()) return close();
    if (--depth_ == 0) root_closed_ = true;
    return true;
  }
  bool start_array(std::size_t) override {
    if (capturing()) return open(json::array());
    if (in_events_ && depth_ == events_depth_) return not_an_object("array");
    if (depth_ == 0 || (root_object_ && depth_ == 1 && top_key_ == "traceEvents")) {
      in_events_ = true;
      saw_events_ = true;
      events_depth_ = depth_ + 1;
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    if (capturing()) return close();
    if (--depth_ == 0) root_closed_ = true;
    if (in_events_ && depth_ + 1 == events_depth_) {
      in_events_ = false;
      events_done_ = true;
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    parse_failed_ = true;
    error_position_ = position;
    parse_message_ = ex.what();
    return false;
  }

  const std::string& error() const { return error_; }
  bool parse_failed() const { return parse_failed_; }
  bool root_closed() const { return root_closed_; }
  bool in_events() const { return in_events_; }
  bool saw_events() const { return saw_events_; }
  bool events_done() const { return events_done_; }
  size_t position() const { return error_position_; }
  const std::string& parse_message() const { return parse_message_; }

 private:
  enum class Capture { None, Event, Modescope };
  bool capturing() const { return capture_ != Capture::None; }
  std::string where() const {
    if (capture_ == Capture::Modescope) return "modescope section";
    if (in_events_) return "traceEvents[" + std::to_string(reader_.index()) + "]";
    return "top level";
  }
  bool not_an_object(const char* what) {
    error_ = "traceEvents[" + std::to_string(reader_.index()) + "]: an event must be an object, got " + what;
    return false;
  }
  void begin_capture(Capture c) {
    capture_ = c;
    doc_ = json();
    stack_.clear();
    key_.clear();
  }
  bool value(json v) {
    if (!capturing()) {
      if (in_events_ && depth_ == events_depth_) return not_an_object(v.type_name());
      return true;
    }
    json* top = stack_.back();
    if (top->is_object())
      (*top)[key_] = std::move(v);
    else
      top->push_back(std::move(v));
    return true;
  }
  bool open(json container) {
    if (stack_.empty()) {
      doc_ = std::move(container);
      stack_.push_back(&doc_);
      return true;
    }
    json* top = stack_.back();
    json* child;
    if (top->is_object()) {
      (*top)[key_] = std::move(container);
      child = &(*top)[key_];
    } else {
      top->push_back(std::move(container));
      child = &top->back();
    }
    stack_.push_back(child);
    return true;
  }
  bool close() {
    stack_.pop_back();
    if (!stack_.empty()) return true;
    const Capture c = capture_;
    capture_ = Capture::None;
    Status st = c == Capture::Event ? reader_.event(doc_) : reader_.modescope(doc_);
    doc_ = json();
    if (!st.is_ok()) {
      error_ = st.message();
      return false;
    }
    return true;
  }

  EventReader& reader_;
  const ImportOptions& options_;
  int depth_ = 0;
  bool root_object_ = false;
  std::string top_key_;
  bool in_events_ = false, saw_events_ = false, events_done_ = false;
  int events_depth_ = -1;
  Capture capture_ = Capture::None;
  json doc_;
  std::vector<json*> stack_;
  std::string key_;
  std::string error_;
  bool parse_failed_ = false, root_closed_ = false;
  size_t error_position_ = 0;
  std::string parse_message_;
};

}  // namespace

Expected<ImportResult> import_chrome_trace(std::istream& in, const ImportOptions& options) {
  EventReader reader(options);
  Sax sax(reader, options);
  const bool ok = json::sax_parse(in, &sax, nlohmann::json::input_format_t::json, true);
  ImportResult result;
  if (!sax.error().empty()) return invalid_model("bad trace: " + sax.error());
  if (!ok || sax.parse_failed()) {
    // The input ran out (rather than holding something that is not JSON): a file cut off inside
    // the event array keeps its whole events.
    const bool end_of_input = in.peek() == std::char_traits<char>::eof() && !sax.root_closed();
    if (end_of_input && (sax.in_events() || sax.events_done()) && reader.index() > 0) {
      result.truncated = true;
      result.warnings.push_back("truncated: the file ends at byte " + std::to_string(sax.position()) +
                                (sax.in_events() ? " inside traceEvents" : " after traceEvents") + "; loaded the " +
                                std::to_string(reader.index()) + " whole events before it");
    } else if (end_of_input) {
      return invalid_model("bad trace: truncated at byte " + std::to_string(sax.position()) +
                           (sax.saw_events() ? " before any whole event" : " before the traceEvents array"));
    } else {
      return invalid_model("bad trace: not valid JSON at byte " + std::to_string(sax.position()) + ": " +
                           sax.parse_message());
    }
  } else if (!sax.saw_events()) {
    return invalid_model(
        "bad trace: no traceEvents array (expected a JSON array of events or an object with "
        "\"traceEvents\")");
  }
  auto trace = reader.finish(result.warnings);
  if (!trace) return std::move(trace).take_status();
  result.trace = std::move(*trace);
  return result;
}

Expected<ImportResult> import_chrome_trace_file(const std::string& path, const ImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error("cannot open '" + path + "'");
  auto r = import_chrome_trace(f, options);
  if (!r) return Status::error(r.status().code(), path + ": " + r.status().message());
  return r;
}

Expected<ImportResult> import_chrome_trace_string(const std::string& text, const ImportOptions& options) {
  std::istringstream s(text);
  return import_chrome_trace(s, options);
}

}  // namespace ms::prof
