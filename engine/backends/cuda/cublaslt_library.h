// cuBLASLt, opened when the first CUDA backend is made rather than when the process starts. Loading
// libcublasLt maps and relocates about 150 MB of resident memory and runs its initializers, which
// every CPU-only launch of the CLI, the app and the Python module used to pay: the whole process was
// 227 MB before it read a model, 75 MB without it.
#pragma once

#include <cublasLt.h>

#include <string>

namespace ms::cuda {

// The entry points the backend calls, resolved from the library.
struct CublasLt {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set_attribute = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preference_set_attribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set_attribute = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
};

// Opens libcublasLt.so.<major of the headers> (by the loader's search path, then beside the CUDA
// runtime this process uses) once per process. Null, with `why` naming the library and the loader's
// message, when it cannot be opened or lacks an entry point.
const CublasLt* open_cublaslt(std::string* why);

// The opened library: only for code that runs on a CudaBackend, whose creation opened it.
const CublasLt& cublaslt_api();

}  // namespace ms::cuda
