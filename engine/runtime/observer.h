// How profilers watch a run. Executors call these hooks (only when an observer is set) and never
// know who observes. Observers take their own timestamps.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "engine/core/device.h"
#include "engine/ir/graph.h"

namespace ms::runtime {

enum class ExecMode : uint8_t { PyNative, Graph };
inline const char* exec_mode_name(ExecMode m) { return m == ExecMode::PyNative ? "pynative" : "graph"; }

struct RunInfo {
  ExecMode mode;
  Device device;
  int iteration = 0;
};

struct MemoryEvent {
  std::string_view value;  // value name ("" for scratch/workspace)
  ir::NodeId producer;     // node that produced the value (invalid for graph inputs)
  uint64_t offset = 0;     // arena offset (Graph) or pool offset/address (PyNative)
  uint64_t bytes = 0;
  int pool = 0;  // 0 = the arena / default pool
};

class RunObserver {
 public:
  RunObserver() = default;
  RunObserver(const RunObserver&) = delete;
  RunObserver& operator=(const RunObserver&) = delete;
  // Tensors allocated while observed may outlive the observer (a run's outputs); their release
  // reports on_free only while this token says the observer is still alive.
  virtual ~RunObserver() { *alive_ = false; }
  std::shared_ptr<const bool> alive_token() const { return alive_; }
  virtual void on_run_begin(const RunInfo&) {}
  virtual void on_run_end(const RunInfo&) {}
  virtual void on_op_begin(const ir::Node&) {}
  virtual void on_op_end(const ir::Node&) {}
  // An op spans the whole dispatch (inference, output allocation, kernel); the kernel spans only
  // the kernel call. impl: kernel implementation, e.g. "onednn:brg:avx512_core" or "eigen:add"; it
  // may be empty at on_kernel_begin (a kernel picks its implementation as it runs) and is then
  // reported by on_kernel_impl before on_kernel_end.
  virtual void on_kernel_begin(const ir::Node&, std::string_view /*impl*/) {}
  virtual void on_kernel_impl(const ir::Node&, std::string_view /*impl*/) {}
  virtual void on_kernel_end(const ir::Node&) {}
  virtual void on_alloc(const MemoryEvent&) {}
  virtual void on_free(const MemoryEvent&) {}

 private:
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ms::runtime
