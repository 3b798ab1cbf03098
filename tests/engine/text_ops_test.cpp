// TfIdfVectorizer: counts and weights per mode against values from onnx.reference (op_tfidf_vectorizer.py),
// skip-grams of length 3 with permuted ngram_indexes, inferred shapes, and the attribute errors.
#include <gtest/gtest.h>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
using Doubles = std::vector<double>;
using Ints = std::vector<int64_t>;

// 4 unigrams (2, 3, 5, 4) and 3 bigrams (5 6, 7 8, 6 7); uni- and bigrams, up to 5 skips.
Attrs base_attrs(const std::string& mode) {
  return {{"mode", mode},
          {"min_gram_length", int64_t{1}},
          {"max_gram_length", int64_t{2}},
          {"max_skip_count", int64_t{5}},
          {"ngram_counts", Ints{0, 4}},
          {"ngram_indexes", Ints{0, 1, 2, 3, 4, 5, 6}},
          {"pool_int64s", Ints{2, 3, 5, 4, 5, 6, 7, 8, 6, 7}}};
}

const std::vector<float> kWeights{0.5f, 1.f, 1.5f, 2.f, 2.5f, 3.f, 3.5f};

Tensor row_input() { return Tensor::from_vector<int32_t>({1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8}, {12}); }
Tensor batch_input() { return Tensor::from_vector<int64_t>({1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8}, {2, 6}); }

Tensor run(const Tensor& x, Attrs attrs) {
  const ir::Node node = test::make_node("TfIdfVectorizer", 1, 1, std::move(attrs));
  auto r = test::run_kernel(node, {x}, 9);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r && !r->empty() ? (*r)[0] : Tensor();
}

std::string error_of(const Tensor& x, Attrs attrs) {
  const ir::Node node = test::make_node("TfIdfVectorizer", 1, 1, std::move(attrs));
  auto r = test::run_kernel(node, {x}, 9);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

void expect_values(const Tensor& y, const Shape& shape, const Doubles& want) {
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_EQ(y.shape(), shape);
  EXPECT_EQ(test::values_of(y), want);
}

void expect_error(const Tensor& x, Attrs attrs, const std::string& needle) {
  const std::string e = error_of(x, std::move(attrs));
  EXPECT_NE(e.find(needle), std::string::npos) << e;
}

TEST(TfIdfVectorizerOp, TermFrequencyCountsSkipGrams) {
  expect_values(run(row_input(), base_attrs("TF")), {7}, {0, 3, 1, 0, 1, 3, 1});
}

TEST(TfIdfVectorizerOp, InverseDocumentFrequency) {
  expect_values(run(row_input(), base_attrs("IDF")), {7}, {0, 1, 1, 0, 1, 1, 1});
  Attrs a = base_attrs("IDF");
  a["weights"] = kWeights;
  expect_values(run(batch_input(), a), {2, 7}, {0, 1, 0, 0, 0, 0, 0, 0, 0, 1.5, 0, 2.5, 3, 3.5});
}

TEST(TfIdfVectorizerOp, TermFrequencyTimesWeights) {
  Attrs a = base_attrs("TFIDF");
  a["weights"] = kWeights;
  expect_values(run(row_input(), a), {7}, {0, 3, 1.5, 0, 2.5, 9, 3.5});
  expect_values(run(batch_input(), base_attrs("TFIDF")), {2, 7}, {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1});
}

TEST(TfIdfVectorizerOp, TrigramsWithSkipsAndPermutedIndexes) {
  // Unigrams 1, 2 (outside the gram lengths), bigrams (1 3), (3 4), trigrams (1 3 4), (9 9 9).
  Attrs a{{"mode", std::string("TF")},
          {"min_gram_length", int64_t{2}},
          {"max_gram_length", int64_t{3}},
          {"max_skip_count", int64_t{1}},
          {"ngram_counts", Ints{0, 2, 6}},
          {"ngram_indexes", Ints{4, 3, 2, 1, 0, 5}},
          {"pool_int64s", Ints{1, 2, 1, 3, 3, 4, 1, 3, 4, 9, 9, 9}}};
  const Tensor x = Tensor::from_vector<int64_t>({1, 2, 3, 4, 1, 3, 4, 1, 2, 3, 4}, {11});
  expect_values(run(x, a), {6}, {1, 3, 3, 0, 0, 0});
  a["max_skip_count"] = int64_t{0};
  expect_values(run(x, a), {6}, {1, 3, 1, 0, 0, 0});
  // An empty row yields zeros.
  expect_values(run(Tensor::from_vector<int64_t>({}, {0}), a), {6}, {0, 0, 0, 0, 0, 0});
}

TEST(TfIdfVectorizerOp, InfersShapeFromStaticTypes) {
  const ir::Node node = test::make_node("TfIdfVectorizer", 1, 1, base_attrs("TF"));
  ir::ValueType in;
  in.dtype = DType::I64;
  in.dims = std::vector<int64_t>{-1, 6};
  in.dim_params = {"", ""};
  auto t = test::infer_types(node, std::vector<ir::ValueType>{in}, 9);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ((*t)[0].dtype, DType::F32);
  EXPECT_EQ((*t)[0].dims, (std::vector<int64_t>{-1, 7}));
}

TEST(TfIdfVectorizerOp, AttributeErrorsNameTheAttribute) {
  const Tensor x = row_input();
  expect_error(x, base_attrs("BM25"), "'mode'");
  Attrs a = base_attrs("TF");
  a["min_gram_length"] = int64_t{3};
  expect_error(x, a, "max_gram_length");
  a = base_attrs("TF");
  a["max_skip_count"] = int64_t{-1};
  expect_error(x, a, "max_skip_count");
  a = base_attrs("TF");
  a["ngram_counts"] = Ints{0, 3};  // 7 items left: not whole bigrams
  expect_error(x, a, "ngram_counts");
  a = base_attrs("TF");
  a["ngram_counts"] = Ints{0, 11};
  expect_error(x, a, "ngram_counts");
  a = base_attrs("TF");
  a["ngram_indexes"] = Ints{0, 1, 2};
  expect_error(x, a, "ngram_indexes");
  a = base_attrs("TF");
  a["ngram_indexes"] = Ints{0, 1, 2, 3, 4, 5, -6};
  expect_error(x, a, "ngram_indexes");
  a = base_attrs("TFIDF");
  a["weights"] = std::vector<float>{1.f, 2.f};
  expect_error(x, a, "weights");
  a = base_attrs("TF");
  a.erase("pool_int64s");
  expect_error(x, a, "pool_int64s");
  a["pool_strings"] = std::vector<std::string>{"a", "b"};
  expect_error(x, a, "pool_strings");
}

TEST(TfIdfVectorizerOp, InputErrors) {
  expect_error(Tensor::zeros(DType::I64, {1, 2, 3}), base_attrs("TF"), "1-D [C] or 2-D [N, C]");
  expect_error(Tensor::zeros(DType::I64, {0, 3}), base_attrs("TF"), "N > 0");
  expect_error(Tensor::scalar<int64_t>(5), base_attrs("TF"), "1-D [C] or 2-D [N, C]");
  expect_error(Tensor::zeros(DType::F32, {4}), base_attrs("TF"), "int32 or int64");
}

}  // namespace
}  // namespace ms
