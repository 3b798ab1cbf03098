// One registration function per op family (one file or a few per family under ops/).
#pragma once

#include "engine/ops/schema.h"

namespace ms::ops {
void register_elementwise_ops(Registry& r);  // ops/elementwise.cpp: unary, binary, variadic, logic, Cast, Where
void register_nn_ops(Registry& r);           // ops/nn.cpp: Conv, pools, norms, Gemm, MatMul, Softmax, Dropout
void register_tensor_ops(Registry& r);       // ops/tensor.cpp: Reshape, Transpose, Concat, Slice, Gather, ...
void register_reduce_ops(Registry& r);       // ops/reduce.cpp: Reduce*, ArgMax/ArgMin, CumSum, ...
void register_control_ops(Registry& r);      // ops/control.cpp: If, Loop, Constant, Identity
void register_modescope_ops(Registry& r);    // ops/print.cpp: Print (domain ai.modescope)
void register_collective_ops(Registry& r);   // ops/collective.cpp: AllReduce (domain ai.modescope)
void register_fused_ops(Registry& r);        // ops/fused.cpp: the graph compiler's fused ops (ai.modescope)
void register_attention_ops(Registry& r);    // ops/attention.cpp: Attention (opset 23+), ai.onnx.preview FlexAttention
void register_llm_ops(Registry& r);          // ops/llm.cpp: RMSNormalization, RotaryEmbedding, SwiGLU, TensorScatter,
                                             // LinearAttention, CausalConvWithState
void register_recurrent_ops(Registry& r);    // ops/recurrent.cpp: RNN, LSTM, GRU, Scan
void register_quant_ops(Registry& r);        // ops/quant.cpp: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
                                             // QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger
void register_vision_ops(Registry& r);   // ops/vision.cpp: GridSample, AffineGrid, NonMaxSuppression, RoiAlign, Col2Im,
                                         // CenterCropPad, MaxUnpool, DeformConv
void register_signal_ops(Registry& r);   // ops/signal.cpp: DFT, STFT, window functions, MelWeightMatrix
void register_text_ops(Registry& r);     // ops/text.cpp: TfIdfVectorizer
void register_preview_ops(Registry& r);  // ops/preview.cpp: ai.onnx.preview.training optimizers, numeric ai.onnx.ml
void register_sequence_ops(Registry& r);  // ops/sequence.cpp: Sequence*, SplitToSequence, ConcatFromSequence,
                                          // Optional, OptionalHasElement, OptionalGetElement
void register_string_ops(Registry& r);    // ops/string.cpp: StringConcat, StringSplit, StringNormalizer,
                                          // RegexFullMatch
void register_contrib_ops(Registry& r);   // ops/contrib.cpp: ONNX Runtime's MatMulNBits, Skip*LayerNormalization,
                                          // SimplifiedLayerNormalization, FastGelu, BiasGelu, QuickGelu, Gelu
void register_contrib_attention_ops(Registry& r);  // ops/contrib_attention.cpp: ONNX Runtime's Attention,
                                                   // MultiHeadAttention, RotaryEmbedding, EmbedLayerNormalization
void register_bitwise_ops(Registry& r);            // ops/bitwise.cpp: BitwiseAnd/Or/Xor/Not, BitCast
}  // namespace ms::ops
