// Ops whose output is one contiguous piece of their input's bytes: the memory planner places such an
// output inside its input (a view) and the kernel, finding it there, copies nothing.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/ir/graph.h"

namespace ms::compiler {

// The byte offset in input 0 at which node `n`'s output 0 lies when the output is a contiguous
// piece of it, from the static types and constant operands alone: Reshape, Flatten, Squeeze and
// Unsqueeze (offset 0); Slice with constant operands whose leading output dims are 1 and trailing
// dims whole (steps of 1 where more than one element is taken); Gather of one constant index with
// nothing but 1s before its axis; Pad whose pads are all 0; Transpose that moves only dims of size
// 1. nullopt for anything else.
std::optional<uint64_t> contiguous_view_offset(const ir::Graph& g, const ir::Node& n);

// True when Pad node `n`'s pads are all 0 (a constant operand, or the attribute before opset 11).
bool pads_are_zero(const ir::Graph& g, const ir::Node& n);

}  // namespace ms::compiler
