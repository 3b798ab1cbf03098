#include "engine/backends/cuda/cublaslt_library.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

namespace ms::cuda {
namespace {

struct Opened {
  CublasLt api;
  std::string why;  // empty when every entry point resolved
};

void* open_library(const std::string& soname, std::string& error) {
  if (void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  error = dlerror();
  // The toolkit's lib folder is on the runpath of what links the CUDA runtime, not necessarily on
  // the loader's path from here: look beside the runtime this process loaded.
  Dl_info info{};
  void* runtime_symbol = dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion");
  if (runtime_symbol && dladdr(runtime_symbol, &info) && info.dli_fname) {
    const auto beside = std::filesystem::path(info.dli_fname).parent_path() / soname;
    if (void* h = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <typename Fn> bool resolve(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

Opened load() {
  Opened o;
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::string error;
  void* lib = open_library(soname, error);
  if (!lib) {
    o.why = "cannot open " + soname + " (" + error + ")";
    return o;
  }
  std::string missing;
  CublasLt& a = o.api;
  resolve(lib, "cublasLtCreate", a.create, missing);
  resolve(lib, "cublasLtDestroy", a.destroy, missing);
  resolve(lib, "cublasLtMatmul", a.matmul, missing);
  resolve(lib, "cublasLtMatmulAlgoGetHeuristic", a.algo_get_heuristic, missing);
  resolve(lib, "cublasLtMatmulDescCreate", a.desc_create, missing);
  resolve(lib, "cublasLtMatmulDescSetAttribute", a.desc_set_attribute, missing);
  resolve(lib, "cublasLtMatmulDescDestroy", a.desc_destroy, missing);
  resolve(lib, "cublasLtMatmulPreferenceCreate", a.preference_create, missing);
  resolve(lib, "cublasLtMatmulPreferenceDestroy", a.preference_destroy, missing);
  resolve(lib, "cublasLtMatmulPreferenceSetAttribute", a.preference_set_attribute, missing);
  resolve(lib, "cublasLtMatrixLayoutCreate", a.layout_create, missing);
  resolve(lib, "cublasLtMatrixLayoutSetAttribute", a.layout_set_attribute, missing);
  resolve(lib, "cublasLtMatrixLayoutDestroy", a.layout_destroy, missing);
  if (!missing.empty()) o.why = soname + " lacks " + missing;
  return o;  // the library stays open for the life of the process
}

const Opened& opened() {
  static const Opened o = load();
  return o;
}

}  // namespace

const CublasLt* open_cublaslt(std::string* why) {
  const Opened& o = opened();
  if (!o.why.empty()) {
    if (why) *why = o.why;
    return nullptr;
  }
  return &o.api;
}

const CublasLt& cublaslt_api() {
  const CublasLt* api = open_cublaslt(nullptr);
  if (!api) std::abort();  // a CudaBackend exists only once the library opened
  return *api;
}

}  // namespace ms::cuda
