// Attention over f32 (or bf16) operands read in place (any strides), shared by the compiler's FusedAttention
// and the ONNX Attention op: scores for a block of query rows at a time (all batches and heads)
// through one batched oneDNN matmul with the scale as its output scale, the mask, causal masking
// and the softmax in one vectorized pass over each row, then the probabilities times V through a
// second batched matmul written straight into Y's layout. The scores of at most kScoreBlockBytes
// are held at once, so a long sequence never materializes its whole score matrix.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/core/status.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu {

// An operand's base and element strides along batch, head, sequence and head dim.
struct AttentionOperand {
  const void* data = nullptr;
  int64_t sb = 0, sh = 0, ss = 0, sd = 1;
};

struct AttentionProblem {
  int64_t batch = 1, heads = 1, q_len = 0, kv_len = 0, head_size = 0, v_head_size = 0;
  // Q, K, V and Y are f32, or bf16 (a bf16 Graph's): the products then run in bf16 with f32 scores,
  // the softmax in f32, and the probabilities rounded to bf16 for the product with V.
  DType dtype = DType::F32;
  AttentionOperand q, k, v;
  void* y = nullptr;
  int64_t yb = 0, yh = 0, ys = 0, yd = 1;
  float scale = 1;
  bool causal = false;  // key j > query i is masked (no past: the query and key blocks are aligned)
  // Additive mask rows of kv_len contiguous floats at mask + b*mb + h*mh + i*mi (null: none).
  const float* mask = nullptr;
  int64_t mb = 0, mh = 0, mi = 0;
};

inline constexpr int64_t kScoreBlockBytes = int64_t{4} << 20;

// Y = softmax(scale · Q Kᵀ + mask) V. A row whose keys are all masked gives zeros (ONNX Attention).
Status attention_f32(runtime::KernelContext& ctx, const AttentionProblem& p);

// The ONNX Attention op through attention_f32 when its case allows (f32 Q, K, V and mask, no past or
// present, no softcap, window, nonpad lengths or qk output, one head group per key head); nullopt
// otherwise (the reference kernel runs).
std::optional<Status> attention_onnx_fast(runtime::KernelContext& ctx);

// FusedAttention (ai.modescope), registered with the fused kernels.
void register_fused_attention_kernel(runtime::KernelRegistry& r);

}  // namespace ms::cpu
