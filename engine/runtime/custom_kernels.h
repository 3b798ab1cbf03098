// Kernels of ops added at run time: operator plugins (engine/plugin) and the builder API's custom
// ops (nn::F::custom). Each backend's find_kernel asks here for an op it lacks (the CUDA backend for
// its own kernel, then the CPU one it runs with host copies), so the executors and the compiler find
// them like built-in kernels.
// Ops are added before the runs that use them (at start-up, when a plugin loads); a lookup during a
// run takes a shared lock.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/kernel.h"

namespace ms::runtime {

using CustomKernelFn = std::function<Status(KernelContext&)>;

struct CustomKernels {
  CustomKernelFn cpu;   // required
  CustomKernelFn cuda;  // optional: without one a CUDA backend runs `cpu` on host copies
};

// The kernel a backend of `device` runs for (domain, op_type), or nullptr: asked by a backend's
// find_kernel after its own kernels.
KernelFn find_custom_kernel(std::string_view op_type, std::string_view domain, DeviceType device);

// Adds (or replaces) the kernels of op (domain, op_type); domain "" or "ai.onnx" is ONNX's.
void set_custom_kernels(const std::string& domain, const std::string& op_type, CustomKernels kernels);
bool has_custom_kernels(const std::string& domain, const std::string& op_type);

}  // namespace ms::runtime
