#include "engine/frontend/train/data.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/frontend/npy.h"

namespace ms::nn::train {

Shape Dataset::example_shape() const {
  if (!x.defined() || x.rank() == 0) return {};
  return Shape(x.shape().begin() + 1, x.shape().end());
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

int64_t Rng::below(int64_t n) { return n <= 0 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

double Rng::normal() {
  const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>(i);
  Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(rng.below(i + 1))]);
  return p;
}

namespace fs = std::filesystem;

std::string find_data_dir() {
  auto has = [](const fs::path& d) {
    std::error_code ec;
    return fs::exists(d / "digits_images.npy", ec);
  };
  if (const char* env = std::getenv("MODESCOPE_DATA_DIR"); env && *env && has(env)) return env;
  std::error_code ec;
  if (fs::path cwd = fs::current_path(ec); !ec && has(cwd / "samples" / "data"))
    return (cwd / "samples" / "data").string();
  // The executable's ancestors: build-*/app/modescope-cli -> <source>/samples/data; an install
  // prefix bin/modescope-cli -> share/modescope/data.
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
      if (has(d / "samples" / "data")) return (d / "samples" / "data").string();
      if (has(d / "share" / "modescope" / "data")) return (d / "share" / "modescope" / "data").string();
      if (d == d.root_path()) break;
    }
  }
  return "";
}

Expected<Dataset> load_digits(const std::string& dir_arg, bool normalize) {
  const std::string dir = dir_arg.empty() ? find_data_dir() : dir_arg;
  if (dir.empty())
    return Status::error(ErrorCode::NotFound,
                         "digits data not found: no samples/data/digits_images.npy under the working directory or "
                         "the executable's folders (set MODESCOPE_DATA_DIR)");
  const std::string ipath = (fs::path(dir) / "digits_images.npy").string();
  const std::string lpath = (fs::path(dir) / "digits_labels.npy").string();
  MS_ASSIGN_OR_RETURN(Tensor img, load_npy(ipath));
  MS_ASSIGN_OR_RETURN(Tensor lab, load_npy(lpath));
  if (img.dtype() != DType::U8 || img.rank() != 3 || img.dim(1) != 8 || img.dim(2) != 8)
    return invalid_argument(ipath + ": expected u8 [N, 8, 8] images, got " + std::string(dtype_name(img.dtype())) +
                            shape_to_string(img.shape()));
  const int64_t n = img.dim(0);
  if (lab.dtype() != DType::I64 || lab.rank() != 1 || lab.dim(0) != n)
    return invalid_argument(lpath + ": expected i64 [" + std::to_string(n) + "] labels, got " +
                            std::string(dtype_name(lab.dtype())) + shape_to_string(lab.shape()));
  const auto* src = img.data<uint8_t>();
  for (int64_t i = 0; i < img.numel(); ++i)
    if (src[i] > 16) return invalid_argument(ipath + ": pixel value " + std::to_string(src[i]) + " out of 0..16");
  for (int64_t v : lab.span<int64_t>())
    if (v < 0 || v > 9) return invalid_argument(lpath + ": label " + std::to_string(v) + " out of 0..9");
  Dataset ds;
  ds.name = "digits";
  ds.num_classes = 10;
  ds.x = Tensor::empty(DType::F32, {n, 1, 8, 8});
  float* dst = ds.x.data<float>();
  const float scale = normalize ? 1.0f / 16.0f : 1.0f;
  for (int64_t i = 0; i < img.numel(); ++i) dst[i] = static_cast<float>(src[i]) * scale;
  ds.y = lab.clone();
  return ds;
}

Batch gather_rows(const Dataset& ds, const std::vector<int64_t>& rows) {
  const auto m = static_cast<int64_t>(rows.size());
  Shape xs = ds.x.shape();
  xs[0] = m;
  Batch b{Tensor::empty(ds.x.dtype(), xs), Tensor::empty(DType::I64, {m})};
  const size_t row_bytes = ds.x.nbytes() / static_cast<size_t>(std::max<int64_t>(ds.size(), 1));
  const auto* src = static_cast<const char*>(ds.x.raw());
  auto* dst = static_cast<char*>(b.x.raw());
  for (int64_t i = 0; i < m; ++i) {
    const auto r = static_cast<size_t>(rows[static_cast<size_t>(i)]);
    std::memcpy(dst + static_cast<size_t>(i) * row_bytes, src + r * row_bytes, row_bytes);
    b.y.data<int64_t>()[i] = ds.y.data<int64_t>()[r];
  }
  return b;
}

Expected<Dataset> subset(const Dataset& ds, const std::vector<int64_t>& idx) {
  for (int64_t i : idx)
    if (i < 0 || i >= ds.size())
      return invalid_argument(ds.name + ": example " + std::to_string(i) + " out of range [0, " +
                              std::to_string(ds.size()) + ")");
  Batch b = gather_rows(ds, idx);
  return Dataset{ds.name, b.x, b.y, ds.num_classes};
}

Expected<Split> split(const Dataset& ds, int64_t test_size, uint64_t seed) {
  if (test_size <= 0 || test_size >= ds.size())
    return invalid_argument(ds.name + ": test size " + std::to_string(test_size) + " must be in [1, " +
                            std::to_string(ds.size() - 1) + "]");
  const std::vector<int64_t> p = permutation(ds.size(), seed);
  const std::vector<int64_t> test(p.begin(), p.begin() + test_size), train(p.begin() + test_size, p.end());
  MS_ASSIGN_OR_RETURN(Dataset tr, subset(ds, train));
  MS_ASSIGN_OR_RETURN(Dataset te, subset(ds, test));
  tr.name = ds.name + "/train";
  te.name = ds.name + "/test";
  return Split{std::move(tr), std::move(te)};
}

Expected<Dataset> synthetic(const SyntheticSpec& s) {
  if (s.num_classes < 1) return invalid_argument("synthetic data: class count must be >= 1");
  if (s.n < 1) return invalid_argument("synthetic data: example count must be >= 1");
  for (int64_t d : s.example_shape)
    if (d < 1)
      return invalid_argument("synthetic data: example shape " + shape_to_string(s.example_shape) + " has a dim < 1");
  const bool ints = is_integer(s.dtype);
  if (!ints && s.dtype != DType::F32) return unsupported("synthetic data: dtype " + std::string(dtype_name(s.dtype)));
  if (ints && s.dtype != DType::I64 && s.dtype != DType::I32)
    return unsupported("synthetic data: dtype " + std::string(dtype_name(s.dtype)));
  if (ints && s.int_range < 1) return invalid_argument("synthetic data: integer range must be >= 1");
  const int64_t per = numel(s.example_shape);
  Shape xs{s.n};
  xs.insert(xs.end(), s.example_shape.begin(), s.example_shape.end());
  Dataset ds;
  ds.name = "synthetic";
  ds.num_classes = s.num_classes;
  ds.x = Tensor::empty(s.dtype, xs);
  ds.y = Tensor::empty(DType::I64, {s.n});
  Rng rng(s.seed ^ 0x5eedda7aULL);
  if (ints) {
    for (int64_t i = 0; i < s.n; ++i) {
      for (int64_t j = 0; j < per; ++j) {
        const int64_t v = rng.below(s.int_range);
        if (s.dtype == DType::I64)
          ds.x.data<int64_t>()[i * per + j] = v;
        else
          ds.x.data<int32_t>()[i * per + j] = static_cast<int32_t>(v);
      }
      const int64_t first = s.dtype == DType::I64 ? ds.x.data<int64_t>()[i * per] : ds.x.data<int32_t>()[i * per];
      ds.y.data<int64_t>()[i] = per > 0 ? first % s.num_classes : 0;
    }
    return ds;
  }
  std::vector<float> proto(static_cast<size_t>(s.num_classes * per));
  for (float& v : proto) v = static_cast<float>(rng.normal());
  // Labels cycle through the classes, then are shuffled by the permutation below: every class
  // appears (n >= classes) in nearly equal numbers.
  const std::vector<int64_t> order = permutation(s.n, s.seed + 1);
  float* x = ds.x.data<float>();
  for (int64_t i = 0; i < s.n; ++i) {
    const int64_t c = order[static_cast<size_t>(i)] % s.num_classes;
    ds.y.data<int64_t>()[i] = c;
    for (int64_t j = 0; j < per; ++j)
      x[i * per + j] = proto[static_cast<size_t>(c * per + j)] + static_cast<float>(s.noise * rng.normal());
  }
  return ds;
}

DataLoader::DataLoader(Dataset ds, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last)
    : ds_(std::move(ds)), batch_(batch_size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {}

Status DataLoader::check() const {
  if (batch_ < 1) return invalid_argument("batch size " + std::to_string(batch_) + " must be >= 1");
  if (ds_.size() == 0) return invalid_argument(ds_.name + ": no examples");
  if (ranks_ > 1 && (batch_ % ranks_ != 0 || !drop_last_))
    return invalid_argument("the global batch of " + std::to_string(batch_) + " does not split over " +
                            std::to_string(ranks_) + " ranks (make it a multiple of the rank count)");
  if (drop_last_ && ds_.size() < batch_)
    return invalid_argument(ds_.name + ": " + std::to_string(ds_.size()) + " examples, fewer than one batch of " +
                            std::to_string(batch_));
  return Status::ok();
}

int64_t DataLoader::batches_per_epoch() const {
  if (batch_ < 1) return 0;
  return drop_last_ ? ds_.size() / batch_ : (ds_.size() + batch_ - 1) / batch_;
}

void DataLoader::start_epoch() {
  if (shuffle_) {
    order_ = permutation(ds_.size(), seed_ * 1000003ULL + static_cast<uint64_t>(epoch_));
  } else {
    order_.resize(static_cast<size_t>(ds_.size()));
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  }
  pos_ = 0;
  ++epoch_;
}

Batch DataLoader::next() {
  const int64_t n = ds_.size();
  if (order_.empty() || pos_ >= n || (drop_last_ && pos_ + batch_ > n)) start_epoch();
  const int64_t end = std::min(pos_ + batch_, n);
  std::vector<int64_t> rows(order_.begin() + pos_, order_.begin() + end);
  pos_ = end;
  if (ranks_ > 1) {
    const auto per = static_cast<int64_t>(rows.size()) / ranks_;
    rows = std::vector<int64_t>(rows.begin() + rank_ * per, rows.begin() + (rank_ + 1) * per);
  }
  return gather_rows(ds_, rows);
}

}  // namespace ms::nn::train
