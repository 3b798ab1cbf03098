// Schemas: Attention (opset 23+), ai.onnx.preview FlexAttention.
#include "engine/ops/families.h"

namespace ms::ops {

void register_attention_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
