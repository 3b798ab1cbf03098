// FftPlan: radix-2, direct and Bluestein 1-d FFTs (see signal_fft.h).
#include "engine/backends/cpu/signal_fft.h"

#include <cmath>
#include <numbers>
#include <utility>

namespace ms::cpu::signal {
namespace {

// Lengths that are not powers of two and at most this long use the direct O(n^2) sum.
constexpr int64_t kDirectMax = 64;

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

cd unit(double angle) { return {std::cos(angle), std::sin(angle)}; }

}  // namespace

FftPlan::FftPlan(int64_t n) : n_(n) {
  const double two_pi = 2.0 * std::numbers::pi;
  if (is_pow2(n)) {
    kind_ = Kind::Radix2;
    twiddle_.resize(static_cast<size_t>(n / 2));
    for (int64_t k = 0; k < n / 2; ++k)
      twiddle_[static_cast<size_t>(k)] = unit(-two_pi * static_cast<double>(k) / static_cast<double>(n));
    return;
  }
  if (n <= kDirectMax) {
    kind_ = Kind::Direct;
    twiddle_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      twiddle_[static_cast<size_t>(k)] = unit(-two_pi * static_cast<double>(k) / static_cast<double>(n));
    work_.resize(static_cast<size_t>(n));
    return;
  }
  kind_ = Kind::Bluestein;
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  chirp_.resize(static_cast<size_t>(n));
  // k^2 mod 2n keeps the angle small (exact) for large k.
  int64_t sq = 0;
  for (int64_t k = 0; k < n; ++k) {
    chirp_[static_cast<size_t>(k)] = unit(-std::numbers::pi * static_cast<double>(sq) / static_cast<double>(n));
    sq = (sq + 2 * k + 1) % (2 * n);
  }
  filter_.assign(static_cast<size_t>(m), cd(0, 0));
  filter_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < n; ++k)
    filter_[static_cast<size_t>(k)] = filter_[static_cast<size_t>(m - k)] = std::conj(chirp_[static_cast<size_t>(k)]);
  sub_ = std::make_unique<FftPlan>(m);
  sub_->forward(filter_.data());
  work_.resize(static_cast<size_t>(m));
}

FftPlan::~FftPlan() = default;

void FftPlan::run(cd* data, bool inverse) {
  if (!inverse) {
    forward(data);
    return;
  }
  // inverse(x) = conj(forward(conj(x))).
  for (int64_t i = 0; i < n_; ++i) data[i] = std::conj(data[i]);
  forward(data);
  for (int64_t i = 0; i < n_; ++i) data[i] = std::conj(data[i]);
}

void FftPlan::forward(cd* data) {
  switch (kind_) {
    case Kind::Radix2: radix2(data); break;
    case Kind::Direct: direct(data); break;
    case Kind::Bluestein: bluestein(data); break;
  }
}

void FftPlan::radix2(cd* a) const {
  const int64_t n = n_;
  for (int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t half = len / 2, step = n / len;
    for (int64_t i = 0; i < n; i += len)
      for (int64_t j = 0; j < half; ++j) {
        const cd u = a[i + j];
        const cd v = a[i + j + half] * twiddle_[static_cast<size_t>(j * step)];
        a[i + j] = u + v;
        a[i + j + half] = u - v;
      }
  }
}

void FftPlan::direct(cd* a) {
  const int64_t n = n_;
  for (int64_t k = 0; k < n; ++k) {
    cd acc(0, 0);
    int64_t idx = 0;  // (j * k) mod n
    for (int64_t j = 0; j < n; ++j) {
      acc += a[j] * twiddle_[static_cast<size_t>(idx)];
      idx += k;
      if (idx >= n) idx -= n;
    }
    work_[static_cast<size_t>(k)] = acc;
  }
  for (int64_t k = 0; k < n; ++k) a[k] = work_[static_cast<size_t>(k)];
}

// X[k] = c[k] * sum_j (x[j] c[j]) conj(c[k - j]) with c[k] = exp(-pi i k^2 / n): a convolution,
// done with power-of-two FFTs of length m >= 2n - 1.
void FftPlan::bluestein(cd* a) {
  const int64_t n = n_, m = sub_->size();
  for (int64_t k = 0; k < n; ++k) work_[static_cast<size_t>(k)] = a[k] * chirp_[static_cast<size_t>(k)];
  for (int64_t k = n; k < m; ++k) work_[static_cast<size_t>(k)] = cd(0, 0);
  sub_->forward(work_.data());
  for (int64_t k = 0; k < m; ++k) work_[static_cast<size_t>(k)] *= filter_[static_cast<size_t>(k)];
  sub_->run(work_.data(), /*inverse=*/true);
  const double scale = 1.0 / static_cast<double>(m);
  for (int64_t k = 0; k < n; ++k) a[k] = work_[static_cast<size_t>(k)] * chirp_[static_cast<size_t>(k)] * scale;
}

}  // namespace ms::cpu::signal
