// Constants given back once every kernel that reads them keeps its own packed copy: what
// GraphExecutor::release_constants_once_packed arms. The program's constants are grouped by the
// buffer that holds their bytes (a weight's views share one); a group is released in the run where
// its last reader ran, when every read of it that run was by a kernel that said it keeps a packed
// copy (KernelContext::keeps_packed_copy). One reader without a copy keeps the group for good.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/runtime/program.h"

namespace ms::runtime {

class PackedRelease {
 public:
  // Groups the constants of `p` (the program of `g`, a compiled graph on the CPU). A graph with
  // subgraphs gets no groups: what their steps read is not counted here.
  PackedRelease(const Program& p, const ir::Graph& g);
  PackedRelease(const PackedRelease&) = delete;
  PackedRelease& operator=(const PackedRelease&) = delete;

  // Whether a group may still be released (the run then calls begin_run and after_step).
  bool pending() const { return open_.load(std::memory_order_relaxed) > 0; }
  // Every open group's reads are ahead again.
  void begin_run();
  // Step `si` ran; bit i of `packed` is set where its kernel keeps a packed copy of input i. Steps
  // on different threads may call it at once.
  void after_step(size_t si, uint32_t packed);
  uint64_t released_bytes() const { return released_.load(std::memory_order_relaxed); }

 private:
  struct Group {
    std::shared_ptr<Buffer> buffer;
    int reads = 0;  // (step, input) reads a run
    std::atomic<int> left{0};
    std::atomic<bool> keep{false};
    std::atomic<bool> closed{false};  // released or kept
  };
  void close(Group& g, bool released);

  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::vector<Group*>> step_groups_;  // per step, per input (null: not a constant)
  std::atomic<int> open_{0};
  std::atomic<uint64_t> released_{0};
};

}  // namespace ms::runtime
