// CPU kernels: Attention (opset 23+), ai.onnx.preview FlexAttention.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_attention_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
