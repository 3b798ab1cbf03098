// oneDNN's packed sgemm (src/cpu/gemm/gemm_pack.hpp, used by its RNNs): exported by libdnnl but
// declared in no public header, column-major like BLAS. Only where the build links it
// (MODESCOPE_HAVE_SGEMM_PACK, engine/CMakeLists.txt). Called inside an OpenMP parallel region,
// packing and computing both run on the calling thread alone, so a packing made there suits a
// compute made there.
#pragma once

#if MODESCOPE_HAVE_SGEMM_PACK
#include <dnnl.h>

namespace dnnl::impl::cpu {
dnnl_status_t sgemm_pack_get_size(const char* identifier, const char* transa, const char* transb, const dnnl_dim_t* M,
                                  const dnnl_dim_t* N, const dnnl_dim_t* K, const dnnl_dim_t* lda,
                                  const dnnl_dim_t* ldb, size_t* size, bool* pack);
dnnl_status_t sgemm_pack(const char* identifier, const char* transa, const char* transb, const dnnl_dim_t* M,
                         const dnnl_dim_t* N, const dnnl_dim_t* K, const dnnl_dim_t* lda, const dnnl_dim_t* ldb,
                         const float* src, float* dst);
dnnl_status_t sgemm_compute(const char* transa, const char* transb, const dnnl_dim_t* M, const dnnl_dim_t* N,
                            const dnnl_dim_t* K, const float* A, const dnnl_dim_t* lda, const float* B,
                            const dnnl_dim_t* ldb, const float* beta, float* C, const dnnl_dim_t* ldc);
}  // namespace dnnl::impl::cpu
#endif

// The bf16 one (src/cpu/gemm/gemm_pack.hpp too): bf16 operands, f32 products, where the build links it
// (MODESCOPE_HAVE_BF16_GEMM_PACK). bfloat16_t as oneDNN declares it (its 16 bits; the name is what
// the symbols carry).
#if MODESCOPE_HAVE_BF16_GEMM_PACK
#include <dnnl.h>

#include <cstdint>

namespace dnnl::impl {
struct bfloat16_t {
  uint16_t raw_bits_;
};
}  // namespace dnnl::impl

namespace dnnl::impl::cpu {
dnnl_status_t gemm_bf16bf16f32_pack_get_size(const char* identifier, const char* transa, const char* transb,
                                             const dnnl_dim_t* M, const dnnl_dim_t* N, const dnnl_dim_t* K,
                                             const dnnl_dim_t* lda, const dnnl_dim_t* ldb, size_t* size, bool* pack);
dnnl_status_t gemm_bf16bf16f32_pack(const char* identifier, const char* transa, const char* transb, const dnnl_dim_t* M,
                                    const dnnl_dim_t* N, const dnnl_dim_t* K, const dnnl_dim_t* lda,
                                    const dnnl_dim_t* ldb, const bfloat16_t* src, bfloat16_t* dst);
dnnl_status_t gemm_bf16bf16f32_compute(const char* transa, const char* transb, const dnnl_dim_t* M, const dnnl_dim_t* N,
                                       const dnnl_dim_t* K, const bfloat16_t* A, const dnnl_dim_t* lda,
                                       const bfloat16_t* B, const dnnl_dim_t* ldb, const float* beta, float* C,
                                       const dnnl_dim_t* ldc);
}  // namespace dnnl::impl::cpu
#endif
