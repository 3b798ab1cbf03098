// Attribute checks shared by the TfIdfVectorizer schema (ops/text.cpp) and its CPU kernel
// (backends/cpu/text.cpp), kept in one place so inference and execution can never disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops::text {

// Widest output row accepted (max(ngram_indexes) + 1).
constexpr int64_t kMaxTfIdfColumns = int64_t{1} << 28;

enum class TfIdfMode : uint8_t { TF, IDF, TFIDF };

struct TfIdfSpec {
  TfIdfMode mode = TfIdfMode::TF;
  int64_t min_gram = 1;
  int64_t max_gram = 1;
  int64_t max_skip = 0;
  std::vector<int64_t> ngram_counts;   // start of the n-grams of length i+1 in pool
  std::vector<int64_t> ngram_indexes;  // output column of the i-th n-gram
  std::vector<int64_t> pool;           // pool_int64s
  std::vector<float> weights;          // empty: all ones
  int64_t columns = 0;                 // max(ngram_indexes) + 1
};

// Reads and checks TfIdfVectorizer's attributes. Returns false with `err` set (naming the attribute).
bool parse_tfidf(const ir::Node& node, TfIdfSpec& s, std::string& err);

// Output dims for input dims [C] -> [columns], [N, C] -> [N, columns]. N of -1 = unknown.
// Returns false with `err` set for another rank (0-D included) or N == 0.
bool tfidf_output_dims(const std::vector<int64_t>& in, int64_t columns, std::vector<int64_t>& out, std::string& err);

}  // namespace ms::ops::text
