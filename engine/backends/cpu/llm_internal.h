// Private to the CPU LLM-era kernels (llm.cpp, llm_state.cpp).
#pragma once

#include <string>

#include "engine/backends/cpu/nn_kernels.h"
#include "engine/ops/llm_internal.h"

namespace ms::cpu::llm {

// LinearAttention and CausalConvWithState (llm_state.cpp).
void register_state_kernels(runtime::KernelRegistry& r);

// Input i as the shape plans see it (left out when not given).
ops::llm::Arg arg_of(runtime::KernelContext& ctx, size_t i);
// Unsupported-dtype error naming the input.
Status bad_dtype(runtime::KernelContext& ctx, const char* name, DType t);
// Whether output i is requested (named) by the node.
bool wants_output(runtime::KernelContext& ctx, size_t i);

}  // namespace ms::cpu::llm
