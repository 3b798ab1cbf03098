// Shape plans of the LLM-era ops (RMSNormalization, RotaryEmbedding, TensorScatter, LinearAttention,
// CausalConvWithState), shared by their schemas (engine/ops/llm.cpp) and CPU kernels
// (engine/backends/cpu/llm.cpp) so that inference and execution check the same things. Each plan reads
// the node's attributes and the input dims (-1 = unknown dim) and returns "" when they fit, else a
// one-line error naming the input or attribute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops::llm {

using Dims = std::vector<int64_t>;

// One input as the plans see it: left out (present false), present with an unknown rank (dims null,
// inference only) or present with dims.
struct Arg {
  bool present = false;
  const Dims* dims = nullptr;
};
inline Arg arg(const Dims& d) { return Arg{true, &d}; }

// "[2,?,4]" for messages.
std::string dims_text(const Dims& d);

// RMSNormalization: X and Scale; `axis` normalized into [0, rank).
struct RmsPlan {
  int64_t axis = -1;  // -1 when X's rank is unknown
};
std::string rms_plan(const ir::Node& node, Arg x, Arg scale, RmsPlan& p);

// RotaryEmbedding. 4-D input is (batch, heads, seq, head_size); 3-D is (batch, seq, heads * head_size).
struct RotaryPlan {
  bool four_d = false, interleaved = false;
  int64_t batch = -1, seq = -1, heads = -1, head_size = -1, rot_dim = -1;
};
std::string rotary_plan(const ir::Node& node, Arg x, Arg cos, Arg sin, Arg position_ids, RotaryPlan& p);

// TensorScatter: past_cache, update, write_indices.
struct ScatterPlan {
  int64_t axis = -1;  // normalized, >= 1; -1 when the rank is unknown
  bool circular = false;
};
std::string tensor_scatter_plan(const ir::Node& node, Arg past, Arg update, Arg write_indices, ScatterPlan& p);

// LinearAttention: query, key, value, past_state, decay, beta.
struct LinearAttentionPlan {
  bool gating = false, delta = false;
  int64_t batch = -1, steps = -1, q_heads = 0, kv_heads = 0, dk = -1, dv = -1;
  bool decay_per_key = false;  // decay is (B, T, H_kv * d_k) rather than (B, T, H_kv)
  int64_t beta_heads = 1;      // beta's last dim: H_kv or 1
  float scale = 0;             // resolved (1/sqrt(d_k) for 0) when d_k is known
};
std::string linear_attention_plan(const ir::Node& node, Arg q, Arg k, Arg v, Arg past, Arg decay, Arg beta,
                                  LinearAttentionPlan& p);

// CausalConvWithState: input, weight, bias, past_state.
struct CausalConvPlan {
  bool silu = false;
  int64_t batch = -1, channels = -1, length = -1, kernel = -1;
};
std::string causal_conv_plan(const ir::Node& node, Arg x, Arg w, Arg bias, Arg past, CausalConvPlan& p);

}  // namespace ms::ops::llm
