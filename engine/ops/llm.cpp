// Schemas: RMSNormalization, RotaryEmbedding, SwiGLU, TensorScatter, LinearAttention, CausalConvWithState.
#include "engine/ops/families.h"

namespace ms::ops {

void register_llm_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
