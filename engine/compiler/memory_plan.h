// Static memory plan of a compiled graph: one arena, one block per value (or per chain of values an
// op may overwrite in place), offsets from liveness.
#pragma once

#include <utility>
#include <vector>

#include "engine/runtime/executable.h"

namespace ms::compiler {

using runtime::align_up;
using runtime::MemoryPlan;
using runtime::MemorySlot;

// Assigns offsets to `slots` (value, bytes, first/last step filled in); returns the plan.
// `inplace` pairs (a, b): slot b may take over slot a's block (a's last reader is b's producer, which
// may write its output over that input). Taken when sizes match and a's block is not taken already.
// A slot with `within` set lives inside that slot's bytes at `within_offset` (chains of them too):
// one block spans all their lifetimes. A `view` slot is its outer slot's bytes read under another
// shape (a Reshape that copies nothing); the slots it lies in give their blocks to nobody in place.
MemoryPlan plan_memory(std::vector<MemorySlot> slots, const std::vector<std::pair<size_t, size_t>>& inplace = {},
                       uint64_t alignment = 64);

// Ops whose kernel may write output 0 over input `input` (same dtype and shape): elementwise and
// activations, and the residual of fused ops. Returns the candidate input indices.
std::vector<size_t> inplace_inputs(const ir::Node& node);
}  // namespace ms::compiler
