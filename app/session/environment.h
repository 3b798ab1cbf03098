// Where a run happened, as every report and session records it: the CPU (model, the vector and
// matrix extensions the kernels care about, hardware threads), the libraries' versions (oneDNN,
// CUDA and cuDNN; with or without a backend), the backend and the threads used, the newest ONNX opset the
// importer reads, the compiler, build type and source revision, and the OS. Qt-free; the app adds
// Qt's version.
#pragma once

#include <map>
#include <string>

#include "engine/runtime/backend.h"

namespace ms::session {

// Keys: cpu, cpu_flags, hardware_threads, os, compiler, build_type, revision, onnx_opset, the
// libraries' versions (backends::library_versions: onednn, and cuda_runtime, cuda_driver, cudnn
// where built with CUDA, else cuda "not built"), and with a backend: backend, threads.
std::map<std::string, std::string> environment_record(const runtime::Backend* backend = nullptr);

}  // namespace ms::session
