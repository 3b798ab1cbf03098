#include "engine/runtime/value_capture.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "engine/core/narrow.h"
#include "engine/ops/blocked_layout.h"
#include "engine/runtime/backend.h"

namespace ms::runtime {

namespace {

bool has_numbers(DType t) { return is_numeric(t) || is_narrow(t) || t == DType::Bool; }

// A host copy of `t` (device values copied through the backend).
Expected<Tensor> host_copy(const Tensor& t, Backend* backend) {
  if (t.device().is_cpu()) {
    // Large values are copied by all threads (the copy, not the run, is then the capture's cost).
    Tensor c = Tensor::empty(t.dtype(), t.shape());
    const size_t bytes = t.nbytes(), chunk = size_t{1} << 20;
    const auto* src = static_cast<const char*>(t.raw());
    auto* dst = static_cast<char*>(c.raw());
    const int64_t chunks = static_cast<int64_t>((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t k = 0; k < chunks; ++k) {
      const size_t at = static_cast<size_t>(k) * chunk;
      std::memcpy(dst + at, src + at, std::min(chunk, bytes - at));
    }
    return c;
  }
  if (!backend) return internal_error("a device value without its backend");
  backend->synchronize();
  Tensor h = Tensor::empty(t.dtype(), t.shape());
  MS_RETURN_IF_ERROR(backend->copy_to_host(t, h));
  return h;
}

// nChw<block>c (the blocked layout Graph mode's convs leave between them: the node's layout_block,
// 8 or 16, channels padded to a multiple of it) back to nchw, from `b` wherever it is on the host:
// each channel's plane is read with a stride of `block` elements.
Tensor unblock_nchw(const Tensor& b, int64_t block) {
  Tensor out = Tensor::empty(b.dtype(), b.shape());
  const int64_t n = b.dim(0), c = b.dim(1), hw = b.dim(2) * b.dim(3), blocks = ops::padded_channels(c, block) / block;
  const size_t es = dtype_size(b.dtype());
  const auto* src = static_cast<const char*>(b.raw());
  auto* dst = static_cast<char*>(out.raw());
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (i * blocks + ch / block) * hw * block + ch % block;
      char* to = dst + static_cast<size_t>((i * c + ch) * hw) * es;
      if (es == 4) {
        const auto* f = reinterpret_cast<const uint32_t*>(src) + base;
        auto* t = reinterpret_cast<uint32_t*>(to);
        for (int64_t p = 0; p < hw; ++p) t[p] = f[p * block];
      } else {
        for (int64_t p = 0; p < hw; ++p)
          std::memcpy(to + static_cast<size_t>(p) * es, src + static_cast<size_t>(base + p * block) * es, es);
      }
    }
  return out;
}

// The block of a blocked result (channels-last: all its channels, so NHWC reorders as nChw<C>c).
int64_t capture_channel_block(const ir::Node& node, const Tensor& t) {
  return ops::blocked_output_block(node, 0, t.shape());
}

bool blocked_output(const ir::Node& node, size_t output, const Tensor& t) {
  return ops::blocked_output_block(node, output, t.shape()) > 0;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

}  // namespace

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  if (!t.defined() || !has_numbers(t.dtype())) return {};
  if (t.dtype() == DType::F32) {
    const float* p = t.data<float>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.at_double(static_cast<int64_t>(i));
  }
  return out;
}

namespace {

// Both passes of value_stats over elements read by `at` (float32 read directly), each split over
// the OpenMP threads.
template <class At> void fill_stats(ValueStats& s, int64_t n, At at, int bins) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t nan = 0, pinf = 0, ninf = 0;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) reduction(+ : sum, nan, pinf, ninf) \
    schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const double v = at(i);
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    } else if (std::isnan(v)) {
      ++nan;
    } else if (v > 0) {
      ++pinf;
    } else {
      ++ninf;
    }
  }
  s.nan = nan;
  s.posinf = pinf;
  s.neginf = ninf;
  s.finite = n - nan - pinf - ninf;
  if (s.finite == 0) return;
  s.min = lo;
  s.max = hi;
  s.mean = sum / static_cast<double>(s.finite);
  const int nb = std::max(1, bins);
  const double width = (hi - lo) / nb, mean = s.mean;
  std::vector<int64_t> hist(static_cast<size_t>(nb), 0);
  int64_t* h = hist.data();
  double sq = 0;
#pragma omp parallel for reduction(+ : sq) reduction(+ : h[:nb]) schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const double v = at(i);
    if (!std::isfinite(v)) continue;
    sq += (v - mean) * (v - mean);
    const int64_t b = width > 0 ? static_cast<int64_t>((v - lo) / width) : 0;
    h[std::min<int64_t>(b, nb - 1)]++;
  }
  s.histogram = std::move(hist);
  s.std = std::sqrt(sq / static_cast<double>(s.finite));
}

}  // namespace

ValueStats value_stats(const Tensor& t, int bins) {
  ValueStats s;
  if (!t.defined() || !has_numbers(t.dtype())) return s;
  s.count = t.numel();
  if (t.dtype() == DType::F32) {
    const float* p = t.data<float>();
    fill_stats(
        s, s.count, [p](int64_t i) { return static_cast<double>(p[i]); }, bins);
  } else {
    fill_stats(
        s, s.count, [&t](int64_t i) { return t.at_double(i); }, bins);
  }
  return s;
}

std::string ValueStats::to_string() const {
  if (count == 0) return "no numbers";
  std::string out =
      finite ? "min " + fmt(min) + " max " + fmt(max) + " mean " + fmt(mean) + " std " + fmt(std) : "no finite value";
  if (nan) out += ", " + std::to_string(nan) + " NaN";
  if (posinf) out += ", " + std::to_string(posinf) + " +inf";
  if (neginf) out += ", " + std::to_string(neginf) + " -inf";
  return out;
}

std::string NonFiniteTrap::message() const {
  std::string what;
  auto add = [&](int64_t k, const char* name) {
    if (k) what += (what.empty() ? "" : ", ") + std::to_string(k) + " " + name;
  };
  add(stats.nan, "NaN");
  add(stats.posinf, "+inf");
  add(stats.neginf, "-inf");
  std::string out = "non-finite value: '" + value + "' of node '" + node + "' (" + op + ") has " + what + " of " +
                    std::to_string(stats.count) + " elements";
  if (!inputs.empty()) {
    out += "; inputs:";
    for (size_t i = 0; i < inputs.size(); ++i)
      out += (i ? "; " : " ") + inputs[i].first + " " + inputs[i].second.to_string();
  }
  return out;
}

ValueCapture::ValueCapture(CaptureOptions options) : options_(std::move(options)) {
  if (!options_.pattern.empty()) {
    try {
      pattern_.emplace(options_.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      // check_capture_pattern() reports a bad pattern before a run; here it matches nothing.
    }
  }
}

Status check_capture_pattern(const std::string& pattern) {
  try {
    std::regex re(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return invalid_argument("capture pattern '" + pattern + "' is not a regular expression: " + e.what());
  }
  return Status::ok();
}

bool ValueCapture::selected(const ir::Node& node, const std::string& value) const {
  if (options_.all) return true;
  for (const auto& n : options_.names)
    if (n == value || n == node.name) return true;
  return pattern_ && (std::regex_search(value, *pattern_) || std::regex_search(node.name, *pattern_));
}

Status ValueCapture::on_step(const TappedStep& step) {
  const ir::Node& node = *step.node;
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    const Tensor* t = step.outputs[o];
    // Sequences, optionals and strings have no statistics to take: not captured.
    if (!t || !t->is_tensor() || t->dtype() == DType::String || o >= node.outputs.size() || node.outputs[o].empty())
      continue;
    const std::string& name = node.outputs[o];
    const bool chosen = selected(node, name);
    if (!chosen && !options_.trap_nonfinite) continue;
    bool keep = false;
    if (chosen && options_.keep_values) {
      std::lock_guard<std::mutex> lock(mu_);
      keep = options_.budget_bytes == 0 || kept_bytes_ + t->nbytes() <= options_.budget_bytes;
      if (keep)
        kept_bytes_ += t->nbytes();
      else
        ++over_budget_;
    }
    CapturedValue v;
    v.name = name;
    v.producer = node.id;
    v.node = node.label();
    v.op = node.op_type;
    v.output = static_cast<int>(o);
    v.dtype = t->dtype();
    v.shape = t->shape();
    const bool blocked = blocked_output(node, o, *t);
    if (keep) {
      if (blocked && t->device().is_cpu()) {
        v.value = unblock_nchw(*t, capture_channel_block(node, *t));
      } else {
        MS_ASSIGN_OR_RETURN(v.value, host_copy(*t, step.backend));
        if (blocked) v.value = unblock_nchw(v.value, capture_channel_block(node, *t));
      }
      v.reordered = blocked;
      v.stats = value_stats(v.value);
    } else if (t->device().is_cpu()) {
      // The statistics do not depend on the layout, but padded channels are not values.
      const bool padded = blocked && t->dim(1) % capture_channel_block(node, *t) != 0;
      v.stats = value_stats(padded ? unblock_nchw(*t, capture_channel_block(node, *t)) : *t);
    } else {
      MS_ASSIGN_OR_RETURN(Tensor h, host_copy(*t, step.backend));
      v.stats = value_stats(h);
    }
    const bool bad = options_.trap_nonfinite && !v.stats.all_finite();
    std::lock_guard<std::mutex> lock(mu_);
    if (bad && !trap_) {
      NonFiniteTrap trap;
      trap.value = v.name;
      trap.node = v.node;
      trap.op = v.op;
      trap.producer = v.producer;
      trap.origins = node.origins;
      trap.stats = v.stats;
      for (size_t i = 0; i < step.inputs.size() && i < node.inputs.size(); ++i) {
        if (!step.inputs[i]) continue;
        auto hi = host_copy(*step.inputs[i], step.backend);
        if (hi) trap.inputs.emplace_back(node.inputs[i], value_stats(*hi));
      }
      trap_ = std::move(trap);
    }
    if (chosen) {
      v.order = values_.size();
      values_.push_back(std::move(v));
    }
    if (bad) return invalid_argument(trap_->message()).with_node(node.id.value);
  }
  return Status::ok();
}

std::vector<CapturedValue> ValueCapture::take_values() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(values_);
}

const CapturedValue* ValueCapture::find(const std::string& value) const {
  for (const auto& v : values_)
    if (v.name == value) return &v;
  return nullptr;
}

void ValueCapture::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  values_.clear();
  kept_bytes_ = over_budget_ = 0;
  trap_.reset();
}

}  // namespace ms::runtime
