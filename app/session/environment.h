// Where a run happened, as every report and session records it: the CPU (model, the vector and
// matrix extensions the kernels care about, hardware threads), the backend with its library
// versions (oneDNN; CUDA and cuDNN on a CUDA backend), the threads used, the newest ONNX opset the
// importer reads, the compiler, build type and source revision, and the OS. Qt-free; the app adds
// Qt's version.
#pragma once

#include <map>
#include <string>

#include "engine/runtime/backend.h"

namespace ms::session {

// Keys: cpu, cpu_flags, hardware_threads, os, compiler, build_type, revision, onnx_opset, and with
// a backend: backend, threads.
std::map<std::string, std::string> environment_record(const runtime::Backend* backend = nullptr);

}  // namespace ms::session
