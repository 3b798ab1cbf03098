#include "engine/backends/select.h"

#include "engine/backends/cpu/cpu_backend.h"
#ifdef MODESCOPE_HAVE_CUDA
#include "engine/backends/cuda/cuda_create.h"
#endif

namespace ms::backends {

std::map<std::string, std::string> library_versions() {
#ifdef MODESCOPE_HAVE_CUDA
  std::map<std::string, std::string> v = cuda::cuda_library_versions();
#else
  std::map<std::string, std::string> v = {{"cuda", "not built"}};
#endif
  v["onednn"] = cpu::onednn_version();
  return v;
}

std::unique_ptr<runtime::Backend> create_cpu_backend(int threads) { return std::make_unique<cpu::CpuBackend>(threads); }

Expected<std::unique_ptr<runtime::Backend>> create_cuda_backend([[maybe_unused]] int threads) {
#ifdef MODESCOPE_HAVE_CUDA
  return cuda::create_cuda_backend(threads);
#else
  return unsupported("CUDA backend not available in this build (built without the CUDA toolkit)");
#endif
}

Expected<BackendChoice> create_backend(const std::string& name, int threads) {
  if (name == "cpu") return BackendChoice{create_cpu_backend(threads), ""};
  if (name == "cuda") {
#ifdef MODESCOPE_HAVE_CUDA
    auto cuda = create_cuda_backend(threads);
    if (cuda) return BackendChoice{std::move(*cuda), ""};
    return BackendChoice{create_cpu_backend(threads),
                         "CUDA unavailable: " + cuda.status().message() + "; using the CPU"};
#else
    return BackendChoice{create_cpu_backend(threads),
                         "CUDA backend not available in this build (built without the CUDA toolkit); using the CPU"};
#endif
  }
  return invalid_argument("unknown device '" + name + "' (expected cpu or cuda)");
}

}  // namespace ms::backends
