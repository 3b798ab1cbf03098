// The CUDA backend's factory, without the CUDA headers (engine/backends/select.cpp calls it).
#pragma once

#include <memory>

#include "engine/core/status.h"
#include "engine/runtime/backend.h"

namespace ms::cuda {

// Fails with one line when no usable device exists (no driver, no device, driver too old).
Expected<std::unique_ptr<runtime::Backend>> create_cuda_backend(int threads);

}  // namespace ms::cuda
