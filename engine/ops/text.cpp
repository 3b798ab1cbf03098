// Schemas: TfIdfVectorizer (opset 9; integer n-gram pools: pool_int64s with int32/int64 input).
#include <algorithm>

#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"
#include "engine/ops/text_internal.h"

namespace ms::ops {

namespace text {

using std::to_string;

namespace {

bool parse_mode(const ir::Node& node, TfIdfSpec& s, std::string& err) {
  if (!node.has_attr("mode")) {
    err = "attribute 'mode' is required (TF, IDF or TFIDF)";
    return false;
  }
  const std::string mode = node.attr_string("mode", "");
  if (mode == "TF") {
    s.mode = TfIdfMode::TF;
  } else if (mode == "IDF") {
    s.mode = TfIdfMode::IDF;
  } else if (mode == "TFIDF") {
    s.mode = TfIdfMode::TFIDF;
  } else {
    err = "attribute 'mode' must be TF, IDF or TFIDF, got '" + mode + "'";
    return false;
  }
  return true;
}

bool required_int(const ir::Node& node, const char* name, int64_t lo, int64_t& out, std::string& err) {
  if (!node.has_attr(name)) {
    err = std::string("attribute '") + name + "' is required";
    return false;
  }
  out = node.attr_int(name, lo);
  if (out < lo) {
    err = std::string("attribute '") + name + "' must be >= " + to_string(lo) + ", got " + to_string(out);
    return false;
  }
  return true;
}

bool parse_lengths(const ir::Node& node, TfIdfSpec& s, std::string& err) {
  if (!required_int(node, "min_gram_length", 1, s.min_gram, err) ||
      !required_int(node, "max_gram_length", 1, s.max_gram, err) ||
      !required_int(node, "max_skip_count", 0, s.max_skip, err))
    return false;
  if (s.max_gram < s.min_gram) {
    err = "attribute 'max_gram_length' (" + to_string(s.max_gram) + ") must be >= min_gram_length (" +
          to_string(s.min_gram) + ")";
    return false;
  }
  return true;
}

bool parse_pool(const ir::Node& node, TfIdfSpec& s, std::string& err) {
  if (node.has_attr("pool_strings")) {
    err = node.has_attr("pool_int64s") ? "only one of attributes 'pool_strings' and 'pool_int64s' may be set"
                                       : "attribute 'pool_strings' (string n-grams) is not supported; only "
                                         "'pool_int64s' with int32/int64 input is";
    return false;
  }
  if (!node.has_attr("pool_int64s")) {
    err = "attribute 'pool_int64s' is required";
    return false;
  }
  s.pool = node.attr_ints("pool_int64s");
  return true;
}

// ngram_counts: non-decreasing starts within the pool, each level a whole number of n-grams.
// Returns the number of n-grams in the pool, or -1 with `err` set.
int64_t count_ngrams(const TfIdfSpec& s, std::string& err) {
  const auto& c = s.ngram_counts;
  const auto pool = static_cast<int64_t>(s.pool.size());
  if (c.empty()) {
    err = "attribute 'ngram_counts' is required and must not be empty";
    return -1;
  }
  int64_t total = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t end = i + 1 < c.size() ? c[i + 1] : pool;
    const auto size = static_cast<int64_t>(i + 1);
    if (c[i] < 0 || c[i] > end || end > pool) {
      err = "attribute 'ngram_counts' must be non-decreasing starts within pool_int64s (" + to_string(pool) +
            " items), got [" + std::to_string(c[i]) + ", " + to_string(end) + ") for the " + to_string(size) + "-grams";
      return -1;
    }
    if ((end - c[i]) % size != 0) {
      err = "attribute 'ngram_counts': pool_int64s[" + to_string(c[i]) + ":" + to_string(end) + "] (" +
            to_string(end - c[i]) + " items) is not a whole number of " + to_string(size) + "-grams";
      return -1;
    }
    total += (end - c[i]) / size;
  }
  return total;
}

bool parse_indexes(const ir::Node& node, TfIdfSpec& s, std::string& err) {
  s.ngram_counts = node.attr_ints("ngram_counts");
  const int64_t total = count_ngrams(s, err);
  if (total < 0) return false;
  if (total == 0) {
    err = "attribute 'pool_int64s' holds no n-grams (ngram_counts splits it into empty levels)";
    return false;
  }
  s.ngram_indexes = node.attr_ints("ngram_indexes");
  if (static_cast<int64_t>(s.ngram_indexes.size()) != total) {
    err = "attribute 'ngram_indexes' must have one entry per n-gram in pool_int64s (" + to_string(total) + "), got " +
          to_string(s.ngram_indexes.size());
    return false;
  }
  for (int64_t v : s.ngram_indexes) {
    if (v < 0 || v >= kMaxTfIdfColumns) {
      err = "attribute 'ngram_indexes' holds " + to_string(v) + ", outside [0, 2^28)";
      return false;
    }
  }
  s.columns = *std::max_element(s.ngram_indexes.begin(), s.ngram_indexes.end()) + 1;
  return true;
}

bool parse_weights(const ir::Node& node, TfIdfSpec& s, std::string& err) {
  s.weights = node.attr_floats("weights");
  if (s.weights.empty()) return true;
  if (s.weights.size() != s.ngram_indexes.size()) {
    err = "attribute 'weights' must have one entry per n-gram (" + to_string(s.ngram_indexes.size()) + "), got " +
          to_string(s.weights.size());
    return false;
  }
  // The weights are applied per output column (as the ONNX reference does).
  if (s.mode != TfIdfMode::TF && static_cast<int64_t>(s.weights.size()) < s.columns) {
    err = "attribute 'weights' (" + to_string(s.weights.size()) + " entries) must cover every output column (" +
          to_string(s.columns) + " = max(ngram_indexes) + 1)";
    return false;
  }
  return true;
}

}  // namespace

bool parse_tfidf(const ir::Node& node, TfIdfSpec& s, std::string& err) {
  return parse_mode(node, s, err) && parse_lengths(node, s, err) && parse_pool(node, s, err) &&
         parse_indexes(node, s, err) && parse_weights(node, s, err);
}

bool tfidf_output_dims(const std::vector<int64_t>& in, int64_t columns, std::vector<int64_t>& out, std::string& err) {
  if (in.empty() || in.size() > 2) {
    err = "input X must be 1-D [C] or 2-D [N, C], got " + nn::dims_string(in);
    return false;
  }
  if (in.size() == 2 && in[0] == 0) {
    err = "input X of shape [N, C] must have N > 0, got " + nn::dims_string(in);
    return false;
  }
  out = in.size() == 2 ? std::vector<int64_t>{in[0], columns} : std::vector<int64_t>{columns};
  return true;
}

}  // namespace text

namespace {

Status infer_tfidf(InferContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (t == DType::String) return ctx.fail("input X of dtype string is not supported (only int32/int64 n-grams)");
  if (t != DType::I32 && t != DType::I64)
    return ctx.fail("input X must be int32 or int64, got " + std::string(dtype_name(t)));
  text::TfIdfSpec s;
  std::string err;
  if (!text::parse_tfidf(ctx.node, s, err)) return ctx.fail(err);
  const auto* dims = ctx.dims(0);
  if (dims == nullptr) {
    ctx.set_output_rank_unknown(0, DType::F32);
    return Status::ok();
  }
  std::vector<int64_t> out;
  if (!text::tfidf_output_dims(*dims, s.columns, out, err)) return ctx.fail(err);
  ctx.set_output(0, DType::F32, std::move(out));
  return Status::ok();
}

}  // namespace

void register_text_ops(Registry& r) {
  r.add(nn::make_schema("TfIdfVectorizer", 9, 1, 1, 1, 1, OpCategory::Other, infer_tfidf, nullptr));
}

}  // namespace ms::ops
