// Training data: in-memory datasets, a seeded train/test split and a batching loader.
//
// The real dataset is the 8x8 handwritten digits (1,797 images, 10 classes) that samples/data/
// ships as two NumPy files (written once by samples/data/make_digits.py):
//   digits_images.npy  u8  [1797, 8, 8]  pixel values 0..16
//   digits_labels.npy  i64 [1797]        class 0..9
// load_digits() returns the images as f32 [N, 1, 8, 8] divided by 16, the layout image templates
// take. Synthetic data exists for any input shape and class count (learnable: a class decides
// the input, so a training run on it must lower the loss).
//
// Everything here is host-side and deterministic: the same seed gives the same split, the same
// batch order and the same synthetic values on every platform (splitmix64, not std:: engines
// whose distributions differ between standard libraries).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms::nn::train {

struct Dataset {
  std::string name;
  Tensor x;  // [N, ...example shape]
  Tensor y;  // i64 [N] class labels
  int64_t num_classes = 0;
  int64_t size() const { return x.defined() && x.rank() > 0 ? x.dim(0) : 0; }
  // x's shape without the leading N.
  Shape example_shape() const;
};

// Deterministic 64-bit generator (splitmix64) for shuffling and synthetic values.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();          // [0, 1)
  int64_t below(int64_t n);  // [0, n)
  double normal();           // N(0, 1), Box-Muller
 private:
  uint64_t state_;
};

// Seeded Fisher-Yates permutation of 0..n-1.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

// Where the digits files live: $MODESCOPE_DATA_DIR, then samples/data under the working directory
// and under the executable's ancestors (build trees sit inside the source tree), then the install
// location share/modescope/data. Returns "" when none has digits_images.npy.
std::string find_data_dir();

// The digits from `dir` (find_data_dir() when empty). `normalize`: divide by 16 (else 0..16 as f32).
// A missing or malformed file is one error line naming the file.
Expected<Dataset> load_digits(const std::string& dir = "", bool normalize = true);

// Examples `idx` of `ds` (copied), in that order.
Expected<Dataset> subset(const Dataset& ds, const std::vector<int64_t>& idx);

struct Split {
  Dataset train, test;
};
// Seeded shuffle, then the first `test_size` examples are the test set (digits: 1,437 / 360).
Expected<Split> split(const Dataset& ds, int64_t test_size, uint64_t seed);

// Synthetic classification data for inputs of `example_shape` and `dtype`. Floats: each class has a
// random prototype (N(0,1) per element) and an example is its prototype plus N(0, noise^2) noise.
// Integers (token ids): values in [0, int_range), and the label is the first value modulo the class
// count. `n` examples, labels spread over all classes.
struct SyntheticSpec {
  Shape example_shape;
  DType dtype = DType::F32;
  int64_t num_classes = 10;
  int64_t n = 1024;
  double noise = 0.5;
  int64_t int_range = 2;
  uint64_t seed = 0;
};
Expected<Dataset> synthetic(const SyntheticSpec& spec);

struct Batch {
  Tensor x, y;
};

// Batches of a dataset. Training loaders shuffle at every epoch (seed + epoch, so a run is
// reproducible) and drop the last incomplete batch so every batch has the same shape (Graph mode
// compiles once per shape). next() moves into the next epoch by itself.
class DataLoader {
 public:
  DataLoader(Dataset ds, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last = true);
  // An error when the dataset is empty or smaller than one (drop_last) batch.
  Status check() const;
  int64_t batch_size() const { return batch_; }
  int64_t batches_per_epoch() const;
  int64_t epoch() const { return epoch_; }  // epochs started so far (1 after the first next())
  const Dataset& dataset() const { return ds_; }
  // Data parallel: next() returns rank's slice of each global batch (rank r of n takes rows
  // [r*B/n, (r+1)*B/n) of the batch of B); check() then asks B to split evenly.
  void shard(int rank, int ranks) {
    rank_ = rank;
    ranks_ = ranks;
  }
  Batch next();

 private:
  void start_epoch();
  Dataset ds_;
  int64_t batch_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
  std::vector<int64_t> order_;
  int64_t pos_ = 0;
  int64_t epoch_ = 0;
  int rank_ = 0, ranks_ = 1;
};

// Examples `rows` of ds, copied into fresh contiguous tensors (rows must be in range).
Batch gather_rows(const Dataset& ds, const std::vector<int64_t>& rows);

}  // namespace ms::nn::train
