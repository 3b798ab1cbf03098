// One-dimensional complex FFT of any length for the signal kernels (DFT, STFT): iterative radix-2
// for powers of two, a direct sum over a twiddle table for short other lengths, Bluestein's chirp-z
// (through a power-of-two FFT) for long other lengths. Double precision throughout.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

namespace ms::cpu::signal {

using cd = std::complex<double>;

class FftPlan {
 public:
  explicit FftPlan(int64_t n);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  int64_t size() const { return n_; }
  // In place: data[k] = sum_j data[j] * exp(-+2 pi i j k / n) (sign + when inverse; not normalized).
  void run(cd* data, bool inverse);

 private:
  void forward(cd* data);
  void radix2(cd* data) const;
  void direct(cd* data);
  void bluestein(cd* data);

  int64_t n_;
  enum class Kind { Radix2, Direct, Bluestein } kind_;
  std::vector<cd> twiddle_;  // exp(-2 pi i k / n): k < n/2 (radix-2) or k < n (direct)
  std::vector<cd> work_;
  // Bluestein: chirp exp(-pi i k^2 / n), FFT of the conjugate chirp filter, the power-of-two plan.
  std::vector<cd> chirp_, filter_;
  std::unique_ptr<FftPlan> sub_;
};

}  // namespace ms::cpu::signal
