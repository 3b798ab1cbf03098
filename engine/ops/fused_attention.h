// FusedAttention(Q, K, V, mask?) {q_layout, k_layout, v_layout, y_layout, scale, is_causal}: in the
// custom domain "ai.modescope", made by the fuse-attention pass from MatMul -> scale -> (+ mask) ->
// Softmax -> MatMul. Y = softmax(scale * Q Kᵀ + mask) V per batch and head, computed in one kernel
// that the ONNX Attention op shares (backends/cpu/attention_fast.h).
//
// Each operand is read where it lies: its layout names its axes in memory order, one letter per
// dim, from b (batch; absent: one), h (head), s (sequence) and d (head dim); K may also be stored
// transposed, "…ds". So a Transpose or a head-splitting Reshape/Transpose around an exported
// attention costs nothing: "shd" is a [S, H, D] tensor, "bhsd" the 4-D form, "hds" a Kᵀ.
// `mask` is additive, broadcast to [B, H, Sq, Sk] (numpy rules, its last dim Sk).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ms::ops {

// The position of each of b, h, s, d in a layout (-1: absent, b only).
struct AttentionAxes {
  int b = -1, h = -1, s = -1, d = -1;
  // The dim of axis letter c of a tensor with these dims (1 for an absent b).
  int64_t dim(char c, const std::vector<int64_t>& dims) const {
    const int p = c == 'b' ? b : c == 'h' ? h : c == 's' ? s : d;
    return p < 0 ? 1 : dims[static_cast<size_t>(p)];
  }
};

// Parses a layout of `rank` letters (h, s and d once each, b at most once); false when invalid.
bool parse_attention_layout(const std::string& layout, size_t rank, AttentionAxes& out);

class Registry;
void register_fused_attention_op(Registry& r);  // called by register_fused_ops

}  // namespace ms::ops
