// Loops built for AVX-512 and AVX2 as well as the baseline, the CPU picking one at load time (GCC's
// target_clones): the build targets plain x86-64, whose 4-wide SSE loops leave the bf16 conversions
// and the matrix-vector products compute-bound. Off under the sanitizers (their run-time checks and
// the clones' load-time resolvers do not mix) and on other compilers and CPUs.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define MS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MS_SIMD_CLONES
#endif

namespace ms::cpu {
// 16 floats (GCC/Clang vector extension): one AVX-512 register, two AVX2 or four SSE ones depending
// on the clone; loads through it need no alignment. Pass it by value only inside the clones (the
// ABI differs between them).
typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));
}  // namespace ms::cpu
