// The backend seam (after ggml-backend): supports-op, compute via kernels, synchronize, events,
// memory info. CPU and CUDA backends implement it; executors only see this.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/allocator.h"
#include "engine/runtime/kernel.h"

namespace ms::runtime {

struct MemoryInfo {
  size_t total = 0;
  size_t free = 0;
};

using StreamId = int;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  virtual Device device() const = 0;
  // Description for reports ("oneDNN 2.6 avx512_core_amx, 2 threads").
  virtual std::string description() const { return name(); }

  // Whether the device does bf16 arithmetic natively, so a bf16 Graph (--precision bf16) runs faster
  // than f32 instead of emulating it (CPU: AVX-512-BF16 or AMX, as oneDNN dispatches them).
  virtual bool native_bf16() const { return false; }
  // Whether bf16 matrix products run on matrix units (a CPU's AMX, a GPU's tensor cores), many times
  // f32's rate, rather than on the vector units at about twice it (AVX-512-BF16).
  virtual bool bf16_matrix_units() const { return false; }

  // The backend that folds constants at compile time, whose results become host initializers: this
  // one on a CPU, the host's CPU backend on a device (nullptr: no folding).
  virtual Backend* folding_backend() { return device().is_cpu() ? this : nullptr; }

  // Whether the fuse-elementwise pass's chains (FusedElementwise) run natively here, so the pass
  // makes them: the CPU's loops; a device backend's kernel where it says so.
  virtual bool runs_fused_elementwise() const { return device().is_cpu(); }

  // Caching allocator used by eager execution (and for scratch).
  virtual Allocator& allocator() = 0;
  // Where an eager value of this dtype lives. The CUDA backend keeps integer and bool values (shapes,
  // indices, masks) in host memory, where shape inference and CPU kernels read them.
  virtual Allocator& allocator_for(DType) { return allocator(); }
  // Raw allocator for arenas (no caching).
  virtual Allocator& arena_allocator() = 0;

  virtual KernelFn find_kernel(const ir::Node& node) const = 0;
  // True for a kernel that runs the op on the host with copies (a device's CPU fallback).
  virtual bool is_fallback(KernelFn) const { return false; }
  bool supports(const ir::Node& node) const { return find_kernel(node) != nullptr; }

  virtual void set_threads(int n) = 0;
  virtual int threads() const = 0;

  // Streams and events (CPU: one stream, no-ops).
  virtual int num_streams() const { return 1; }
  virtual void synchronize() {}
  virtual MemoryInfo memory_info() const { return {}; }

  // Host <-> device copies (CPU: memcpy).
  virtual Status copy_to_host(const Tensor& src, Tensor& dst) = 0;
  virtual Status copy_from_host(const Tensor& src, Tensor& dst) = 0;
};

// Replaces every tensor of `ts` that lives on the backend's device by a host copy. Executors return
// host tensors, so callers never read device memory.
Status to_host(Backend& backend, std::vector<Tensor>& ts);

}  // namespace ms::runtime
