// The CUDA backend's factory, without the CUDA headers (engine/backends/select.cpp calls it).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/runtime/backend.h"

namespace ms::cuda {

// Fails with one line when no usable device exists (no driver, no device, driver too old).
Expected<std::unique_ptr<runtime::Backend>> create_cuda_backend(int threads);
// "cuda_runtime", "cudnn" (the libraries linked) and "cuda_driver" (what the installed driver
// supports, "none" without one); no device needed.
std::map<std::string, std::string> cuda_library_versions();

}  // namespace ms::cuda
