// NumPy .npy files (version 1.0/2.0, little-endian, C order) for CLI inputs and outputs.
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms {
Expected<Tensor> load_npy(const std::string& path);
Status save_npy(const Tensor& t, const std::string& path);
}  // namespace ms
