#include "engine/ops/families.h"
#include "engine/ops/grad_ops.h"

namespace ms::ops {
void register_all_ops(Registry& r) {
  register_elementwise_ops(r);
  register_nn_ops(r);
  register_tensor_ops(r);
  register_reduce_ops(r);
  register_control_ops(r);
  register_modescope_ops(r);
  register_collective_ops(r);
  register_fused_ops(r);
  register_attention_ops(r);
  register_llm_ops(r);
  register_recurrent_ops(r);
  register_quant_ops(r);
  register_vision_ops(r);
  register_signal_ops(r);
  register_text_ops(r);
  register_preview_ops(r);
  register_bitwise_ops(r);
  register_contrib_ops(r);
  register_sequence_ops(r);
  register_string_ops(r);
  autodiff::register_grad_ops(r);
}
}  // namespace ms::ops
