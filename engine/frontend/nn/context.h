// The global context of the builder API, as a MindSpore user knows it: the execution mode
// (PyNative: op by op; Graph: a module call is traced once per input signature, compiled and
// re-run), the backend eager ops run on, and the module-path scope used to name traced nodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/compiler/amp.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"

namespace ms::nn {

enum class Mode { PyNative, Graph };

struct Context {
  Mode mode = Mode::PyNative;
  std::string device = "cpu";
  int threads = 0;  // 0: the backend's default
  // Mixed precision of module calls (autocast.h): O0 fp32, O1 white list in bf16, O2 all but the
  // black list, O3 all.
  compiler::AmpLevel amp = compiler::AmpLevel::O0;
};

// set_context(Mode::Graph) switches every later top-level module call to traced+compiled runs.
// The context may be read and set from any thread (jobs run on worker threads): get_context()
// returns a copy.
void set_context(Mode mode);
void set_context(const Context& ctx);
Context get_context();
Mode get_mode();
compiler::AmpLevel get_amp();
const char* mode_name(Mode m);

// Parallel training, as MindSpore's set_auto_parallel_context: DataParallel makes every training
// run (train/run.h) data parallel over the world communicator (dist::init, engine/dist/world.h),
// each rank on its slice of the global batch.
enum class ParallelMode { StandAlone, DataParallel };
struct AutoParallelContext {
  ParallelMode parallel_mode = ParallelMode::StandAlone;
  int device_num = 0;          // 0: the communicator's size; else it must match it
  bool gradients_mean = true;  // average the gradients (else sum)
  // Graph mode: how AllReduce nodes are fused (fuse-allreduce): split indices in parameter order,
  // or a size in MiB (25 by default; 0 and no indices: one collective).
  std::vector<int64_t> all_reduce_fusion;
  double all_reduce_fusion_mb = 25;
  // PyNative: gradient buckets (MiB), the first and the rest.
  double first_bucket_mb = 1;
  double bucket_mb = 25;
  // BatchNorm layers take their batch statistics over every rank's slice (SyncBatchNorm).
  bool sync_batchnorm = false;
};
void set_auto_parallel_context(const AutoParallelContext& ctx);
AutoParallelContext get_auto_parallel_context();
void reset_auto_parallel_context();

// The backend eager ops and compiled graphs run on (created on first use, CPU by default; a
// "cuda" request without a device falls back to the CPU). A set_context that changes the device or
// threads makes a new one; the old one is kept until exit, so a reference another thread still
// uses stays valid.
runtime::Backend& backend();

// Module-path scope (thread local): Module::operator() pushes its name while its forward runs.
class ScopeGuard {
 public:
  // `leaf`: the module has no children, so its single op may take the bare path as node name.
  explicit ScopeGuard(const std::string& name, bool leaf = false);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  bool pushed_;
};
// "layer1.0.conv1" (names joined by '.'; "" at top level).
std::string current_path();
// Whether the innermost scope is a leaf module (false at top level).
bool current_scope_is_leaf();
// Replaces the scope (used when a trace starts inside a scope or a jitted call re-enters).
std::vector<const std::string*> swap_scope(std::vector<const std::string*> scope);

}  // namespace ms::nn
