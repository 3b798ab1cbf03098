// CPU kernel: TfIdfVectorizer over int32/int64 input, following onnx/reference/ops/op_tfidf_vectorizer.py:
// the pool's n-grams (of the lengths in [min_gram_length, max_gram_length]) go into a trie; each row is
// scanned for n-grams of every skip distance 1..max_skip_count+1 (unigrams once), counted per output
// column, then weighted by mode.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/text_internal.h"

namespace ms::cpu {
namespace {

using ops::text::TfIdfMode;
using ops::text::TfIdfSpec;

// Trie of the pool's n-grams; node 0 is the root. `id` is the 1-based n-gram number (0: no n-gram ends here).
struct NgramTrie {
  struct Node {
    int64_t id = 0;
    std::unordered_map<int64_t, int32_t> next;
  };
  std::vector<Node> nodes{1};

  int32_t child(int32_t parent, int64_t key) {
    auto it = nodes[static_cast<size_t>(parent)].next.find(key);
    if (it != nodes[static_cast<size_t>(parent)].next.end()) return it->second;
    const auto c = static_cast<int32_t>(nodes.size());
    nodes[static_cast<size_t>(parent)].next.emplace(key, c);
    nodes.emplace_back();
    return c;
  }
};

// populate_grams: n-gram ids run over the whole pool, levels outside the gram lengths only advance them.
NgramTrie build_trie(const TfIdfSpec& s) {
  NgramTrie trie;
  int64_t id = 1;
  const auto levels = s.ngram_counts.size();
  for (size_t i = 0; i < levels; ++i) {
    const auto size = static_cast<int64_t>(i + 1);
    const int64_t begin = s.ngram_counts[i];
    const int64_t end = i + 1 < levels ? s.ngram_counts[i + 1] : static_cast<int64_t>(s.pool.size());
    const int64_t ngrams = (end - begin) / size;
    if (size < s.min_gram || size > s.max_gram) {
      id += ngrams;
      continue;
    }
    for (int64_t g = 0; g < ngrams; ++g) {
      int32_t node = 0;
      for (int64_t k = 0; k < size; ++k) node = trie.child(node, s.pool[static_cast<size_t>(begin + g * size + k)]);
      trie.nodes[static_cast<size_t>(node)].id = id++;
    }
  }
  return trie;
}

// Counts the n-grams of one row x[0..c) into freq[0..columns) (compute_impl).
template <class T> void count_row(const TfIdfSpec& s, const NgramTrie& trie, const T* x, int64_t c, int64_t* freq) {
  if (trie.nodes[0].next.empty()) return;
  int64_t start_size = s.min_gram;
  // Skip distances >= C only reach n-grams of length >= 2 that do not fit in the row.
  const int64_t max_distance = std::min(s.max_skip + 1, std::max<int64_t>(c, 1));
  for (int64_t d = 1; d <= max_distance; ++d) {
    for (int64_t start = 0; start < c; ++start) {
      // start + d * (start_size - 1) >= c: no n-gram of any counted length fits any more.
      if (start_size - 1 > (c - 1 - start) / d) break;
      size_t node = 0;
      for (int64_t size = 1, item = start; size <= s.max_gram && item < c; ++size, item += d) {
        const auto& next = trie.nodes[node].next;
        if (next.empty()) break;
        const auto it = next.find(static_cast<int64_t>(x[item]));
        if (it == next.end()) break;
        node = static_cast<size_t>(it->second);
        const int64_t id = trie.nodes[node].id;
        if (size >= start_size && id != 0) ++freq[s.ngram_indexes[static_cast<size_t>(id - 1)]];
      }
    }
    // Unigrams are counted once: they do not depend on the skip distance.
    if (start_size == 1) {
      start_size = 2;
      if (start_size > s.max_gram) break;
    }
  }
}

// output_result: counts (TF), presence times weight (IDF) or count times weight (TFIDF).
void weigh(const TfIdfSpec& s, const std::vector<int64_t>& freq, float* y) {
  const auto cols = static_cast<size_t>(s.columns);
  const bool weighted = !s.weights.empty();
  for (size_t p = 0; p < freq.size(); ++p) {
    const auto f = static_cast<double>(freq[p]);
    const double w = weighted ? static_cast<double>(s.weights[p % cols]) : 1.0;
    double v = f;
    if (s.mode == TfIdfMode::IDF)
      v = freq[p] > 0 ? w : 0.0;
    else if (s.mode == TfIdfMode::TFIDF)
      v = w * f;
    y[p] = static_cast<float>(v);
  }
}

template <class T> void tfidf_rows(const TfIdfSpec& s, const Tensor& x, int64_t rows, int64_t c, float* y) {
  const NgramTrie trie = build_trie(s);
  std::vector<int64_t> freq(static_cast<size_t>(rows * s.columns), 0);
  const T* data = x.data<T>();
  for (int64_t r = 0; r < rows; ++r) count_row(s, trie, data + r * c, c, freq.data() + r * s.columns);
  weigh(s, freq, y);
}

Status tfidf_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::I32 && x.dtype() != DType::I64)
    return ctx.fail("input X must be int32 or int64 (string input is not supported), got " +
                    std::string(dtype_name(x.dtype())));
  TfIdfSpec s;
  std::string err;
  if (!ops::text::parse_tfidf(ctx.node(), s, err)) return ctx.fail(err);
  Shape out;
  if (!ops::text::tfidf_output_dims(x.shape(), s.columns, out, err)) return ctx.fail(err);
  const int64_t rows = x.shape().size() == 2 ? x.dim(0) : 1;
  const int64_t c = x.shape().back();
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, out));
  if (x.dtype() == DType::I32)
    tfidf_rows<int32_t>(s, x, rows, c, y->data<float>());
  else
    tfidf_rows<int64_t>(s, x, rows, c, y->data<float>());
  return Status::ok();
}

}  // namespace

void register_text_kernels(runtime::KernelRegistry& r) { r.add("TfIdfVectorizer", tfidf_kernel); }

}  // namespace ms::cpu
