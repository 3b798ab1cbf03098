// Device-side index helpers shared by the .cu kernels (nvcc only).
#pragma once

#include "engine/backends/cuda/kernels.cuh"

namespace ms::cuda {

// Element offsets, through two sets of strides over `rank` dims, of the row-major flat index i.
__device__ __forceinline__ void flat_offsets(int64_t i, int rank, const int64_t* dims, const int64_t* sa,
                                             const int64_t* sb, int64_t& oa, int64_t& ob) {
  oa = ob = 0;
  for (int k = rank - 1; k >= 0; --k) {
    const int64_t idx = i % dims[k];
    i /= dims[k];
    oa += idx * sa[k];
    ob += idx * sb[k];
  }
}

}  // namespace ms::cuda
