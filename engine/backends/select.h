// Backends by name: the one place that knows every backend (the CPU one, and CUDA where built).
// Callers above the backends (frontends, the app, tests) pick one here; the layers below see only
// runtime::Backend.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/runtime/backend.h"

namespace ms::backends {

struct BackendChoice {
  std::unique_ptr<runtime::Backend> backend;
  std::string note;  // non-empty when the request could not be met as asked
};
// "cpu" or "cuda"; "cuda" falls back to "cpu" with `note` explaining why when no device exists.
Expected<BackendChoice> create_backend(const std::string& name, int threads);
std::unique_ptr<runtime::Backend> create_cpu_backend(int threads);
// The CUDA backend; fails with one line when this build has none or no usable device exists.
Expected<std::unique_ptr<runtime::Backend>> create_cuda_backend(int threads);
// The libraries the backends run on and their versions, for the environment a report or session
// records: "onednn"; where built with CUDA, "cuda_runtime" and "cudnn" (linked) and "cuda_driver"
// (the CUDA version the installed driver supports, "none" without one); else "cuda": "not built".
std::map<std::string, std::string> library_versions();

}  // namespace ms::backends
