// NumPy .npy files (version 1.0/2.0, little-endian, C order) for CLI inputs and outputs.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms {
Expected<Tensor> load_npy(const std::string& path);
// The same from the file's bytes; `path` names the source in errors.
Expected<Tensor> load_npy_bytes(std::string_view bytes, const std::string& path);
Status save_npy(const Tensor& t, const std::string& path);
}  // namespace ms
