// Training data: the committed digits files, the seeded split, the loader's batching and
// shuffling, synthetic data, and one-line errors for missing or malformed files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/frontend/npy.h"
#include "engine/frontend/train/data.h"
#include "tests/temp_dir.h"

namespace ms::nn::train {
namespace {

const std::string kDataDir = std::string(MODESCOPE_SOURCE_DIR) + "/samples/data";

TEST(TrainData, DigitsLoadNormalizedWithAllClasses) {
  auto ds = load_digits(kDataDir);
  ASSERT_TRUE(ds) << ds.status().message();
  EXPECT_EQ(ds->size(), 1797);
  EXPECT_EQ(ds->num_classes, 10);
  EXPECT_EQ(ds->x.shape(), (Shape{1797, 1, 8, 8}));
  EXPECT_EQ(ds->x.dtype(), DType::F32);
  EXPECT_EQ(ds->example_shape(), (Shape{1, 8, 8}));
  float lo = 1e9f, hi = -1e9f;
  for (float v : ds->x.span<float>()) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);  // 16 / 16
  std::vector<int> counts(10);
  for (int64_t y : ds->y.span<int64_t>()) ++counts[static_cast<size_t>(y)];
  for (int c : counts) EXPECT_GT(c, 170);
  // sklearn's first image is a 0 whose top row is [0, 0, 5, 13, 9, 1, 0, 0].
  EXPECT_EQ(ds->y.data<int64_t>()[0], 0);
  EXPECT_FLOAT_EQ(ds->x.data<float>()[3], 13.0f / 16.0f);
  auto raw = load_digits(kDataDir, /*normalize=*/false);
  ASSERT_TRUE(raw);
  EXPECT_FLOAT_EQ(raw->x.data<float>()[3], 13.0f);
}

TEST(TrainData, MissingAndMalformedFilesNameTheFile) {
  const ms::testing::TempDir tmp("train_data");
  const std::filesystem::path dir = tmp.path;
  auto missing = load_digits(dir.string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("digits_images.npy"), std::string::npos) << missing.status().message();
  EXPECT_EQ(missing.status().message().find('\n'), std::string::npos);
  // Wrong dtype for the images, then garbage.
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::F32, {4, 8, 8}), (dir / "digits_images.npy").string()).is_ok());
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::I64, {4}), (dir / "digits_labels.npy").string()).is_ok());
  auto wrong = load_digits(dir.string());
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.status().message().find("digits_images.npy"), std::string::npos) << wrong.status().message();
  std::ofstream((dir / "digits_images.npy").string()) << "not a numpy file";
  auto garbage = load_digits(dir.string());
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.status().message().find("digits_images.npy"), std::string::npos) << garbage.status().message();
  // Labels out of range.
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::U8, {4, 8, 8}), (dir / "digits_images.npy").string()).is_ok());
  ASSERT_TRUE(save_npy(Tensor::from_vector<int64_t>({0, 1, 2, 12}, {4}), (dir / "digits_labels.npy").string()).is_ok());
  auto labels = load_digits(dir.string());
  ASSERT_FALSE(labels);
  EXPECT_NE(labels.status().message().find("digits_labels.npy"), std::string::npos) << labels.status().message();
}

TEST(TrainData, SplitIsSeededAndDisjoint) {
  auto ds = load_digits(kDataDir);
  ASSERT_TRUE(ds);
  auto a = split(*ds, 360, 7), b = split(*ds, 360, 7), c = split(*ds, 360, 8);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->train.size(), 1437);
  EXPECT_EQ(a->test.size(), 360);
  EXPECT_EQ(0, std::memcmp(a->test.x.raw(), b->test.x.raw(), a->test.x.nbytes()));
  EXPECT_NE(0, std::memcmp(a->test.x.raw(), c->test.x.raw(), a->test.x.nbytes()));
  // The permutation behind it covers every example once.
  auto p = permutation(1797, 7);
  EXPECT_EQ(std::set<int64_t>(p.begin(), p.end()).size(), 1797u);
  EXPECT_FALSE(split(*ds, 0, 1));
  EXPECT_FALSE(split(*ds, 1797, 1));
}

TEST(TrainData, LoaderBatchesShufflesPerEpochAndWraps) {
  Dataset ds{"count", Tensor::empty(DType::F32, {10, 2}), Tensor::empty(DType::I64, {10}), 10};
  for (int64_t i = 0; i < 10; ++i) {
    ds.x.data<float>()[2 * i] = static_cast<float>(i);
    ds.x.data<float>()[2 * i + 1] = static_cast<float>(-i);
    ds.y.data<int64_t>()[i] = i;
  }
  DataLoader loader(ds, 4, /*shuffle=*/true, 3);
  ASSERT_TRUE(loader.check().is_ok());
  EXPECT_EQ(loader.batches_per_epoch(), 2);  // the last 2 examples are dropped
  std::vector<std::vector<int64_t>> epochs(2);
  for (int e = 0; e < 2; ++e)
    for (int b = 0; b < 2; ++b) {
      Batch batch = loader.next();
      ASSERT_EQ(batch.x.shape(), (Shape{4, 2}));
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t y = batch.y.data<int64_t>()[i];
        EXPECT_EQ(batch.x.data<float>()[2 * i], static_cast<float>(y));  // rows stay paired with labels
        epochs[static_cast<size_t>(e)].push_back(y);
      }
    }
  EXPECT_EQ(loader.epoch(), 2);
  EXPECT_EQ(std::set<int64_t>(epochs[0].begin(), epochs[0].end()).size(), 8u);
  EXPECT_NE(epochs[0], epochs[1]);  // reshuffled
  // Same seed, same order.
  DataLoader again(ds, 4, true, 3);
  std::vector<int64_t> first;
  for (int b = 0; b < 2; ++b) {
    const Batch batch = again.next();
    for (int64_t y : batch.y.span<int64_t>()) first.push_back(y);
  }
  EXPECT_EQ(first, epochs[0]);
  // Unshuffled without dropping: 0..9 in order, last batch short.
  DataLoader plain(ds, 4, false, 0, /*drop_last=*/false);
  EXPECT_EQ(plain.batches_per_epoch(), 3);
  plain.next();
  plain.next();
  Batch last = plain.next();
  ASSERT_EQ(last.y.numel(), 2);
  EXPECT_EQ(last.y.data<int64_t>()[0], 8);
  EXPECT_FALSE(DataLoader(ds, 11, true, 0).check().is_ok());
  EXPECT_FALSE(DataLoader(ds, 0, true, 0).check().is_ok());
}

TEST(TrainData, SyntheticAnyShapeAndClassCount) {
  SyntheticSpec s;
  s.example_shape = {3, 5, 5};
  s.num_classes = 7;
  s.n = 70;
  s.seed = 11;
  auto a = synthetic(s), b = synthetic(s);
  ASSERT_TRUE(a && b) << a.status().message();
  EXPECT_EQ(a->x.shape(), (Shape{70, 3, 5, 5}));
  EXPECT_EQ(0, std::memcmp(a->x.raw(), b->x.raw(), a->x.nbytes()));
  std::vector<int> counts(7);
  for (int64_t y : a->y.span<int64_t>()) ++counts[static_cast<size_t>(y)];
  for (int c : counts) EXPECT_EQ(c, 10);
  // Learnable: examples of one class are closer to each other than to another class's.
  auto dist = [&](int64_t i, int64_t j) {
    double d = 0;
    for (int64_t k = 0; k < 75; ++k) {
      const double t = a->x.data<float>()[i * 75 + k] - a->x.data<float>()[j * 75 + k];
      d += t * t;
    }
    return d;
  };
  std::vector<int64_t> zeros, ones;
  for (int64_t i = 0; i < 70; ++i) (a->y.data<int64_t>()[i] == 0 ? zeros : ones).push_back(i);
  ASSERT_GE(zeros.size(), 2u);
  const int64_t i0 = zeros[0], i1 = zeros[1], j = ones[0];
  EXPECT_LT(dist(i0, i1), dist(i0, j));

  SyntheticSpec ids;
  ids.example_shape = {6};
  ids.dtype = DType::I64;
  ids.num_classes = 2;
  ids.int_range = 30;
  ids.n = 16;
  auto t = synthetic(ids);
  ASSERT_TRUE(t);
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(t->y.data<int64_t>()[i], t->x.data<int64_t>()[i * 6] % 2);
    for (int64_t k = 0; k < 6; ++k) EXPECT_LT(t->x.data<int64_t>()[i * 6 + k], 30);
  }
  s.num_classes = 0;
  EXPECT_FALSE(synthetic(s));
  s.num_classes = 2;
  s.example_shape = {0};
  EXPECT_FALSE(synthetic(s));
}

}  // namespace
}  // namespace ms::nn::train
