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
