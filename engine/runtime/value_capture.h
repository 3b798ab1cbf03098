// Capture of intermediate values in either mode (a ValueTap): which values to keep (all, by value or
// node name, by pattern), a memory budget for the copies (beyond it only statistics are kept), the
// statistics of every value seen, and the NaN/inf trap that stops a run at the first non-finite
// value and names the node that made it. Copies are host tensors in the plain layout: a value a
// Graph-mode conv left in oneDNN's blocked layout (nChw8c or nChw16c) is reordered as it is copied.
#pragma once

#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "engine/runtime/value_tap.h"

namespace ms::runtime {

// Statistics of a tensor's elements (numeric and narrow types; others have count 0). min, max,
// mean and std are over the finite elements; the histogram spans [min, max] in equal bins.
struct ValueStats {
  int64_t count = 0, finite = 0, nan = 0, posinf = 0, neginf = 0;
  double min = 0, max = 0, mean = 0, std = 0;
  std::vector<int64_t> histogram;
  bool all_finite() const { return nan == 0 && posinf == 0 && neginf == 0; }
  std::string to_string() const;  // "min -1.2 max 3.4 mean 0.1 std 0.9" (+ ", 3 NaN, 1 +inf")
};
ValueStats value_stats(const Tensor& host, int bins = 32);

// Elements as doubles, for comparison and export (narrow, half and integer types widened).
std::vector<double> to_doubles(const Tensor& host);

struct CaptureOptions {
  bool all = true;                 // every value; else only `names` and `pattern`
  std::vector<std::string> names;  // value names, or node names (all of a node's outputs)
  std::string pattern;             // ECMAScript regex matched against value and node names
  size_t budget_bytes = 0;         // copies kept at most (0: no limit); beyond, statistics only
  bool keep_values = true;         // false: statistics only
  bool trap_nonfinite = false;     // stop the run at the first value with a NaN or an infinity
};

struct CapturedValue {
  std::string name;  // the value
  ir::NodeId producer;
  std::string node, op;  // the producer's label and op type
  int output = 0;        // which output of the producer
  size_t order = 0;      // when it was produced (0 first)
  DType dtype = DType::Undefined;
  Shape shape;
  ValueStats stats;
  Tensor value;            // host copy in the plain layout; undefined past the budget or without keep_values
  bool reordered = false;  // copied out of the blocked layout (nChw8c or nChw16c)
};

// Where the trap fired: the value, its node, and the statistics of the node's inputs.
struct NonFiniteTrap {
  std::string value, node, op;
  ir::NodeId producer;
  std::vector<ir::NodeId> origins;  // the original nodes the producer stands for (a fused node's)
  ValueStats stats;
  std::vector<std::pair<std::string, ValueStats>> inputs;
  std::string message() const;  // one line: "'y' of node 'log' (Log) has 2 NaN; inputs: x min ..."
};

// An error naming the pattern when it is not a valid regular expression (a capture with a bad
// pattern matches nothing).
Status check_capture_pattern(const std::string& pattern);

class ValueCapture final : public ValueTap {
 public:
  explicit ValueCapture(CaptureOptions options = {});
  Status on_step(const TappedStep& step) override;

  const std::vector<CapturedValue>& values() const { return values_; }
  std::vector<CapturedValue> take_values();
  const CapturedValue* find(const std::string& value) const;
  size_t kept_bytes() const { return kept_bytes_; }
  size_t over_budget() const { return over_budget_; }  // values seen past the budget (statistics only)
  const std::optional<NonFiniteTrap>& trap() const { return trap_; }
  void clear();  // forget what an earlier run captured

 private:
  bool selected(const ir::Node& node, const std::string& value) const;

  CaptureOptions options_;
  std::optional<std::regex> pattern_;
  std::mutex mu_;
  std::vector<CapturedValue> values_;
  size_t kept_bytes_ = 0, over_budget_ = 0;
  std::optional<NonFiniteTrap> trap_;
};

}  // namespace ms::runtime
