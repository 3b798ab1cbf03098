// Error checks of the CUDA backend: every CUDA, cuBLAS and cuDNN call goes through one of these, and
// a failure becomes a Status naming the call, the library's message, file and line.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "engine/core/status.h"

namespace ms::cuda {

Status cuda_error(cudaError_t e, const char* call, const char* file, int line);
Status cublas_error(cublasStatus_t e, const char* call, const char* file, int line);
Status cudnn_error(cudnnStatus_t e, const char* call, const char* file, int line);

}  // namespace ms::cuda

#define MS_CUDA_CHECK(call)                                                                    \
  do {                                                                                         \
    const cudaError_t ms_e_ = (call);                                                          \
    if (ms_e_ != cudaSuccess) return ::ms::cuda::cuda_error(ms_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define MS_CUBLAS_CHECK(call)                                                                              \
  do {                                                                                                     \
    const cublasStatus_t ms_e_ = (call);                                                                   \
    if (ms_e_ != CUBLAS_STATUS_SUCCESS) return ::ms::cuda::cublas_error(ms_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define MS_CUDNN_CHECK(call)                                                                             \
  do {                                                                                                   \
    const cudnnStatus_t ms_e_ = (call);                                                                  \
    if (ms_e_ != CUDNN_STATUS_SUCCESS) return ::ms::cuda::cudnn_error(ms_e_, #call, __FILE__, __LINE__); \
  } while (0)
