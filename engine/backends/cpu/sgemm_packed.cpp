#include "engine/backends/cpu/sgemm_packed.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "engine/backends/cpu/onednn_sgemm_pack.h"
#include "engine/backends/cpu/weights_registry.h"
#include "engine/core/host_memory.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::nn {

#if MODESCOPE_HAVE_SGEMM_PACK
namespace {

struct PackedWeights {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  std::shared_ptr<float> data;  // held by the runs computing from it, so the lock covers packing only
};

// In column-major terms Y^T [n, m] = op(W)^T [n, k] op(A)^T [k, m]: W is sgemm's A operand (the one
// packed), A its B operand.
struct SgemmShape {
  dnnl_dim_t M, N, K, lda, ldb, ldc;
  char transa[2], transb[2];
};

SgemmShape sgemm_shape(bool ta, bool tw, int64_t m, int64_t n, int64_t k) {
  SgemmShape s{n, m, k, tw ? k : n, ta ? m : k, n, {tw ? 'T' : 'N', 0}, {ta ? 'T' : 'N', 0}};
  return s;
}

}  // namespace
#endif

namespace {
std::atomic<int> g_preferred{-1};  // -1: the CPU's default
}  // namespace

bool packed_sgemm_preferred() {
#if MODESCOPE_HAVE_SGEMM_PACK
  if (const int forced = g_preferred.load(std::memory_order_relaxed); forced >= 0) return forced != 0;
  static const bool below_avx512 = [] {
    constexpr unsigned kAvx512Core = dnnl_cpu_isa_avx512_core;  // ISA values nest as bit sets
    return (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & kAvx512Core) != kAvx512Core;
  }();
  return below_avx512;
#else
  return false;
#endif
}

void set_packed_sgemm_preferred(std::optional<bool> preferred) {
  g_preferred.store(preferred ? (*preferred ? 1 : 0) : -1, std::memory_order_relaxed);
}

bool packed_sgemm_applies(const Tensor& w) {
#if MODESCOPE_HAVE_SGEMM_PACK
  return packed_sgemm_preferred() && w.dtype() == DType::F32 && w.rank() == 2 && w.buffer() && w.buffer()->frozen();
#else
  (void)w;
  return false;
#endif
}

Status packed_sgemm(runtime::KernelContext& ctx, const float* a, bool ta, const Tensor& w, bool tw, int64_t m,
                    int64_t n, int64_t k, bool accumulate, float* y) {
#if MODESCOPE_HAVE_SGEMM_PACK
  if (!packed_sgemm_applies(w) || m <= 0 || n <= 0 || k <= 0) return ctx.unsupported_case("weights not frozen f32");
  if (m < kPackedSgemmMinRows) return ctx.unsupported_case("too few rows for the packed sgemm");
  const SgemmShape s = sgemm_shape(ta, tw, m, n, k);
  const std::string key = "sgemm-pack|" + std::to_string(reinterpret_cast<uintptr_t>(w.buffer().get())) + "|" +
                          std::to_string(w.byte_offset()) + "|" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                          std::to_string(k) + "|" + s.transa + s.transb;
  auto entry = WeightsRegistry<PackedWeights>::instance().entry(key);
  std::unique_lock<std::mutex> lock(entry->mu);
  if (!entry->data || entry->source.lock() != w.buffer()) {
    if (w.buffer()->released()) return ctx.fail("its weights were released once packed and must be packed again");
    entry->data.reset();
    size_t bytes = 0;
    bool repacked = false;  // false where the weights' own layout suits the kernel (kept as they are)
    if (dnnl::impl::cpu::sgemm_pack_get_size("A", s.transa, s.transb, &s.M, &s.N, &s.K, &s.lda, &s.ldb, &bytes,
                                             &repacked) != dnnl_success)
      return ctx.unsupported_case("sgemm packing unavailable");
    entry->data.reset(static_cast<float*>(host_allocate(bytes)), &host_free);
    if (!entry->data) return Status::error(ErrorCode::OutOfMemory, "packed weights: out of memory");
    if (dnnl::impl::cpu::sgemm_pack("A", s.transa, s.transb, &s.M, &s.N, &s.K, &s.lda, &s.ldb, w.data<float>(),
                                    entry->data.get()) != dnnl_success) {
      entry->data.reset();
      return ctx.unsupported_case("sgemm packing failed");
    }
    entry->source = w.buffer();
  }
  const std::shared_ptr<float> packed = entry->data;
  lock.unlock();
  const float beta = accumulate ? 1.f : 0.f;
  if (dnnl::impl::cpu::sgemm_compute("P", s.transb, &s.M, &s.N, &s.K, packed.get(), &s.lda, a, &s.ldb, &beta, y,
                                     &s.ldc) != dnnl_success)
    return ctx.unsupported_case("packed sgemm failed");
  ctx.keeps_packed_copy_of(w);
  ctx.set_impl("onednn:sgemm-packed");
  return Status::ok();
#else
  (void)a, (void)ta, (void)w, (void)tw, (void)m, (void)n, (void)k, (void)accumulate, (void)y;
  return ctx.unsupported_case("packed sgemm not built in");
#endif
}

}  // namespace ms::cpu::nn
