// Loops built for AVX-512 and AVX2 as well as the baseline, the CPU picking one at load time (GCC's
// target_clones): the build targets plain x86-64, whose 4-wide SSE loops leave the bf16 conversions
// compute-bound. Off under the sanitizers (their run-time checks and
// the clones' load-time resolvers do not mix) and on other compilers and CPUs.
#pragma once

#include <algorithm>
#include <atomic>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define MS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MS_SIMD_CLONES
#endif

// Kernels written with explicit vectors pick their width at run time instead: one template body,
// instantiated in a function per instruction set (MS_TARGET_AVX2, MS_TARGET_AVX512) with the vector
// type of that set's registers, and a switch on simd_width(). A 16-float vector in an AVX2 clone is a
// pair of registers that GCC 12 keeps on the stack: the matrix-vector loops ran at 9 GB/s there
// against 49 GB/s with 8-float vectors. Unlike the clones this works under the sanitizers and clang.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MS_SIMD_DISPATCH 1
#define MS_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define MS_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#else
#define MS_SIMD_DISPATCH 0
#define MS_TARGET_AVX2
#define MS_TARGET_AVX512
#endif

namespace ms::cpu {
// 16 floats (GCC/Clang vector extension) read in place: loads through it need no alignment. Pass it
// by value only inside the clones (the ABI differs between them).
typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));

// One AVX-512, AVX2 or SSE register of floats, for the dispatched kernels: values (accumulators,
// arrays of them) keep their natural alignment, memory is read and written through MS_LOADV and
// MS_STOREV, which need none. Pass them by value only inside one instruction set's functions (the
// ABI differs between them): hence macros, not functions.
typedef float vec16 __attribute__((vector_size(64)));
typedef float vec8 __attribute__((vector_size(32)));
typedef float vec4 __attribute__((vector_size(16)));
#define MS_LOADV(V, p)                            \
  __extension__({                                 \
    V ms_loadv_;                                  \
    __builtin_memcpy(&ms_loadv_, (p), sizeof(V)); \
    ms_loadv_;                                    \
  })
#define MS_STOREV(p, v)                                     \
  do {                                                      \
    const auto ms_storev_ = (v);                            \
    __builtin_memcpy((p), &ms_storev_, sizeof(ms_storev_)); \
  } while (0)

template <class V> constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(float));

// The widest float vector this CPU runs natively: 16 (AVX-512 F/VL/BW/DQ), 8 (AVX2 with FMA) or 4.
inline int cpu_simd_width() {
#if MS_SIMD_DISPATCH
  static const int width = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq"))
      return 16;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
    return 4;
  }();
  return width;
#else
  return 4;
#endif
}

// A cap on the width the dispatched kernels use (16 by default: none), so that one machine's tests
// run every path its CPU can.
inline std::atomic<int>& simd_width_cap() {
  static std::atomic<int> cap{16};
  return cap;
}

// The vector width the dispatched kernels take: the CPU's, within the cap.
inline int simd_width() { return std::min(cpu_simd_width(), simd_width_cap().load(std::memory_order_relaxed)); }
}  // namespace ms::cpu
